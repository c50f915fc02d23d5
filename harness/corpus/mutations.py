"""The text edits behind the drift mutators (:mod:`harness.corpus.drift`): pure, deterministic functions of one
rendered case and its format's spec -- locating calls by the spec's markers, truncations and stray markers,
delimiter, whitespace, structure and escaping edits. Each returns a :class:`Mutation` or ``None`` when it does
not apply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from harness.core.cases import Case
from harness.core.messages import Message
from harness.formats import FormatSpec

#: the keyword between the call opener and the name in the token-delimited object syntax (``call:NAME{...}``).
CALL_KEYWORD = "call:"


@dataclass(frozen=True)
class Mutation:
    """What a mutator makes of one case: the new ``text``, the ``expected`` message, the damaged ``raw`` text
    (kept in content by a surfacing parser), ``tolerated`` marker text a recovering parser may keep, and whether
    the damaged part holds a call to recover (``recoverable``; not for a cut-off call or a partial opener)."""

    text: str
    expected: Message
    raw: str
    tolerated: tuple[str, ...] = ()
    recoverable: bool = True


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


def _truncated(
    case: Case, fmt: FormatSpec, cut: int, complete_calls: int, tolerated: tuple[str, ...] = ()
) -> Mutation | None:
    """``case.text[:cut]``: the first ``complete_calls`` calls stay expected and the prose before the cut stays
    content; the fragment of the cut call (from its opener) is the damaged text, unrecoverable when a call was cut
    (``complete_calls`` short of the expected calls). ``None`` when the cut splits the expected content or
    reasoning."""
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
        content=content or None, reasoning=reasoning, tool_calls=list(case.expected.tool_calls[:complete_calls])
    )
    return Mutation(head, expected, fragment, tolerated, complete_calls >= len(case.expected.tool_calls))


def truncate_in_opener(case: Case, fmt: FormatSpec) -> Mutation | None:
    start, _ = call_spans(case.text, fmt)[-1]
    return _truncated(case, fmt, start + len(fmt.call.open) // 2, len(case.expected.tool_calls) - 1)


def truncate_in_key(case: Case, fmt: FormatSpec) -> Mutation | None:
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


def truncate_in_string(case: Case, fmt: FormatSpec) -> Mutation | None:
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


def closer_cut(case: Case, fmt: FormatSpec, into_closer: bool) -> Mutation | None:
    """The text ends right before (or inside) the last call's closer: every call is complete."""
    closer = fmt.call.close or ""
    start, end = call_spans(case.text, fmt)[-1]
    cut = end - len(closer) + (len(closer) // 2 if into_closer else 0)
    tolerated = (case.text[end - len(closer) : cut],) if into_closer else ()
    mutation = _truncated(case, fmt, cut, len(case.expected.tool_calls), tolerated)
    return mutation and replace(mutation, raw=case.text[start:cut])


def partial_opener_after_call(case: Case, fmt: FormatSpec) -> Mutation | None:
    fragment = fmt.call_open[: len(fmt.call_open) // 2]
    return Mutation(case.text + fragment, case.expected, fragment, recoverable=False)


def stray_closer(case: Case, fmt: FormatSpec) -> Mutation | None:
    closer = fmt.call_close
    pos = case.text.find(fmt.call_open)
    return Mutation(case.text[:pos] + closer + case.text[pos:], case.expected, closer, (closer,))


def doubled_opener(case: Case, fmt: FormatSpec) -> Mutation | None:
    opener = fmt.call_open
    pos = case.text.find(opener)
    first_end = call_spans(case.text, fmt)[0][1]
    text = case.text[:pos] + opener + case.text[pos:]
    return Mutation(text, case.expected, text[pos : first_end + len(opener)], (opener,))


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


def object_edit(make: ObjectEdit) -> Callable[[Case, FormatSpec], Mutation | None]:
    """A first-call mutation from ``make(syntax, head, members) -> new span | None``."""

    def apply(case: Case, fmt: FormatSpec) -> Mutation | None:
        syntax = _Syntax.of(fmt)

        def rewrite(span: str) -> str | None:
            parts = syntax.parts(span)
            return make(syntax, *parts) if parts and parts[1] else None

        return _replace_span(case, fmt, 0, rewrite)

    return apply


def string_closer(closer: str) -> ObjectEdit:
    def make(s: _Syntax, head: str, members: list[str]) -> str | None:
        i = s.string_member(members)
        if i is None:
            return None
        members = list(members)
        members[i] = members[i].removesuffix(s.delim) + closer
        return s.rebuild(head, members)

    return make


def missing_string_opener(s: _Syntax, head: str, members: list[str]) -> str | None:
    i = s.string_member(members)
    if i is None:
        return None
    key, _, value = members[i].partition(":")
    return s.rebuild(head, [*members[:i], f"{key}:{value.removeprefix(s.delim)}", *members[i + 1 :]])


def marker_quoted_key(s: _Syntax, head: str, members: list[str]) -> str:
    return s.rebuild(
        head, [f"{s.delim}{key}{s.delim}:{value}" for key, _, value in (m.partition(":") for m in members)]
    )


def space_around_separators(s: _Syntax, head: str, members: list[str]) -> str:
    return s.rebuild(head, [f"{key} : {value}" for key, _, value in (m.partition(":") for m in members)], sep=" , ")


def key_equals_value(s: _Syntax, head: str, members: list[str]) -> str | None:
    i = s.string_member(members, last=True)
    if i is None or "'" in members[i]:
        return None
    key, _, value = members[i].partition(":")
    return s.rebuild(head, [*members[:i], f"{key}='{value[len(s.delim) : -len(s.delim)]}'", *members[i + 1 :]])


def missing_comma(s: _Syntax, head: str, members: list[str]) -> str | None:
    for i in range(len(members) - 1):
        if members[i].endswith(s.delim):
            joined = members[:i] + [members[i] + members[i + 1]] + members[i + 2 :]
            return s.rebuild(head, joined)
    return None


def json_quotes_in_container(s: _Syntax, head: str, members: list[str]) -> str | None:
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


def wrapper_envelope(s: _Syntax, head: str, members: list[str]) -> str | None:
    name = head.removeprefix(s.open + CALL_KEYWORD)
    if name == "tool_call":
        return None
    return f"{s.open}{CALL_KEYWORD}tool_call{{args:{{{','.join(members)}}},id:{s.delim}{name}{s.delim}}}{s.close}"


def drop_first(marker: Callable[[FormatSpec], str]) -> Callable[[Case, FormatSpec], Mutation | None]:
    """A first-call mutation that drops the first ``marker(fmt)`` of the call."""

    def apply(case: Case, fmt: FormatSpec) -> Mutation | None:
        text = marker(fmt)
        return _replace_span(case, fmt, 0, lambda span: span.replace(text, "", 1) if text in span else None)

    return apply


def drop_last_parameter_closer(case: Case, fmt: FormatSpec) -> Mutation | None:
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


def literal_newlines(case: Case, fmt: FormatSpec) -> Mutation | None:
    call = case.expected.tool_calls[0]
    if any("\n" in s for s in _strings(call.arguments)) or any("\n" in k for k in call.arguments):
        return None
    return _replace_span(case, fmt, 0, lambda span: span.replace("\n", "\\n") if "\n" in span else None)


def escaped_json_value(case: Case, fmt: FormatSpec) -> Mutation | None:
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


def newline_between_args(case: Case, fmt: FormatSpec) -> Mutation | None:
    if fmt.arguments == "quote-token":
        return object_edit(lambda s, head, members: s.rebuild(head, members, sep=",\n") if len(members) > 1 else None)(
            case, fmt
        )
    return _json_newlines(case, fmt)
