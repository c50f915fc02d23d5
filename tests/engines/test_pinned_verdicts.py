"""Pinned engine verdicts: each reference parser's per-case results on the curated and observed cases of the models in
``tests/engines/pins/<model>/`` (compact baselines, one file per parser), rerun and compared by the strict gate.

A difference is an engine, template, corpus or judge change. Review it (the failure prints the gate's case-by-case
list), then save the pins again with ``make pin-engines`` and read the diff (one line per case and mode).
"""

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from harness.jobs.gate import run_gate
from harness.parse.registry import expand_names
from harness.template.catalog import get_model

# A cold cache builds the engines inside the first test (minutes): allow for it.
pytestmark = pytest.mark.timeout(1800)

PINS = Path(__file__).resolve().parent / "pins"
FILES = sorted(PINS.glob("*/*.json"))
REFRESH = "if the change is intended: `make pin-engines` saves the pins again (review `git diff tests/engines/pins`)"


def test_every_pinned_model_pins_every_reference_of_its_format():
    assert FILES, f"no pins in {PINS}: `make pin-engines PIN_MODELS=gemma-4-e2b` saves the first"
    for folder in sorted(p for p in PINS.iterdir() if p.is_dir()):
        pinned = {json.loads(f.read_text(encoding="utf-8"))["parser"]["spec"] for f in folder.glob("*.json")}
        wanted = set(expand_names(["references"], get_model(folder.name).format))
        assert pinned == wanted, f"{folder.name}: pinned {sorted(pinned)}, references now {sorted(wanted)}; {REFRESH}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_pinned_verdicts_hold(path, tmp_path):
    out = io.StringIO()
    (result,) = run_gate(
        baseline_file=path,
        runs_root=tmp_path,
        console=Console(file=out, width=240),
        minimize=False,
        strict=True,
        timeout_s=60,
    )
    assert result.compared > 0
    assert not result.failed, f"{out.getvalue()[-8000:]}\n{REFRESH}"
