"""Drift mutators: deviations models and servers really send, applied to rendered cases (the ``drift`` slice).

A :class:`Mutator` turns one rendered case (what the template writes) into a ``kind="drift"`` case that
models one deviation seen in the field, and states which outcome classes a parser may answer with
(:mod:`harness.score.outcomes`): ``recovered`` (the intended calls) and/or ``declined`` (no call for the damaged
part: its raw text kept in content, or its markup scrubbed, as the judging policy allows). Every mutator names
where the deviation was seen (``seen``: an observed case id of ``corpora/observed/observed_public.jsonl`` or a
public report).

Rules shared by every mutator:

- Only the *first* call is damaged (truncations cut inside the *last* call, as ``max_tokens`` does); prose,
  reasoning and the other calls stay as rendered. The expected message of a mutation is the base case's, except
  for truncations: their expected calls are the complete calls before the cut and their expected content the
  prose before the cut; the cut-off fragment is the damaged text (unrecoverable: no call may be made of it).
- A mutated case has id ``<base id>~<mutator>``, ``slice="drift"``, ``kind="drift"``, the base's tags plus
  ``mutator:<name>``, ``text_provenance="reconstructed"``, and ``extra["drift"] = {"mutator", "base",
  "outcomes", "raw", "tolerated", "recoverable"}``: ``raw`` is the damaged text a surfacing parser keeps in
  content, ``tolerated`` marker text a recovering parser may keep in content or drop (a stray closer),
  ``recoverable`` false when the damaged part holds no call (a cut-off call, a partial opener).
- Mutations are pure and deterministic; :func:`drift_cases` picks the base cases with a seeded
  ``random.Random`` (the run seed is recorded as the case's ``seed``).
- Base cases are rendered curated cases whose calls can be located by their markers: no marker text or
  injection inside strings, at most :data:`MAX_BASE_LEN` characters, one located call per expected call.

Everything format-specific comes from the format's :class:`~harness.formats.FormatSpec`: calls are located by
``SPEC.call`` (a call without closer -- Mistral, Llama 3 JSON, Harmony, whose ``<|call|>`` is a stop marker the
render strips -- ends at the next opener or at the end of the text), and a mutator is for the formats whose spec
has the property it needs (``selects``: the argument style, the key or parameter tags, a closer, ...), never for
a list of format names.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from harness.core.cases import Case
from harness.corpus.mutations import (
    Mutation,
    call_spans,
    closer_cut,
    doubled_opener,
    drop_first,
    drop_last_parameter_closer,
    escaped_json_value,
    json_quotes_in_container,
    key_equals_value,
    literal_newlines,
    marker_quoted_key,
    missing_comma,
    missing_string_opener,
    newline_between_args,
    object_edit,
    partial_opener_after_call,
    space_around_separators,
    stray_closer,
    string_closer,
    truncate_in_key,
    truncate_in_opener,
    truncate_in_string,
    wrapper_envelope,
)
from harness.formats import FormatSpec, get_format, known_formats

# what a mutator allows: recovering the intended calls, declining the damaged part (surfaced or scrubbed, as the
# judging policy says: harness.score.policy), or either
RECOVERED, DECLINED = "recovered", "declined"
EITHER = (RECOVERED, DECLINED)
DEFAULT_PER_MUTATOR = 3
MAX_BASE_LEN = 400
EXCLUDED_BASE_TAGS = frozenset({"marker-in-string", "injection", "long-string", "nul-in-string"})


# --- which formats a mutator is for: properties of the FormatSpec -----------------------------------------


def _every(fmt: FormatSpec) -> bool:
    return True


def _opener_is_marker(fmt: FormatSpec) -> bool:
    return fmt.call_open_is_marker


def _has_closer(fmt: FormatSpec) -> bool:
    return fmt.call.close is not None


def _style(*styles: str) -> Callable[[FormatSpec], bool]:
    return lambda fmt: fmt.arguments in styles


def _quote_token(fmt: FormatSpec) -> bool:
    return fmt.arguments == "quote-token"


def _key_tags(fmt: FormatSpec) -> bool:
    return fmt.argument_key is not None


def _parameter_tags(fmt: FormatSpec) -> bool:
    return fmt.parameter is not None


def _call_newlines(fmt: FormatSpec) -> bool:
    return fmt.call_newlines


@dataclass(frozen=True)
class Mutator:
    """One named deviation: ``apply(case, fmt) -> Mutation | None`` (``None``: it does not apply to the case).

    ``selects(fmt) -> bool``: whether it is defined for a format (a property of its spec; ``formats`` lists the
    known formats it selects); ``outcomes``: what it allows (``recovered``, ``declined`` or both);
    ``seen``: where the deviation was reported; ``deviation``: one line of what changes.
    """

    name: str
    selects: Callable[[FormatSpec], bool]
    outcomes: tuple[str, ...]
    seen: str
    deviation: str
    apply: Callable[[Case, FormatSpec], Mutation | None]

    @property
    def formats(self) -> tuple[str, ...]:
        """The known formats this mutator is defined for (:func:`harness.formats.known_formats` order)."""
        return tuple(name for name in known_formats() if self.selects(get_format(name)))

    def mutate(self, case: Case, fmt: FormatSpec, seed: int | None = None) -> Case | None:
        """The drift case made from rendered ``case``, or ``None`` when the mutator does not apply to it."""
        if not self.selects(fmt) or not is_base(case, fmt):
            return None
        mutation = self.apply(case, fmt)
        if mutation is None or mutation.text == case.text:
            return None
        drift = {
            "mutator": self.name,
            "base": case.id,
            "outcomes": list(self.outcomes),
            "raw": mutation.raw,
            "tolerated": list(mutation.tolerated),
            "recoverable": mutation.recoverable,
        }
        return Case(
            id=f"{case.id}~{self.name}",
            format=case.format,
            text=mutation.text,
            expected=mutation.expected,
            kind="drift",
            tools=case.tools,
            prefix=case.prefix,
            slice="drift",
            tags=[*case.tags, f"mutator:{self.name}"],
            source=self.seen,
            text_provenance="reconstructed",
            note=f"{self.deviation} (drift of {case.id})",
            seed=seed,
            template=case.template,
            extra={"drift": drift},
        )


# --- locating calls --------------------------------------------------------------------------------------


def is_base(case: Case, fmt: FormatSpec) -> bool:
    """True for a case mutators can work on (see the module docstring)."""
    return (
        case.kind == "strict"
        and bool(case.expected.tool_calls)
        and len(case.text) <= MAX_BASE_LEN
        and not EXCLUDED_BASE_TAGS & set(case.tags)
        and len(call_spans(case.text, fmt)) == len(case.expected.tool_calls)
    )


# --- truncation (format-generic) -------------------------------------------------------------------------


# --- token-delimited objects (quote-token style: Gemma 4) ------------------------------------------------


# --- GLM, Qwen3-Coder, MiniMax, DeepSeek V3.2 (raw values between tags) ----------------------------------


# --- the registry ----------------------------------------------------------------------------------------

MUTATORS: tuple[Mutator, ...] = (
    # delimiter drift (quote-token style: Gemma 4)
    Mutator(
        "plain-quote-closer",
        _quote_token,
        EITHER,
        'gemma4_plain_quote_in_string_xinference (plain " confused with <|"|>; ollama #15241)',
        'a string opened with <|"|> is closed by a plain "',
        object_edit(string_closer('"')),
    ),
    Mutator(
        "single-quote-closer",
        _quote_token,
        EITHER,
        "https://github.com/jundot/omlx/pull/1854 (single-quoted values)",
        "a string opened with <|\"|> is closed by '",
        object_edit(string_closer("'")),
    ),
    Mutator(
        "backtick-closer",
        _quote_token,
        EITHER,
        "not found in public reports; asked for by issue 6 (delimiter drift)",
        'a string opened with <|"|> is closed by a backtick',
        object_edit(string_closer("`")),
    ),
    Mutator(
        "missing-string-opener",
        _quote_token,
        EITHER,
        "https://github.com/sgl-project/sglang/pull/39240",
        'a string value lacks its opening <|"|> (key:value<|"|>)',
        object_edit(missing_string_opener),
    ),
    Mutator(
        "marker-quoted-key",
        _quote_token,
        EITHER,
        'https://github.com/ollama/ollama/issues/18390 (<|"|>key<|"|>: form)',
        'top-level keys wrapped in <|"|> markers',
        object_edit(marker_quoted_key),
    ),
    # whitespace drift
    Mutator(
        "space-before-key",
        _quote_token,
        EITHER,
        "https://github.com/ollama/ollama/issues/18390 (`, connections:`)",
        "a space before every top-level key",
        object_edit(lambda s, head, members: s.rebuild(head, [" " + m for m in members])),
    ),
    Mutator(
        "space-around-separators",
        _quote_token,
        EITHER,
        "https://github.com/ollama/ollama/issues/18390",
        "spaces around every top-level : and ,",
        object_edit(space_around_separators),
    ),
    Mutator(
        "newline-between-args",
        _style("quote-token", "json"),
        EITHER,
        "gemma4_plain_quote_in_string_xinference (`,\\n` between arguments); "
        "https://github.com/leehack/llamadart/pull/88 (newlines around JSON)",
        "a newline between top-level arguments (JSON formats: arguments pretty-printed)",
        newline_between_args,
    ),
    # structure drift
    Mutator(
        "paren-call",
        _quote_token,
        EITHER,
        "gemma4_paren_form_absorbed_into_name_vllm",
        "call:NAME(...) instead of call:NAME{...}",
        object_edit(lambda s, head, members: s.rebuild(head, members, open_="(", close=")")),
    ),
    Mutator(
        "key-equals-value",
        _quote_token,
        EITHER,
        "gemma4_key_equals_value_ollama",
        "the last string argument written key='value'",
        object_edit(key_equals_value),
    ),
    Mutator(
        "missing-comma",
        _quote_token,
        EITHER,
        "https://github.com/hybridgroup/yzma/pull/243",
        'no comma after a string argument (<|"|>v<|"|>next:...)',
        object_edit(missing_comma),
    ),
    Mutator(
        "json-quotes-in-container",
        _quote_token,
        EITHER,
        "https://github.com/vllm-project/vllm/issues/51284; gemma4_wrapper_call_with_id_field_fastflowlm",
        'strings inside nested objects/arrays in JSON quotes ("x") instead of <|"|>',
        object_edit(json_quotes_in_container),
    ),
    Mutator(
        "wrapper-envelope",
        _quote_token,
        EITHER,
        "gemma4_wrapper_call_with_id_field_fastflowlm",
        "the call wrapped as call:tool_call{args:{...},id:NAME}",
        object_edit(wrapper_envelope),
    ),
    Mutator(
        "missing-arg-key",
        _key_tags,
        EITHER,
        "https://github.com/vllm-project/vllm/pull/47190",
        "the first <arg_key> opener missing (NAMEkey</arg_key>)",
        drop_first(lambda fmt: fmt.argument_key.open),  # type: ignore[union-attr]
    ),
    Mutator(
        "missing-arg-value-opener",
        _key_tags,
        EITHER,
        "https://github.com/vllm-project/vllm/issues/49248",
        "the first <arg_value> opener missing",
        drop_first(lambda fmt: fmt.argument_value.open),  # type: ignore[union-attr]
    ),
    Mutator(
        "missing-parameter-closer",
        _parameter_tags,
        EITHER,
        "qwen3coder_last_param_unclosed_vllm",
        "the last parameter closer of the first call missing",
        drop_last_parameter_closer,
    ),
    # escaping drift
    Mutator(
        "literal-backslash-escapes",
        _call_newlines,
        EITHER,
        "glm_literal_backslash_escapes_double_serialized_sglang",
        "the call's structural newlines written as the two characters \\n",
        literal_newlines,
    ),
    Mutator(
        "escaped-json-value",
        _style("xml-values", "json"),
        EITHER,
        "glm_literal_backslash_escapes_double_serialized_sglang; https://github.com/huggingface/smolagents/pull/1003",
        'JSON inside a value double-encoded (\\" quotes; JSON formats: arguments as a JSON string)',
        escaped_json_value,
    ),
    # truncation and stray markers (format-generic)
    Mutator(
        "truncate-in-opener",
        _opener_is_marker,
        (DECLINED,),
        "deepseek_v31_tool_call_inside_thinking_sglang (the stream ends inside a marker)",
        "the text ends inside the last call's opener",
        truncate_in_opener,
    ),
    Mutator(
        "truncate-in-key",
        _every,
        (DECLINED,),
        "qwen3coder_parallel_calls_llamacpp_autoparser (cut-off output)",
        "the text ends inside the last call's first key",
        truncate_in_key,
    ),
    Mutator(
        "truncate-in-string",
        _every,
        (DECLINED,),
        "qwen3coder_parallel_calls_llamacpp_autoparser (cut-off output)",
        "the text ends inside a string value of the last call",
        truncate_in_string,
    ),
    Mutator(
        "truncate-before-closer",
        _has_closer,
        EITHER,
        "https://github.com/ollama/ollama/pull/14656 (unclosed tags)",
        "the text ends right before the last call's closer",
        lambda case, fmt: closer_cut(case, fmt, into_closer=False),
    ),
    Mutator(
        "truncate-in-closer",
        _has_closer,
        EITHER,
        "qwen3coder_parallel_calls_llamacpp_autoparser (ends `</tool_call`)",
        "the text ends inside the last call's closer",
        lambda case, fmt: closer_cut(case, fmt, into_closer=True),
    ),
    Mutator(
        "partial-opener-after-call",
        _opener_is_marker,
        (DECLINED,),
        "deepseek_v31_tool_call_inside_thinking_sglang (ends `<｜tool▁calls▁e` after a complete call)",
        "half of a call opener after the complete calls, at the end of the text",
        partial_opener_after_call,
    ),
    Mutator(
        "stray-closer",
        _has_closer,
        (RECOVERED,),
        "https://github.com/antirez/ds4/issues/11; https://github.com/ai-dynamo/frontend-crates/pull/63",
        "a call closer with no opener before the first call",
        stray_closer,
    ),
    Mutator(
        "doubled-opener",
        _opener_is_marker,
        EITHER,
        "https://github.com/getsigit/sigit/pull/95 (a second <tool_call>)",
        "the first call opener written twice",
        doubled_opener,
    ),
)


def get_mutator(name: str) -> Mutator:
    """The mutator named ``name``; raises ``KeyError`` naming the known ones."""
    for mutator in MUTATORS:
        if mutator.name == name:
            return mutator
    raise KeyError(f"unknown mutator {name!r}; known: {', '.join(m.name for m in MUTATORS)}")


def mutators_for(fmt: FormatSpec | str) -> list[Mutator]:
    """The mutators defined for format ``fmt`` (a spec or a format name; registry order)."""
    spec = get_format(fmt) if isinstance(fmt, str) else fmt
    return [m for m in MUTATORS if m.selects(spec)]


def drift_cases(cases: list[Case], fmt: FormatSpec, seed: int, per_mutator: int = DEFAULT_PER_MUTATOR) -> list[Case]:
    """The drift slice: each mutator of ``fmt`` applied to up to ``per_mutator`` of the rendered ``cases``.

    The bases are a ``random.Random(f"drift:{seed}:{name}")`` sample of the cases the mutator applies to, in
    corpus order; each drift case records ``seed``.
    """
    out = []
    for mutator in mutators_for(fmt):
        made = [m for m in (mutator.mutate(c, fmt, seed) for c in cases) if m is not None]
        picked = random.Random(f"drift:{seed}:{mutator.name}").sample(range(len(made)), min(per_mutator, len(made)))
        out += [made[i] for i in sorted(picked)]
    return out
