"""Bounded rendering (:mod:`harness.template.bounded`): hostile templates rendered through transformers' real renderer
in the render worker. A render stuck inside one C-level expression, nested loops, an output flood and an allocation
past the memory cap each end as one :class:`TemplateLimitError` naming the template, within the limit; a failing
template is a :class:`TemplateRenderError`; the worker restarts after a kill, survives forks, and an orphaned worker
stops on its own CPU limit. :func:`check_writes_calls` tells an empty or constant template (an error) from one that
renders the conversation but no call (a note)."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.core.errors import TemplateLimitError, TemplateRenderError
from harness.formats import get_format
from harness.template import bounded
from harness.template.render import check_writes_calls, render_messages
from harness.template.sources import load_template, template_from_text

ROOT = Path(__file__).resolve().parents[3]
USER = [{"role": "user", "content": "hello"}]


def hostile(text: str):
    return template_from_text(
        text, model="qwen2.5-7b", format="hermes", source="local_dir", location="/x", file="t.jinja"
    )


@pytest.fixture
def limits():
    """Render limits of 1 s and 10,000 characters for the test, the defaults again after it."""
    saved = bounded.render_limits()
    yield bounded.set_render_limits(timeout_s=1.0, max_chars=10_000)
    bounded.set_render_limits(saved.timeout_s, saved.max_chars)


def test_defaults_are_stated_and_bad_limits_refused():
    assert bounded.render_limits() == bounded.RenderLimits(10.0, 1_000_000)
    for bad in ({"timeout_s": 0}, {"timeout_s": float("inf")}, {"timeout_s": float("nan")}, {"max_chars": 0}):
        with pytest.raises(ValueError):
            bounded.set_render_limits(**bad)
    assert bounded.render_limits() == bounded.RenderLimits(10.0, 1_000_000)


@pytest.mark.parametrize(
    "text, message",
    [
        ("{{ 1/0 }}", "t.jinja, line 1 (local_dir /x) failed to render: ZeroDivisionError: division by zero"),
        (
            "{% for i in range(10**9) %}{% endfor %}",
            "t.jinja, line 1 (local_dir /x) failed to render: OverflowError: Range too big.",
        ),
        (
            "{% if messages %}",
            "t.jinja, line 1 (local_dir /x) failed to render: Jinja error: Unexpected end of template",
        ),
        ("{{ messages[0].nope.deeper }}", "failed to render: Jinja error: 'dict object' has no attribute 'nope'"),
    ],
)
def test_a_failing_template_is_one_error_naming_it(limits, text, message):
    with pytest.raises(TemplateRenderError) as info:
        render_messages(hostile(text), USER, None)
    assert not isinstance(info.value, TemplateLimitError)
    assert message in str(info.value) and str(info.value).startswith("chat template t.jinja")
    assert render_messages(hostile("{{ messages[0].content }}"), USER, None) == "hello"  # the worker lives on


@pytest.mark.parametrize(
    "text, kind",
    [
        ("{{ (7 ** (10 ** 7)) % 10 }}", "time limit: no result within 1 s (--render-timeout)"),  # one C-level op
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "time limit"),
        ("{% for i in range(20000) %}x{% endfor %}", "output limit: it wrote 20,000 characters, more than 10,000"),
        pytest.param(
            "{{ 'x' * 10**10 }}",
            "out of memory: more than 1024 MiB",
            marks=pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux only"),
        ),
    ],
)
def test_a_template_past_a_bound_is_stopped_within_it(limits, text, kind):
    render_messages(hostile("warm"), USER, None)  # the worker is up: its start-up is not the render's time
    started = time.monotonic()
    with pytest.raises(TemplateLimitError) as info:
        render_messages(hostile(text), USER, None)
    assert time.monotonic() - started < 3.0
    assert str(info.value).startswith("chat template t.jinja (local_dir /x) failed to render: " + kind)
    assert render_messages(hostile("{{ messages[0].content }}!"), USER, None) == "hello!"  # a new worker


def test_a_real_template_renders_as_transformers_does_in_process():
    from transformers.utils.chat_template_utils import render_jinja_template

    template = load_template("qwen2.5-7b")
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "f", "arguments": {"a": "\ud800"}}}],
    }
    for messages, prompt in ((USER, True), ([*USER, turn], False)):
        (direct,), _ = render_jinja_template(
            conversations=[messages],
            tools=tools,
            chat_template=template.text,
            add_generation_prompt=prompt,
            bos_token="<bos>",
            eos_token="<eos>",
        )
        assert render_messages(template, messages, tools, prompt) == direct


def _child_render(queue) -> None:
    queue.put(render_messages(hostile("{{ messages[0].content }} from {{ who }}"), USER, None, who="child"))


def test_a_forked_child_renders_with_its_own_worker():
    template = hostile("{{ messages[0].content }} from {{ who }}")
    assert render_messages(template, USER, None, who="parent") == "hello from parent"
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_render, args=(queue,))
    child.start()
    assert queue.get(timeout=60) == "hello from child"
    child.join(60)
    assert child.exitcode == 0
    assert render_messages(template, USER, None, who="parent") == "hello from parent"  # the parent's is untouched


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_an_orphaned_worker_stops_on_its_own_cpu_limit():
    """The parent dies in the middle of an endless render: the worker's RLIMIT_CPU (the render limit + 1 s) ends it."""
    script = textwrap.dedent(
        """
        import os, sys
        from harness.template import bounded
        bounded.render_bounded("warm", bounded.RenderLimits(timeout_s=1.0), messages=[])
        worker = bounded._worker
        print(worker.proc.pid, flush=True)
        payload = bounded.pickle.dumps((99, "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                                        "{% endfor %}", {"messages": []}, 1.0, 100), protocol=5)
        worker.proc.stdin.write(bounded._HEADER.pack(len(payload)) + payload)
        os._exit(0)  # no atexit: the worker is left rendering
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", script]
    out = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, timeout=120)
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _running(pid):
        time.sleep(0.2)
    assert not _running(pid), f"the orphaned render worker {pid} still runs"


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_an_empty_or_constant_template_is_an_error_and_a_content_only_one_a_note():
    fmt = get_format("hermes")
    for text, shown in (("", "''"), ("hello", "'hello'"), ('<tool_call>{"name": "x"}</tool_call>', "'<tool_call>")):
        with pytest.raises(TemplateRenderError) as info:
            check_writes_calls(hostile(text), fmt)
        assert "t.jinja (local_dir /x) writes no tool call" in str(info.value)
        assert f"it renders {shown}" in str(info.value) and "an empty or constant template" in str(info.value)
    note = check_writes_calls(hostile("{% for m in messages %}{{ m.content }}{% endfor %}"), fmt)
    assert note and "writes no tool call" in note and "hold no case with a call" in note
    assert check_writes_calls(load_template("qwen2.5-7b"), fmt) is None
