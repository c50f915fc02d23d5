"""Drift mutators: deviations models and servers really send, applied to rendered cases (the ``drift`` slice).

A :class:`Mutator` turns one rendered case (what the template writes) into a ``kind="drift"`` case that
models one deviation seen in the field, and states which outcome classes a parser may answer with
(:mod:`harness.score.outcomes`): ``recovered`` (the intended calls) and/or ``surfaced`` (no call for the damaged
part, its raw text kept in content). Every mutator names where the deviation was seen (``seen``: an observed
case id of ``corpora/observed/observed_public.jsonl`` or a public report).

Rules shared by every mutator:

- Only the *first* call is damaged (truncations cut inside the *last* call, as ``max_tokens`` does); prose,
  reasoning and the other calls stay as rendered. The expected message of a mutation is the base case's, except
  for truncations: their expected calls are the complete calls before the cut, and their expected content is
  the prose before the cut followed by the cut-off fragment, which a parser must keep (not drop).
- A mutated case has id ``<base id>~<mutator>``, ``slice="drift"``, ``kind="drift"``, the base's tags plus
  ``mutator:<name>``, ``text_provenance="reconstructed"``, and ``extra["drift"] = {"mutator", "base",
  "outcomes", "raw", "tolerated"}``: ``raw`` is the damaged text a surfacing parser must keep in content,
  ``tolerated`` marker text a recovering parser may keep in content or drop (a stray closer).
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

import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from harness.core.cases import Case
from harness.core.messages import Message
from harness.formats import FormatSpec, get_format, known_formats

RECOVERED, SURFACED = "recovered", "surfaced"
EITHER = (RECOVERED, SURFACED)
DEFAULT_PER_MUTATOR = 3
MAX_BASE_LEN = 400
EXCLUDED_BASE_TAGS = frozenset({"marker-in-string", "injection", "long-string", "nul-in-string"})
#: the keyword between the call opener and the name in the token-delimited object syntax (``call:NAME{...}``).
CALL_KEYWORD = "call:"


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
class Mutation:
    """What a mutator makes of one case: the new ``text``, the ``expected`` message, the damaged ``raw`` text
    (kept in content by a surfacing parser) and ``tolerated`` marker text a recovering parser may keep."""

    text: str
    expected: Message
    raw: str
    tolerated: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mutator:
    """One named deviation: ``apply(case, fmt) -> Mutation | None`` (``None``: it does not apply to the case).

    ``selects(fmt) -> bool``: whether it is defined for a format (a property of its spec; ``formats`` lists the
    known formats it selects); ``outcomes``: the allowed outcome classes (``recovered``, ``surfaced`` or both);
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


def call_spans(text: str, fmt: FormatSpec) -> list[tuple[int, int]]:
    """``[(start, end)]`` of each call's text (opener to closer inclusive) found by the format's call markers."""
    opener, closer = fmt.call
    spans, pos = [], 0
    while (start := text.find(opener, pos)) >= 0:
        if closer is not None:
            end = text.find(closer, start + len(opener))
            if end < 0:
                break
            end += len(closer)
        else:
            following = text.find(opener, start + len(opener))
            end = following if following >= 0 else len(text)
        spans.append((start, end))
        pos = end
    return spans


def is_base(case: Case, fmt: FormatSpec) -> bool:
    """True for a case mutators can work on (see the module docstring)."""
    return (
        case.kind == "strict"
        and bool(case.expected.tool_calls)
        and len(case.text) <= MAX_BASE_LEN
        and not EXCLUDED_BASE_TAGS & set(case.tags)
        and len(call_spans(case.text, fmt)) == len(case.expected.tool_calls)
    )


def _replace_span(case: Case, fmt: FormatSpec, index: int, make: Callable[[str], str | None]) -> Mutation | None:
    """Rewrite call ``index``'s text with ``make(span) -> new span | None``; the expected message is kept."""
    start, end = call_spans(case.text, fmt)[index]
    new = make(case.text[start:end])
    if new is None:
        return None
    return Mutation(case.text[:start] + new + case.text[end:], case.expected, new)


def _first_call(make: Callable[[str], str | None]) -> Callable[[Case, FormatSpec], Mutation | None]:
    return lambda case, fmt: _replace_span(case, fmt, 0, make)


def _squash(text: str) -> str:
    return "".join(text.split())


def _strings(value) -> Iterable[str]:
    """Every string inside a JSON value (depth first)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


_SIMPLE = re.compile(r"[A-Za-z0-9 ._/-]{2,}")
_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")


def find_json(text: str, value) -> tuple[int, int] | None:
    """``(start, end)`` of the first JSON object/array in ``text`` that decodes to ``value``, or ``None``."""
    decoder = json.JSONDecoder()
    for i, char in enumerate(text):
        if char in "{[":
            try:
                found, end = decoder.raw_decode(text, i)
            except ValueError:
                continue
            if found == value and type(found) is type(value):
                return i, end
    return None


# --- truncation (format-generic) -------------------------------------------------------------------------


def _truncated(
    case: Case, fmt: FormatSpec, cut: int, complete_calls: int, tolerated: tuple[str, ...] = ()
) -> Mutation | None:
    """``case.text[:cut]``: the first ``complete_calls`` calls stay expected, the prose before the cut stays
    content and the fragment of the cut call (from its opener) must be kept after it. ``None`` when the cut
    splits the expected content or reasoning."""
    start = call_spans(case.text, fmt)[complete_calls][0] if complete_calls < len(case.expected.tool_calls) else cut
    head, tail = case.text[:cut], case.text[cut:]
    content = case.expected.content or ""
    if content and _squash(content) not in _squash(head[:start]):
        if _squash(content) not in _squash(tail):
            return None
        content = ""
    reasoning = case.expected.reasoning
    if reasoning and _squash(reasoning) not in _squash(case.prefix + head):
        return None
    fragment = case.text[start:cut]
    expected = Message(
        content=(content + fragment) or None,
        reasoning=reasoning,
        tool_calls=list(case.expected.tool_calls[:complete_calls]),
    )
    return Mutation(head, expected, fragment, tolerated)


def _truncate_in_opener(case: Case, fmt: FormatSpec) -> Mutation | None:
    start, _ = call_spans(case.text, fmt)[-1]
    return _truncated(case, fmt, start + len(fmt.call.open) // 2, len(case.expected.tool_calls) - 1)


def _truncate_in_key(case: Case, fmt: FormatSpec) -> Mutation | None:
    call = case.expected.tool_calls[-1]
    start, end = call_spans(case.text, fmt)[-1]
    after_name = case.text.find(call.name, start, end)
    if after_name < 0 or not isinstance(call.arguments, dict):
        return None
    after_name += len(call.name)
    hits = [(case.text.find(key, after_name, end), key) for key in call.arguments if _SIMPLE_KEY.fullmatch(key)]
    hits = sorted((pos, key) for pos, key in hits if pos >= 0)
    if not hits:
        return None
    pos, key = hits[0]
    return _truncated(case, fmt, pos + len(key) // 2, len(case.expected.tool_calls) - 1)


def _truncate_in_string(case: Case, fmt: FormatSpec) -> Mutation | None:
    call = case.expected.tool_calls[-1]
    start, end = call_spans(case.text, fmt)[-1]
    after_name = case.text.find(call.name, start, end)
    if after_name < 0:
        return None
    for value in _strings(call.arguments):
        pos = case.text.find(value, after_name + len(call.name), end)
        if _SIMPLE.fullmatch(value) and pos >= 0:
            return _truncated(case, fmt, pos + len(value) // 2, len(case.expected.tool_calls) - 1)
    return None


def _closer_cut(case: Case, fmt: FormatSpec, into_closer: bool) -> Mutation | None:
    """The text ends right before (or inside) the last call's closer: every call is complete."""
    closer = fmt.call.close or ""
    start, end = call_spans(case.text, fmt)[-1]
    cut = end - len(closer) + (len(closer) // 2 if into_closer else 0)
    tolerated = (case.text[end - len(closer) : cut],) if into_closer else ()
    mutation = _truncated(case, fmt, cut, len(case.expected.tool_calls), tolerated)
    return mutation and replace(mutation, raw=case.text[start:cut])


def _partial_opener_after_call(case: Case, fmt: FormatSpec) -> Mutation | None:
    fragment = fmt.call_open[: len(fmt.call_open) // 2]
    content = (case.expected.content or "") + fragment
    expected = Message(content, case.expected.reasoning, list(case.expected.tool_calls))
    return Mutation(case.text + fragment, expected, fragment)


def _stray_closer(case: Case, fmt: FormatSpec) -> Mutation | None:
    closer = fmt.call_close
    pos = case.text.find(fmt.call_open)
    return Mutation(case.text[:pos] + closer + case.text[pos:], case.expected, closer, (closer,))


def _doubled_opener(case: Case, fmt: FormatSpec) -> Mutation | None:
    opener = fmt.call_open
    pos = case.text.find(opener)
    first_end = call_spans(case.text, fmt)[0][1]
    text = case.text[:pos] + opener + case.text[pos:]
    return Mutation(text, case.expected, text[pos : first_end + len(opener)], (opener,))


# --- token-delimited objects (quote-token style: Gemma 4) ------------------------------------------------


@dataclass(frozen=True)
class _Syntax:
    """A call in the token-delimited object syntax: ``OPEN call:NAME{key:DELIM text DELIM,...}CLOSE``."""

    open: str
    close: str
    delim: str

    @classmethod
    def of(cls, fmt: FormatSpec) -> _Syntax:
        return cls(fmt.call.open, fmt.call.close or "", fmt.string_delimiter or "")

    def parts(self, span: str) -> tuple[str, list[str]] | None:
        """``OPEN call:NAME{BODY}CLOSE`` → ``(head "OPEN call:NAME", top-level members of BODY)``; ``None`` for
        another shape."""
        brace = span.find("{")
        if not span.startswith(self.open + CALL_KEYWORD) or brace < 0 or not span.endswith("}" + self.close):
            return None
        return span[:brace], self.split_members(span[brace + 1 : -len(self.close) - 1])

    def split_members(self, body: str) -> list[str]:
        """Split an object body at its top-level commas (strings between delimiters skipped)."""
        members, depth, start, i = [], 0, 0, 0
        while i < len(body):
            if body.startswith(self.delim, i):
                end = body.find(self.delim, i + len(self.delim))
                i = len(body) if end < 0 else end + len(self.delim)
                continue
            if body[i] in "{[":
                depth += 1
            elif body[i] in "}]":
                depth -= 1
            elif body[i] == "," and depth == 0:
                members.append(body[start:i])
                start = i + 1
            i += 1
        return members + [body[start:]] if body else members

    def rebuild(self, head: str, members: list[str], sep: str = ",", open_: str = "{", close: str = "}") -> str:
        return head + open_ + sep.join(members) + close + self.close

    def string_member(self, members: list[str], last: bool = False) -> int | None:
        """Index of the first (or last) member ``key:DELIM simple text DELIM``."""
        d = self.delim
        order = range(len(members) - 1, -1, -1) if last else range(len(members))
        for i in order:
            value = members[i].partition(":")[2]
            inner = value[len(d) : -len(d)] if value.startswith(d) and value.endswith(d) else None
            if inner is not None and _SIMPLE.fullmatch(inner) and d not in inner:
                return i
        return None


ObjectEdit = Callable[[_Syntax, str, list[str]], str | None]


def _object(make: ObjectEdit) -> Callable[[Case, FormatSpec], Mutation | None]:
    """A first-call mutation from ``make(syntax, head, members) -> new span | None``."""

    def apply(case: Case, fmt: FormatSpec) -> Mutation | None:
        syntax = _Syntax.of(fmt)

        def rewrite(span: str) -> str | None:
            parts = syntax.parts(span)
            return make(syntax, *parts) if parts and parts[1] else None

        return _replace_span(case, fmt, 0, rewrite)

    return apply


def _string_closer(closer: str) -> ObjectEdit:
    def make(s: _Syntax, head: str, members: list[str]) -> str | None:
        i = s.string_member(members)
        if i is None:
            return None
        members = list(members)
        members[i] = members[i].removesuffix(s.delim) + closer
        return s.rebuild(head, members)

    return make


def _missing_string_opener(s: _Syntax, head: str, members: list[str]) -> str | None:
    i = s.string_member(members)
    if i is None:
        return None
    key, _, value = members[i].partition(":")
    return s.rebuild(head, [*members[:i], f"{key}:{value.removeprefix(s.delim)}", *members[i + 1 :]])


def _marker_quoted_key(s: _Syntax, head: str, members: list[str]) -> str:
    return s.rebuild(
        head, [f"{s.delim}{key}{s.delim}:{value}" for key, _, value in (m.partition(":") for m in members)]
    )


def _space_around_separators(s: _Syntax, head: str, members: list[str]) -> str:
    return s.rebuild(head, [f"{key} : {value}" for key, _, value in (m.partition(":") for m in members)], sep=" , ")


def _key_equals_value(s: _Syntax, head: str, members: list[str]) -> str | None:
    i = s.string_member(members, last=True)
    if i is None or "'" in members[i]:
        return None
    key, _, value = members[i].partition(":")
    return s.rebuild(head, [*members[:i], f"{key}='{value[len(s.delim) : -len(s.delim)]}'", *members[i + 1 :]])


def _missing_comma(s: _Syntax, head: str, members: list[str]) -> str | None:
    for i in range(len(members) - 1):
        if members[i].endswith(s.delim):
            joined = members[:i] + [members[i] + members[i + 1]] + members[i + 2 :]
            return s.rebuild(head, joined)
    return None


def _json_quotes_in_container(s: _Syntax, head: str, members: list[str]) -> str | None:
    """Strings nested inside an object or array written ``"x"`` (JSON) instead of between delimiters."""
    body, d = ",".join(members), s.delim
    out, depth, i, changed = [], 0, 0, False
    while i < len(body):
        if body.startswith(d, i):
            end = body.find(d, i + len(d))
            if end < 0:
                return None
            nested = depth > 0
            out.append(json.dumps(body[i + len(d) : end], ensure_ascii=False) if nested else body[i : end + len(d)])
            changed |= nested
            i = end + len(d)
            continue
        if body[i] in "{[":
            depth += 1
        elif body[i] in "}]":
            depth -= 1
        out.append(body[i])
        i += 1
    return head + "{" + "".join(out) + "}" + s.close if changed else None


def _wrapper_envelope(s: _Syntax, head: str, members: list[str]) -> str | None:
    name = head.removeprefix(s.open + CALL_KEYWORD)
    if name == "tool_call":
        return None
    return f"{s.open}{CALL_KEYWORD}tool_call{{args:{{{','.join(members)}}},id:{s.delim}{name}{s.delim}}}{s.close}"


# --- GLM, Qwen3-Coder, MiniMax, DeepSeek V3.2 (raw values between tags) ----------------------------------


def _drop_first(marker: Callable[[FormatSpec], str]) -> Callable[[Case, FormatSpec], Mutation | None]:
    """A first-call mutation that drops the first ``marker(fmt)`` of the call."""

    def apply(case: Case, fmt: FormatSpec) -> Mutation | None:
        text = marker(fmt)
        return _replace_span(case, fmt, 0, lambda span: span.replace(text, "", 1) if text in span else None)

    return apply


def _drop_last_parameter_closer(case: Case, fmt: FormatSpec) -> Mutation | None:
    """Drop the call's last parameter closer; where the template pads values (``parameter_padding``), the padding
    then separates the value from the next tag, so the separator after the closer goes too."""
    closer, pad = fmt.parameter.close or "", fmt.parameter_padding  # type: ignore[union-attr]

    def make(span: str) -> str | None:
        at = span.rfind(closer)
        if at < 0:
            return None
        after = at + len(closer) + (len(pad) if pad and span.startswith(pad, at + len(closer)) else 0)
        return span[:at] + span[after:]

    return _replace_span(case, fmt, 0, make)


def _literal_newlines(case: Case, fmt: FormatSpec) -> Mutation | None:
    call = case.expected.tool_calls[0]
    if any("\n" in s for s in _strings(call.arguments)) or any("\n" in k for k in call.arguments):
        return None
    return _replace_span(case, fmt, 0, lambda span: span.replace("\n", "\\n") if "\n" in span else None)


def _escaped_json_value(case: Case, fmt: FormatSpec) -> Mutation | None:
    call = case.expected.tool_calls[0]
    if not isinstance(call.arguments, dict) or not call.arguments:
        return None
    if fmt.arguments == "json":

        def make(span: str) -> str | None:
            found = find_json(span, call.arguments)
            if found is None:
                return None
            start, end = found
            return span[:start] + json.dumps(span[start:end], ensure_ascii=False) + span[end:]

        return _replace_span(case, fmt, 0, make)
    nested = [v for v in call.arguments.values() if isinstance(v, (dict, list)) and any(True for _ in _strings(v))]
    if not nested:
        return None

    def make_xml(span: str) -> str | None:
        found = find_json(span, nested[0])
        if found is None:
            return None
        start, end = found
        return span[:start] + span[start:end].replace('"', '\\"') + span[end:]

    return _replace_span(case, fmt, 0, make_xml)


def _json_newlines(case: Case, fmt: FormatSpec) -> Mutation | None:
    call = case.expected.tool_calls[0]
    if not isinstance(call.arguments, dict) or len(call.arguments) < 2:
        return None

    def make(span: str) -> str | None:
        found = find_json(span, call.arguments)
        if found is None:
            return None
        start, end = found
        text = span[start:end]
        pretty = json.dumps(json.loads(text), indent=2, ensure_ascii="\\u" in text)
        return span[:start] + pretty + span[end:]

    return _replace_span(case, fmt, 0, make)


def _newline_between_args(case: Case, fmt: FormatSpec) -> Mutation | None:
    if _quote_token(fmt):
        return _object(lambda s, head, members: s.rebuild(head, members, sep=",\n") if len(members) > 1 else None)(
            case, fmt
        )
    return _json_newlines(case, fmt)


# --- the registry ----------------------------------------------------------------------------------------

MUTATORS: tuple[Mutator, ...] = (
    # delimiter drift (quote-token style: Gemma 4)
    Mutator(
        "plain-quote-closer",
        _quote_token,
        EITHER,
        'gemma4_plain_quote_in_string_xinference (plain " confused with <|"|>; ollama #15241)',
        'a string opened with <|"|> is closed by a plain "',
        _object(_string_closer('"')),
    ),
    Mutator(
        "single-quote-closer",
        _quote_token,
        EITHER,
        "https://github.com/jundot/omlx/pull/1854 (single-quoted values)",
        "a string opened with <|\"|> is closed by '",
        _object(_string_closer("'")),
    ),
    Mutator(
        "backtick-closer",
        _quote_token,
        EITHER,
        "not found in public reports; asked for by issue 6 (delimiter drift)",
        'a string opened with <|"|> is closed by a backtick',
        _object(_string_closer("`")),
    ),
    Mutator(
        "missing-string-opener",
        _quote_token,
        EITHER,
        "https://github.com/sgl-project/sglang/pull/39240",
        'a string value lacks its opening <|"|> (key:value<|"|>)',
        _object(_missing_string_opener),
    ),
    Mutator(
        "marker-quoted-key",
        _quote_token,
        EITHER,
        'https://github.com/ollama/ollama/issues/18390 (<|"|>key<|"|>: form)',
        'top-level keys wrapped in <|"|> markers',
        _object(_marker_quoted_key),
    ),
    # whitespace drift
    Mutator(
        "space-before-key",
        _quote_token,
        EITHER,
        "https://github.com/ollama/ollama/issues/18390 (`, connections:`)",
        "a space before every top-level key",
        _object(lambda s, head, members: s.rebuild(head, [" " + m for m in members])),
    ),
    Mutator(
        "space-around-separators",
        _quote_token,
        EITHER,
        "https://github.com/ollama/ollama/issues/18390",
        "spaces around every top-level : and ,",
        _object(_space_around_separators),
    ),
    Mutator(
        "newline-between-args",
        _style("quote-token", "json"),
        EITHER,
        "gemma4_plain_quote_in_string_xinference (`,\\n` between arguments); "
        "https://github.com/leehack/llamadart/pull/88 (newlines around JSON)",
        "a newline between top-level arguments (JSON formats: arguments pretty-printed)",
        _newline_between_args,
    ),
    # structure drift
    Mutator(
        "paren-call",
        _quote_token,
        EITHER,
        "gemma4_paren_form_absorbed_into_name_vllm",
        "call:NAME(...) instead of call:NAME{...}",
        _object(lambda s, head, members: s.rebuild(head, members, open_="(", close=")")),
    ),
    Mutator(
        "key-equals-value",
        _quote_token,
        EITHER,
        "gemma4_key_equals_value_ollama",
        "the last string argument written key='value'",
        _object(_key_equals_value),
    ),
    Mutator(
        "missing-comma",
        _quote_token,
        EITHER,
        "https://github.com/hybridgroup/yzma/pull/243",
        'no comma after a string argument (<|"|>v<|"|>next:...)',
        _object(_missing_comma),
    ),
    Mutator(
        "json-quotes-in-container",
        _quote_token,
        EITHER,
        "https://github.com/vllm-project/vllm/issues/51284; gemma4_wrapper_call_with_id_field_fastflowlm",
        'strings inside nested objects/arrays in JSON quotes ("x") instead of <|"|>',
        _object(_json_quotes_in_container),
    ),
    Mutator(
        "wrapper-envelope",
        _quote_token,
        EITHER,
        "gemma4_wrapper_call_with_id_field_fastflowlm",
        "the call wrapped as call:tool_call{args:{...},id:NAME}",
        _object(_wrapper_envelope),
    ),
    Mutator(
        "missing-arg-key",
        _key_tags,
        EITHER,
        "https://github.com/vllm-project/vllm/pull/47190",
        "the first <arg_key> opener missing (NAMEkey</arg_key>)",
        _drop_first(lambda fmt: fmt.argument_key.open),  # type: ignore[union-attr]
    ),
    Mutator(
        "missing-arg-value-opener",
        _key_tags,
        EITHER,
        "https://github.com/vllm-project/vllm/issues/49248",
        "the first <arg_value> opener missing",
        _drop_first(lambda fmt: fmt.argument_value.open),  # type: ignore[union-attr]
    ),
    Mutator(
        "missing-parameter-closer",
        _parameter_tags,
        EITHER,
        "qwen3coder_last_param_unclosed_vllm",
        "the last parameter closer of the first call missing",
        _drop_last_parameter_closer,
    ),
    # escaping drift
    Mutator(
        "literal-backslash-escapes",
        _call_newlines,
        EITHER,
        "glm_literal_backslash_escapes_double_serialized_sglang",
        "the call's structural newlines written as the two characters \\n",
        _literal_newlines,
    ),
    Mutator(
        "escaped-json-value",
        _style("xml-values", "json"),
        EITHER,
        "glm_literal_backslash_escapes_double_serialized_sglang; https://github.com/huggingface/smolagents/pull/1003",
        'JSON inside a value double-encoded (\\" quotes; JSON formats: arguments as a JSON string)',
        _escaped_json_value,
    ),
    # truncation and stray markers (format-generic)
    Mutator(
        "truncate-in-opener",
        _opener_is_marker,
        EITHER,
        "deepseek_v31_tool_call_inside_thinking_sglang (the stream ends inside a marker)",
        "the text ends inside the last call's opener",
        _truncate_in_opener,
    ),
    Mutator(
        "truncate-in-key",
        _every,
        EITHER,
        "qwen3coder_parallel_calls_llamacpp_autoparser (cut-off output)",
        "the text ends inside the last call's first key",
        _truncate_in_key,
    ),
    Mutator(
        "truncate-in-string",
        _every,
        EITHER,
        "qwen3coder_parallel_calls_llamacpp_autoparser (cut-off output)",
        "the text ends inside a string value of the last call",
        _truncate_in_string,
    ),
    Mutator(
        "truncate-before-closer",
        _has_closer,
        EITHER,
        "https://github.com/ollama/ollama/pull/14656 (unclosed tags)",
        "the text ends right before the last call's closer",
        lambda case, fmt: _closer_cut(case, fmt, into_closer=False),
    ),
    Mutator(
        "truncate-in-closer",
        _has_closer,
        EITHER,
        "qwen3coder_parallel_calls_llamacpp_autoparser (ends `</tool_call`)",
        "the text ends inside the last call's closer",
        lambda case, fmt: _closer_cut(case, fmt, into_closer=True),
    ),
    Mutator(
        "partial-opener-after-call",
        _opener_is_marker,
        (RECOVERED,),
        "deepseek_v31_tool_call_inside_thinking_sglang (ends `<｜tool▁calls▁e` after a complete call)",
        "half of a call opener after the complete calls, at the end of the text",
        _partial_opener_after_call,
    ),
    Mutator(
        "stray-closer",
        _has_closer,
        (RECOVERED,),
        "https://github.com/antirez/ds4/issues/11; https://github.com/ai-dynamo/frontend-crates/pull/63",
        "a call closer with no opener before the first call",
        _stray_closer,
    ),
    Mutator(
        "doubled-opener",
        _opener_is_marker,
        EITHER,
        "https://github.com/getsigit/sigit/pull/95 (a second <tool_call>)",
        "the first call opener written twice",
        _doubled_opener,
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
