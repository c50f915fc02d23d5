"""mistral-common as a reference engine: its own decoder (the detokenize endpoint of its server) on the ids of the
rendered Mistral cases, in its own virtualenv (~18 s, 270 MB on a cold cache), through the worker protocol.

Inputs: texts rendered by the catalog models' own templates (``engine_common.rendered_cases``) and canitoolcall
0.1.1's Mistral fixtures, which carry the ids the models generated. The assertions pin what mistral-common does
today, right or wrong; an upgrade that changes a behaviour fails here on purpose.
"""

from __future__ import annotations

import json

import pytest
from engine_common import engine_python, plain_message, rendered_cases, rendered_msg, rendered_results, stream_chars

from harness.engines.client import WorkerParser
from harness.parse.registry import expand_names
from parsers.reference.mistral_common import FORMATS, UNSUPPORTED

# A cold cache builds the environment inside the first test: allow for it.
pytestmark = pytest.mark.timeout(900)

PARIS, ROME = {"city": "Paris", "days": 3}, {"city": "Rome", "days": 1}
#: Mistral Small 3.2 writes no content on a turn with calls (no ``content_call``); Devstral and Ministral 3 write it
#: before the calls and nothing after them, so "Done." follows "Let me check." (rendered_cases).
REFUSED_ARGS = {
    "error": "WorkerParserError: MistralCommonError: mistral-common /v1/detokenize/ answers 400: Control token [ARGS] "
    "found more than once in the list of tokens."
}
RENDERED = {
    "mistral-small-3.2": {
        "one_call": rendered_msg(calls=[PARIS]),
        "two_calls": rendered_msg(calls=[PARIS, ROME]),
        "marker_in_string": REFUSED_ARGS,
    },
    **{
        model: {
            "one_call": rendered_msg(calls=[PARIS]),
            "two_calls": rendered_msg(calls=[PARIS, ROME]),
            "content_call": rendered_msg("Let me check.Done.", [PARIS]),
            "marker_in_string": REFUSED_ARGS,
        }
        for model in ("devstral-small", "ministral-3-reasoning")
    },
}


@pytest.fixture(scope="module")
def mc_for():
    """``mc_for(format)``: the mistral-common worker parser of a format (one worker per format, stopped afterwards)."""
    from harness.engines import environments as engines
    from harness.parse.registry import get_any_parser

    engines.install("mistral-common")
    started = {}

    def get(fmt):
        if fmt not in started:
            started[fmt] = get_any_parser("mistral-common", fmt)
        return started[fmt]

    yield get
    for parser in started.values():
        parser.close()


def test_each_mistral_format_has_a_worker_parser_and_the_others_a_reason(mc_for):
    for fmt in FORMATS:
        parser = mc_for(fmt)
        assert isinstance(parser, WorkerParser) and parser.incremental
        assert (parser.name, parser.formats) == (f"mistral-common==1.13.1:{fmt}", (fmt,))
        assert "mistral-common" in expand_names(["all"], fmt)
    assert "gemma4" in UNSUPPORTED and "mistral-common" not in expand_names(["all"], "gemma4")


@pytest.mark.parametrize("model", sorted(RENDERED))
def test_rendered_cases_one_shot_and_streamed(mc_for, model):
    """Every mode agrees; marker text inside a value is encoded as the control token, which the decoder refuses."""
    from harness.template.catalog import get_model

    parser = mc_for(get_model(model).format)
    cases = rendered_cases(model, marker="[ARGS]")
    got = rendered_results(parser, cases)
    assert set(got) == set(RENDERED[model])
    for name, by_mode in got.items():
        assert by_mode == dict.fromkeys(by_mode, RENDERED[model][name]), name


def test_the_call_id_is_read_by_v11_and_glued_to_the_name_by_v13(mc_for):
    text = '[TOOL_CALLS]get_weather[CALL_ID]call00000[ARGS]{"city": "Paris", "days": 3}'
    assert rendered_results(mc_for("mistral"), {"c": _case(text, "mistral")}, ("oneshot",))["c"]["oneshot"] == (
        rendered_msg(calls=[PARIS])
    )
    got = rendered_results(mc_for("mistral_reasoning"), {"c": _case(text, "mistral_reasoning")}, ("oneshot",))
    assert got["c"]["oneshot"] == rendered_msg(calls=[PARIS], name="get_weathercall00000")


def test_think_chunks_anywhere_in_the_content_are_reasoning(mc_for):
    parser = mc_for("mistral_reasoning")
    text = '[THINK]Paris.[/THINK]See [THINK]more[/THINK] ok[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}'
    assert rendered_results(parser, {"c": _case(text, "mistral_reasoning")})["c"] == dict.fromkeys(
        ("oneshot", "whole", "char", "pieces"), rendered_msg("See  ok", [PARIS], reasoning="Paris.more")
    )


def test_streaming_sends_text_as_it_grows_and_a_call_when_the_next_one_opens(mc_for):
    parser = mc_for("mistral_reasoning")
    first = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}'
    text = "[THINK]Hm.[/THINK]Let me check." + first + '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome", "days": 1}'
    message, seen, session = stream_chars(parser, text, prefix="")
    assert plain_message(message) == rendered_msg("Let me check.", [PARIS, ROME], reasoning="Hm.")
    sent = [(at, d.reasoning, d.content, [c.name for c in d.tool_calls]) for at, d in seen]
    opened = len("[THINK]Hm.[/THINK]Let me check." + first + "[TOOL_CALLS]")
    assert sent[0] == (len("[THINK]H"), "H", None, [])  # a character at a time, as it arrives
    assert (opened, None, None, ["get_weather"]) in sent  # the first call, when the second [TOOL_CALLS] is whole
    assert sent[-1] == (len(text) + 1, None, None, ["get_weather"])  # the last one at the end
    assert session.diagnostics == []


def test_the_tokenizer_gives_the_ids_the_models_generated():
    """canitoolcall's fixtures of Mistral Small 3.2, Devstral Small 2507, Ministral 3, Magistral Small 2509, 2506 carry
    the ids the model generated: the adapter's encoding of their text gives those ids, but for the one fixture whose
    marker text the model wrote as plain tokens, and decoding the fixture's own ids gives what parsing the text does.
    Mistral 7B v0.3's fixtures (a SentencePiece v3 vocabulary) are left out."""
    from harness.corpus.peers.canitoolcall import load_suite

    suite = load_suite()
    fixtures = [
        [fmt, case.id, case.text, case.extra["token_ids"]]
        for fmt in FORMATS
        for case in suite.cases[fmt]
        if "Mistral-7B" not in case.extra["tokenizer"]["repo"]
    ]
    script = (
        "import json, sys\n"
        "from parsers.reference.mistral_common import _Decoder, MistralCommonError\n"
        "decoders, out = {}, {}\n"
        "def outcome(d, ids):\n"
        "    try:\n"
        "        return d.decode(ids).to_json()\n"
        "    except MistralCommonError as exc:\n"
        "        return str(exc)\n"
        "for fmt, case_id, text, ids in json.load(sys.stdin):\n"
        "    d = decoders.get(fmt) or decoders.setdefault(fmt, _Decoder(fmt))\n"
        "    mine = d.encode(text)\n"
        "    out[case_id] = [mine == ids, outcome(d, mine) == outcome(d, ids)]\n"
        "print(json.dumps(out))\n"
    )
    got = json.loads(engine_python("mistral-common", script, stdin=json.dumps(fixtures)))
    assert len(got) == 37  # 23 mistral (Magistral Small 2506's <think> text among them), 14 mistral_reasoning
    different = {case_id for case_id, (same_ids, _) in got.items() if not same_ids}
    assert different == {"canitoolcall/mistral/v13think-marker-in-arguments"}
    assert {case_id for case_id, (_, same_answer) in got.items() if not same_answer} == different


def _case(text: str, fmt: str):
    from harness.core.cases import Case
    from harness.core.messages import Message

    return Case(id="t", format=fmt, text=text, expected=Message())
