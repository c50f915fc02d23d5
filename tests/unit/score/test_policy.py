"""Judging policies (harness/score/policy.py): the --policy text, what each malformed, whitespace and reasoning choice
lets pass, a peer's expected_error, and that a policy travels with runs and baselines and the gate refuses another."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.core.cases import Case
from harness.core.messages import Message, ToolCall
from harness.formats import get_format
from harness.jobs.baseline import RunSettings, save_command
from harness.jobs.check import check_file
from harness.jobs.gate import PolicyMismatchError, check_same_policy
from harness.score.policy import DEFAULT_POLICY, Policy, PolicyError, parse_policy
from harness.score.runner import evaluate_case
from harness.score.verdicts import delta_leak, score

FMT = get_format("gemma4")
S = '<|"|>'
CALL = f"<|tool_call>call:get_weather{{city:{S}Paris{S}}}<tool_call|>"
PARIS = ToolCall("get_weather", {"city": "Paris"})
LOSSLESS, NO_MARKUP = Policy(malformed="lossless"), Policy(malformed="no-markup")


def drift(text: str, expected: Message, raw: str, outcomes: list[str], recoverable: bool) -> Case:
    info = {"mutator": "m", "outcomes": outcomes, "raw": raw, "tolerated": [], "recoverable": recoverable}
    return Case(id="d", format="gemma4", text=text, expected=expected, kind="drift", extra={"drift": info})


def judged(case: Case, got: Message, policy: Policy = DEFAULT_POLICY) -> tuple[str | None, str, str | None]:
    result = score(case, got, FMT, policy=policy)
    return result.outcome, result.verdict, result.error_type


# --- the --policy text --------------------------------------------------------------------------------------


def test_policy_text_round_trips_and_defaults():
    assert parse_policy("") == DEFAULT_POLICY == Policy("either", "soft-v1", "deepseek")
    chosen = parse_policy(" malformed = no-markup , whitespace=strict")
    assert chosen == Policy("no-markup", "strict") and parse_policy(chosen.describe()) == chosen
    assert Policy.from_json(chosen.to_json()) == chosen and Policy.from_json(None) == DEFAULT_POLICY


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "malformd=either",
            "policy key 'malformd' (did you mean 'malformed'?); known: malformed, whitespace, reasoning",
        ),
        ("malformed=no_markup", "policy malformed='no_markup' (did you mean 'no-markup'?); known: either, lossless"),
        ("whitespace", "policy 'whitespace': expected KEY=VALUE"),
        ("whitespace=strict,whitespace=ignore", "policy key 'whitespace' given twice"),
        ("reasoning=auto", "policy reasoning='auto' (use deepseek (llama.cpp's auto is deepseek"),
    ],
)
def test_bad_policy_text_names_the_key_or_value(text, message):
    with pytest.raises(PolicyError) as caught:
        parse_policy(text)
    assert str(caught.value).startswith(message)


def test_a_bad_policy_flag_is_one_error_line(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["eval", "--policy", "malformed=strict"])
    assert caught.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    known = "known: either, lossless, no-markup"
    assert err[-1] == f"toolcall-harness eval: error: argument --policy: policy malformed='strict'; {known}"
    with pytest.raises(PolicyError, match="unknown key"):
        Policy.from_json({"thinking": "on"})
    assert Policy.from_json({"malformed": "either", "whitespace": "soft-v1"}) == DEFAULT_POLICY  # before reasoning


# --- malformed: what a parser may do with damage it does not recover -----------------------------------------


def test_a_truncated_call_may_be_surfaced_or_scrubbed_as_the_policy_says():
    fragment = f"<|tool_call>call:get_weather{{city:{S}Ro"
    case = drift(CALL + fragment, Message(tool_calls=[PARIS]), fragment, ["declined"], recoverable=False)
    surfaced = Message(content=fragment, tool_calls=[PARIS])
    scrubbed = Message(tool_calls=[PARIS])
    assert judged(case, surfaced) == ("surfaced", "pass", None)
    assert judged(case, surfaced, LOSSLESS) == ("surfaced", "pass", None)
    assert judged(case, surfaced, NO_MARKUP) == ("surfaced", "fail", "marker_leak")
    assert judged(case, scrubbed) == ("scrubbed", "pass", None)
    assert judged(case, scrubbed, NO_MARKUP) == ("scrubbed", "pass", None)
    assert judged(case, scrubbed, LOSSLESS) == ("scrubbed", "fail", "content_lost")
    completed = Message(tool_calls=[PARIS, ToolCall("get_weather", {"city": "Ro"})])
    assert judged(case, completed) == ("wrong", "fail", "wrong_call_count")  # a call the model never finished


def test_a_partial_opener_after_calls_is_never_content_under_either_or_no_markup():
    case = drift(CALL + "<|tool_c", Message(tool_calls=[PARIS]), "<|tool_c", ["declined"], recoverable=False)
    kept = Message(content="<|tool_c", tool_calls=[PARIS])
    assert judged(case, kept) == ("surfaced", "fail", "marker_leak")
    assert judged(case, kept, NO_MARKUP) == ("surfaced", "fail", "marker_leak")
    assert judged(case, kept, LOSSLESS) == ("surfaced", "pass", None)
    assert judged(case, Message(tool_calls=[PARIS])) == ("scrubbed", "pass", None)


def test_a_recoverable_call_declined_keeps_the_prose():
    broken = CALL.replace("{", "(").replace("}<", ")<")
    case = drift(
        "Checking." + broken, Message("Checking.", tool_calls=[PARIS]), broken, ["recovered", "declined"], True
    )
    assert judged(case, Message("Checking.", tool_calls=[PARIS])) == ("recovered", "pass", None)
    assert judged(case, Message("Checking." + broken)) == ("surfaced", "pass", None)
    assert judged(case, Message("Checking.")) == ("scrubbed", "pass", None)
    assert judged(case, Message("Checking.<|tool_call>call:")) == ("leaked", "fail", "marker_leak")  # half scrubbed
    assert judged(case, Message()) == ("dropped", "fail", "content_lost")
    only_recovery = drift(case.text, case.expected, broken, ["recovered"], True)
    assert judged(only_recovery, Message("Checking.")) == ("scrubbed", "fail", "content_lost")


# --- a peer's expected_error -------------------------------------------------------------------------------------


def peer_error(text: str, accept: list[str]) -> Case:
    return Case(
        id="p",
        format="gemma4",
        text=text,
        expected=Message(),
        kind="drift",
        extra={"expected_error": {"accept": accept, "reason": "cut off"}},
    )


def test_expected_error_follows_the_peers_accept_list_narrowed_by_the_policy():
    text = f"<|tool_call>call:get_weather{{city:{S}Pa"
    case = peer_error(text, ["no_tool_calls", "content_passthrough"])
    assert judged(case, Message(content=text)) == ("surfaced", "pass", None)
    assert judged(case, Message()) == ("scrubbed", "pass", None)
    assert judged(case, Message(content=text), NO_MARKUP) == ("surfaced", "fail", "marker_leak")
    assert judged(case, Message(), LOSSLESS) == ("scrubbed", "fail", "content_lost")
    assert judged(case, Message(tool_calls=[ToolCall("get_weather", {"city": "Pa"})]))[:2] == ("wrong", "fail")
    passthrough_only = peer_error(text, ["content_passthrough"])
    assert judged(passthrough_only, Message()) == ("scrubbed", "fail", "content_lost")


def test_a_peer_content_passthrough_wants_the_text_itself():
    only = peer_error(
        'Sure.\n<|tool_call>call:get_weather{location:{city:<|"|>Par\n', ["content_passthrough", "exception"]
    )
    text = only.text
    assert score(only, Message(content=text), FMT).verdict == "pass"
    assert score(only, Message(content=text.strip()), FMT).verdict == "soft_pass"  # canitoolcall: soft_pass
    assert score(only, Message(content=text.strip()), FMT, policy=Policy(whitespace="ignore")).verdict == "pass"
    assert score(only, Message(content=text.strip()), FMT, policy=Policy(whitespace="strict")).verdict == "fail"
    for altered in ("Note: " + text, " ".join(text.split())):  # more text, or the text reflowed
        result = score(only, Message(content=altered), FMT)
        assert (result.verdict, result.error_type, result.outcome) == ("fail", "wrong_content", "surfaced")
    # with no_tool_calls accepted too, any answer without calls passes, as canitoolcall has it
    lenient = peer_error(text, ["no_tool_calls", "content_passthrough"])
    assert score(lenient, Message(content="Note: " + text), FMT).verdict == "pass"
    assert score(lenient, Message(content=text.strip()), FMT).verdict == "pass"


class Raises:
    name, library, version, formats = "raises", "test", "0", ("gemma4",)

    def parse(self, text, tools=None, prefix=""):
        raise ValueError("cannot parse a cut-off call")


def test_an_exception_passes_only_where_the_peer_accepts_one():
    accepting = peer_error("<|tool_call>call:f{", ["no_tool_calls", "exception"])
    (record,) = evaluate_case(accepting, Raises(), FMT, ["oneshot"], seed=0)
    assert (record.verdict, record.outcome) == ("pass", "error")
    refusing = peer_error("<|tool_call>call:f{", ["no_tool_calls"])
    (record,) = evaluate_case(refusing, Raises(), FMT, ["oneshot"], seed=0)
    assert (record.verdict, record.error_type, record.outcome) == ("error", "exception", "error")


# --- whitespace ----------------------------------------------------------------------------------------------------


def test_whitespace_around_content_is_a_soft_pass_strict_fail_or_ignored():
    case = Case(id="w", format="gemma4", text="Hi.\n" + CALL, expected=Message("Hi.", tool_calls=[PARIS]))
    padded = Message("Hi.\n", tool_calls=[PARIS])
    assert judged(case, padded) == (None, "soft_pass", None)
    assert judged(case, padded, Policy(whitespace="ignore")) == (None, "pass", None)
    assert judged(case, padded, Policy(whitespace="strict")) == (None, "fail", "wrong_content")
    assert judged(case, Message("Hi.", tool_calls=[PARIS]), Policy(whitespace="strict")) == (None, "pass", None)
    assert score(case, padded, FMT).passed


# --- reasoning: extracted, left in content, or either ----------------------------------------------------------

QWEN = get_format("qwen3_coder")
THOUGHT = "<|channel>thought\nI'm\nthinking<channel|>"


def test_inline_reasoning_is_read_from_the_block_or_after_a_prefilled_opener():
    assert FMT.thought_markers == ("<|channel>thought\n", "<channel|>")
    assert FMT.inline_reasoning(" " + THOUGHT + "\nHi.") == ("I'm\nthinking", "Hi.")
    assert QWEN.inline_reasoning("I'm\nthinking\n</think>\n\nHi.", "<think>\n") == ("I'm\nthinking", "Hi.")
    assert QWEN.inline_reasoning("I'm thinking</think>Hi.") is None  # no opener, none pre-filled
    assert QWEN.inline_reasoning("<think>unclosed") is None and FMT.inline_reasoning("Hi. " + THOUGHT) is None
    assert get_format("llama3_json").thought_markers == ()


def test_reasoning_policy_deepseek_none_any():
    case = Case(id="r", format="gemma4", text=THOUGHT + "Hi." + CALL, expected=Message("Hi.", "I'm\nthinking", [PARIS]))
    extracted = Message("Hi.", "I'm\nthinking", [PARIS])
    inline = Message(THOUGHT + "Hi.", None, [PARIS])
    assert judged(case, extracted) == (None, "pass", None)
    assert judged(case, inline) == (None, "fail", "marker_leak")
    none, either = Policy(reasoning="none"), Policy(reasoning="any")
    assert judged(case, inline, none) == (None, "pass", None) == judged(case, inline, either)
    assert judged(case, extracted, either) == (None, "pass", None)
    result = score(case, extracted, FMT, policy=none)
    assert (result.verdict, result.error_type) == ("fail", "wrong_reasoning") and "reasoning=none" in result.detail
    # the thought markers of a streamed delta are content under none/any, a leak under deepseek
    assert delta_leak(THOUGHT, FMT) and not delta_leak(THOUGHT, FMT, none)
    assert delta_leak(CALL, FMT, either)


def test_an_expectation_written_with_reasoning_in_content_is_read_out_of_it():
    """A llama.cpp case run with reasoning_format=none expects the block in content; every policy judges the
    parse against the same reasoning and content."""
    expected = Message("<think>\nI'm\nthinking\n</think>\n\nHi.")
    case = Case(
        id="n",
        format="qwen3_coder",
        text="I'm\nthinking\n</think>\n\nHi.",
        expected=expected,
        prefix="<think>\n",
        extra={"reasoning_format": "none"},
    )
    extracted, inline = Message("Hi.", "I'm\nthinking"), Message("I'm\nthinking\n</think>\n\nHi.")
    assert score(case, extracted, QWEN).verdict == "pass"
    assert score(case, inline, QWEN, policy=Policy(reasoning="none")).verdict == "pass"
    assert score(case, inline, QWEN).error_type == "marker_leak"


# --- runs and baselines record it; the gate refuses another -----------------------------------------------------


def test_baselines_record_the_policy_and_the_gate_refuses_another():
    settings = RunSettings(policy=NO_MARKUP)
    data = settings.to_json()
    assert data["policy"] == {"malformed": "no-markup", "whitespace": "soft-v1", "reasoning": "deepseek"}
    assert RunSettings.from_json(data) == settings
    assert RunSettings.from_json({k: v for k, v in data.items() if k != "policy"}).policy == DEFAULT_POLICY
    assert save_command({**data, "model": "gemma-4-e2b"}, "own").endswith(
        "--policy malformed=no-markup,whitespace=soft-v1,reasoning=deepseek"
    )
    check_same_policy(NO_MARKUP, None, Path("b.json"))  # not asked: the baseline's policy
    check_same_policy(NO_MARKUP, NO_MARKUP, Path("b.json"))
    with pytest.raises(PolicyMismatchError, match="b.json: the baseline was judged under --policy malformed=no-markup"):
        check_same_policy(NO_MARKUP, DEFAULT_POLICY, Path("b.json"))


def test_check_judges_a_case_file_under_the_policy_given():
    seed_004 = Path(__file__).resolve().parents[3] / "corpora" / "seeds" / "004-sglang-gemma4-markers.jsonl"
    either = check_file(seed_004, "own", fmt="gemma4")
    no_markup = check_file(seed_004, "own", fmt="gemma4", policy=NO_MARKUP)
    assert either.counts["fail"] == 0 and no_markup.counts["fail"] > 0
    assert all("under malformed=no-markup" in detail for *_, detail in no_markup.failures)
