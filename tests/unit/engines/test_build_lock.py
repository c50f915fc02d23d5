"""One build at a time (harness/engines/environments.py build_in_place): parallel test workers share the cache, so a
second process waiting for the lock finds the first one's build and does not build again."""

import multiprocessing
import time
from pathlib import Path

from harness.engines.environments import build_in_place


def _build_once(target: str, counter: str) -> bool:
    target_path = Path(target)

    def build(folder: Path) -> None:
        with open(counter, "a", encoding="utf-8") as out:
            out.write("built\n")
        time.sleep(0.5)  # long enough for the other process to wait on the lock
        (folder / "done").write_text("ok", encoding="utf-8")

    return build_in_place(target_path, build, done=lambda: (target_path / "done").is_file())


def test_a_second_process_waits_and_reuses_the_build(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLCALL_HARNESS_CACHE", str(tmp_path / "cache"))  # the lock lives there; children inherit it
    target, counter = tmp_path / "env", tmp_path / "count.txt"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        built = pool.starmap(_build_once, [(str(target), str(counter))] * 2)
    assert sorted(built) == [False, True]
    assert counter.read_text(encoding="utf-8") == "built\n"
    assert (target / "done").read_text(encoding="utf-8") == "ok"
    assert not target.with_name("env.building").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "count.txt", "env"]  # no lock beside the build
    assert [p.name for p in (tmp_path / "cache" / "locks").iterdir()] == [f"{tmp_path.name}-env.lock"]


def test_done_before_the_build_skips_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLCALL_HARNESS_CACHE", str(tmp_path / "cache"))
    calls = []
    assert build_in_place(tmp_path / "env", calls.append, done=lambda: True) is False
    assert calls == [] and not (tmp_path / "env").exists()
