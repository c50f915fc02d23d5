"""The :class:`FormatSpec` value: every fact about one tool-call format that the harness uses.

A format module (``harness/formats/<format>.py``) builds its ``SPEC`` once, at import; ``__post_init__`` checks every
field and raises :class:`FormatSpecError` naming the format and the field, so a bad fact fails when the module
loads, not when a corpus is half built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from harness.core.errors import HarnessError

#: argument styles: how a call's arguments are written. The style selects the drift mutators
#: (:mod:`harness.corpus.drift`) and says how values are typed.
ARGUMENT_STYLES = {
    "json": "the arguments are one JSON object; values carry JSON types",
    "xml-values": "one tag pair per argument, the value raw text with no type (the tool's schema decides)",
    "quote-token": "{key:value,...}: bare keys, strings between a quote token (string_delimiter, Gemma 4's "
    '<|"|>), other values as literals',
    "escape-token": "{key:value,...}: bare keys, strings between an escape token (string_delimiter, "
    "FunctionGemma's <escape>), other values as literals",
    "pythonic": "[NAME(key=value, ...), ...]: a Python list of calls with keyword arguments, values Python "
    "literals ('s', True, None, [..], {..}); values carry their literal's type",
}
_DELIMITED = ("quote-token", "escape-token")
#: the peer test suites a format's ``peers`` selectors may name.
PEER_SUITES = ("canitoolcall", "llama.cpp")


class FormatSpecError(HarnessError, ValueError):
    """A format module's ``SPEC`` has a bad field (the message names the format and the field), or the module
    does not define a ``SPEC`` named after it."""


class Markers(NamedTuple):
    """An opener and a closer as they appear in the completion text; ``close`` is ``None`` when nothing closes
    (never ``""``)."""

    open: str
    close: str | None


@dataclass(frozen=True, kw_only=True)
class FormatSpec:
    """Facts about one format family, read from its real chat template (``source``).

    Text markers:

    - ``markers``: every protocol marker string; none may appear in parsed content or reasoning.
    - ``stop_markers``: end-of-generation markers the engine consumes; the corpus strips one from the end of a
      rendered completion, as an inference engine does before parsing.
    - ``call``: the markers around one call as the completion holds them; ``close=None``: a call ends at the
      next opener or at the end of the text (Mistral, Llama 3 JSON, Harmony).
    - ``section``: the markers around all the calls of a turn, where the format has them (Kimi K2, DeepSeek,
      MiniMax); ``None`` otherwise.
    - ``call_end``: the text that ends a call whose closer is ``None``, when there is one although it cannot
      locate a call (Llama 3 JSON's ``}``; Harmony's ``<|call|>``, a stop marker the render strips).
    - ``reasoning``: the reasoning block the generation prompt may pre-fill (``<think>`` / ``</think>``), so the
      rendered case's ``prefix`` holds what was pre-filled (:func:`harness.template.render.split_completion`);
      ``None`` when the format has none or never pre-fills one (Gemma 4's thought channel, Harmony's analysis
      message).
    - ``thought``: the reasoning block as a completion writes it inline, where it differs from ``reasoning`` or
      ``reasoning`` is ``None`` (Gemma 4's ``<|channel>thought`` ... ``<channel|>``, Harmony's analysis message);
      the judge reads reasoning left in content by it under ``--policy reasoning=none|any``
      (:mod:`harness.score.reasoning`).

    Arguments (``arguments``, one of :data:`ARGUMENT_STYLES`) and the markers their style needs:

    - ``string_delimiter``: the token around string values (``quote-token`` and ``escape-token`` only).
    - ``argument_key`` / ``argument_value``: the tag pairs around each key and each value (GLM).
    - ``parameter``: a parameter tag's opener (up to the key) and its closer (Qwen3-Coder, MiniMax, DeepSeek
      V3.2); ``parameter_padding``: what the template writes on each side of a value inside it.
    - ``call_newlines``: the template writes newlines between the parts of a call (the
      ``literal-backslash-escapes`` drift rewrites them as the two characters ``\\n``).

    Rendering and streaming:

    - ``vocabulary``: the real tokenizer of the ``tokens`` streaming mode, a name of
      :data:`harness.assets.tokenizers.TOKENIZERS`; ``None`` with ``no_vocabulary`` saying why the mode skips it.
    - ``unrepresentable``: substrings a string value cannot contain (the template has no escape for them);
      curated cases containing them are skipped with a note.
    - ``template_vars``: variables every render of the format's templates gets (``bos_token``, ``date_string``).
    - ``string_arguments``: the template pastes ``function.arguments`` as given, so renders pass it as the
      OpenAI API's JSON string (Functionary v3.2); False: as an object, the form ``tojson`` templates need.
    - ``call_prefill``: the call opener the generation prompt pre-fills after the role header (Functionary
      v3.2's ``>>>``): it ends a rendered case's ``prefix``, and the completion's first call starts without it.
    - ``declare_tools``: ``(tools) -> tools``, the OpenAI-style declarations completed as the template needs them
      to render (Command R+'s Python stubs concatenate every parameter's description); the renders and the rendered
      case use them. ``None``: the scenario's tools as they are.
    - ``edge_scenarios``: ``() -> list[Scenario]``, the format's own curated shapes (ids ``edge-<format>-...``);
      ``compose_content_before``: ``(completion, prose) -> text``, where prose written before the calls goes
      when it cannot be raw text (Harmony); ``None`` when the format has none.

    Generation prompt and peer suites:

    - ``role_headers``: the text a generation prompt of the format's templates writes to start the model's turn,
      before anything it pre-fills (``<|turn>model\\n``; Mistral, which has no assistant header, ends the user
      turn ``[/INST]``); measured on the rendered prompts of the catalog's templates. A peer case's prefix is its
      generation prompt minus the longest of these (:mod:`harness.corpus.peers.canitoolcall`). ``()``: unknown.
    - ``peers``: selectors of peer-suite cases in this format: ``'canitoolcall:<family>'`` or
      ``'canitoolcall:<family>/<models[0] HF repo>'`` (a model-specific selector wins over a family one), and
      ``'llama.cpp:<template file name>'`` (a template in ``vendor/llama.cpp/models/templates`` used by
      ``test-chat.cpp``). An entry is added only where the peer's texts really are this format.
    - ``closing_turn``: the opening text of a turn the template writes after the last message of every render,
      so also before the generation prompt (Command R+'s tool-use instruction); the cut of a completion
      (:func:`harness.template.render.split_completion`) takes that turn out of both renders first. ``""``: none.
    - ``grammar``: the name of xgrammar's built-in structural tag for the format
      (``xgrammar.get_model_structural_tag``: the tool-call grammar engines compile for guided decoding), the
      grammar oracle's check of the rendered corpus (:mod:`harness.analysis.grammar`); ``""`` when xgrammar has
      none.

    Derived (the names the parsers read): ``call_open`` / ``call_close`` (where the tool-call part of a
    completion starts and ends: the section's markers, else the call's; ``call_close`` falls back to
    ``call_end``, ``""`` when nothing ends it), ``reasoning_markers`` (``(open, close)`` or ``()``) and
    ``call_open_is_marker``.
    """

    name: str
    markers: tuple[str, ...]
    stop_markers: tuple[str, ...]
    call: Markers
    section: Markers | None = None
    call_end: str = ""
    reasoning: Markers | None = None
    thought: Markers | None = None
    arguments: str
    string_delimiter: str | None = None
    argument_key: Markers | None = None
    argument_value: Markers | None = None
    parameter: Markers | None = None
    parameter_padding: str = ""
    call_newlines: bool = False
    string_arguments: bool = False
    call_prefill: str = ""
    vocabulary: str | None
    no_vocabulary: str = ""
    unrepresentable: tuple[str, ...] = ()
    template_vars: dict[str, Any] = field(default_factory=dict)
    declare_tools: Callable[[list], list] | None = field(default=None, repr=False)
    edge_scenarios: Callable[[], list] | None = field(default=None, repr=False)
    compose_content_before: Callable[[str, str], str] | None = field(default=None, repr=False)
    role_headers: tuple[str, ...] = ()
    peers: tuple[str, ...] = ()
    closing_turn: str = ""
    grammar: str = ""
    source: str

    @property
    def call_open(self) -> str:
        """Where the tool-call part of a completion starts: the section's opener, else the call's."""
        return (self.section or self.call).open

    @property
    def call_close(self) -> str:
        """Where the tool-call part ends: the section's closer, else the call's, else ``call_end`` (``""``)."""
        close = (self.section or self.call).close
        return self.call_end if close is None else close

    @property
    def reasoning_markers(self) -> tuple[str, ...]:
        """``(open, close)`` of the pre-filled reasoning block, ``()`` when there is none."""
        return (self.reasoning.open, self.reasoning.close) if self.reasoning else ()  # type: ignore[return-value]

    @property
    def thought_markers(self) -> tuple[str, ...]:
        """``(open, close)`` of the reasoning block as content holds it inline: ``thought``, else ``reasoning``;
        ``()`` when the format has neither."""
        block = self.thought or self.reasoning
        return (block.open, block.close) if block and block.close else ()

    def inline_reasoning(self, text: str, prefix: str = "") -> tuple[str, str] | None:
        """``(reasoning, content)`` when ``text`` starts with the inline reasoning block (``thought_markers``):
        ``OPEN REASONING CLOSE CONTENT`` (whitespace before ``OPEN`` allowed), or ``REASONING CLOSE CONTENT`` when
        ``prefix`` (the generation prompt's pre-fill) ends with ``OPEN``; the reasoning stripped and the content's
        leading whitespace dropped (the template's layout around the block). ``None`` without such a block."""
        if not self.thought_markers or not text:
            return None
        open_, close = self.thought_markers
        start = len(text) - len(text.lstrip())
        if text.startswith(open_, start):
            body = start + len(open_)
        elif prefix.rstrip().endswith(open_.rstrip()):
            body = 0
        else:
            return None
        end = text.find(close, body)
        if end < 0:
            return None
        return text[body:end].strip(), text[end + len(close) :].lstrip()

    @property
    def call_open_is_marker(self) -> bool:
        """True when ``call_open`` is a marker of the format (Llama 3 JSON's is JSON text, Harmony's part of a
        header)."""
        return self.call_open in self.markers

    def __post_init__(self) -> None:
        _check(self)


def _check(spec: FormatSpec) -> None:
    """Raise :class:`FormatSpecError` naming the format and the first bad field of ``spec``."""
    if not (isinstance(spec.name, str) and spec.name.isidentifier() and spec.name == spec.name.lower()):
        raise FormatSpecError(f"format {spec.name!r}: field 'name' must be a lowercase identifier (the module name)")

    def bad(name: str, why: str) -> FormatSpecError:
        return FormatSpecError(f"format {spec.name!r}: field {name!r} {why}")

    def strings(name: str, value: Any, empty_ok: bool = True) -> None:
        if not isinstance(value, tuple) or not all(isinstance(s, str) and s for s in value):
            raise bad(name, f"must be a tuple of non-empty strings, got {value!r}")
        if not empty_ok and not value:
            raise bad(name, "must not be empty")
        if len(set(value)) != len(value):
            raise bad(name, f"repeats a string: {value!r}")

    def markers(name: str, value: Any, optional: bool = True, close_optional: bool = False) -> None:
        if value is None and optional:
            return
        if not isinstance(value, Markers):
            raise bad(name, f"must be Markers(open, close){' or None' if optional else ''}, got {value!r}")
        if not isinstance(value.open, str) or not value.open:
            raise bad(name, f"has an empty or non-string opener: {value!r}")
        if value.close is None and close_optional:
            return
        if not isinstance(value.close, str) or not value.close:
            hint = " (write None for no closer)" if close_optional and value.close == "" else ""
            raise bad(name, f"has an empty or non-string closer: {value!r}{hint}")

    def text(name: str, value: Any, empty_ok: bool = True) -> None:
        if not isinstance(value, str) or (not empty_ok and not value):
            raise bad(name, f"must be a {'' if empty_ok else 'non-empty '}string, got {value!r}")

    strings("markers", spec.markers, empty_ok=False)
    strings("stop_markers", spec.stop_markers, empty_ok=False)
    markers("call", spec.call, optional=False, close_optional=True)
    markers("section", spec.section)
    text("call_end", spec.call_end)
    if spec.call_end and (spec.section or spec.call).close is not None:
        raise bad("call_end", "is only for a call without closer (the closer already ends it)")
    markers("reasoning", spec.reasoning)
    markers("thought", spec.thought)
    if spec.arguments not in ARGUMENT_STYLES:
        raise bad("arguments", f"is {spec.arguments!r}; known styles: {', '.join(ARGUMENT_STYLES)}")
    if spec.arguments in _DELIMITED:
        text("string_delimiter", spec.string_delimiter, empty_ok=False)
    elif spec.string_delimiter is not None:
        raise bad(
            "string_delimiter", f"is only for the {' and '.join(_DELIMITED)} styles (arguments is {spec.arguments!r})"
        )
    for name in ("argument_key", "argument_value", "parameter"):
        markers(name, getattr(spec, name))
        if getattr(spec, name) is not None and spec.arguments != "xml-values":
            raise bad(name, f"is only for the xml-values style (arguments is {spec.arguments!r})")
    if spec.arguments == "xml-values" and (spec.parameter is None) == (spec.argument_key is None):
        raise bad("parameter", "xml-values needs either parameter or argument_key/argument_value, not both")
    if (spec.argument_key is None) != (spec.argument_value is None):
        raise bad("argument_value", "goes with argument_key: give both or neither")
    text("parameter_padding", spec.parameter_padding)
    if spec.parameter_padding and spec.parameter is None:
        raise bad("parameter_padding", "is only for a format with parameter tags")
    for name in ("call_newlines", "string_arguments"):
        if not isinstance(getattr(spec, name), bool):
            raise bad(name, f"must be True or False, got {getattr(spec, name)!r}")
    text("call_prefill", spec.call_prefill)
    text("closing_turn", spec.closing_turn)
    if not isinstance(spec.grammar, str) or (spec.grammar and not spec.grammar.isidentifier()):
        raise bad("grammar", f"must be an xgrammar structural-tag name (e.g. 'gemma_4') or '', got {spec.grammar!r}")
    if spec.call_prefill and spec.call_prefill != spec.call_open:
        raise bad("call_prefill", f"is the pre-filled call opener ({spec.call_open!r}), got {spec.call_prefill!r}")
    if spec.vocabulary is None:
        text("no_vocabulary", spec.no_vocabulary, empty_ok=False)
    else:
        text("vocabulary", spec.vocabulary, empty_ok=False)
        if spec.no_vocabulary:
            raise bad("no_vocabulary", "is the reason a format has no vocabulary; this one has one")
    strings("unrepresentable", spec.unrepresentable)
    if not isinstance(spec.template_vars, dict) or not all(isinstance(k, str) for k in spec.template_vars):
        raise bad("template_vars", f"must be a dict with string keys, got {spec.template_vars!r}")
    for name in ("declare_tools", "edge_scenarios", "compose_content_before"):
        if getattr(spec, name) is not None and not callable(getattr(spec, name)):
            raise bad(name, f"must be a function or None, got {getattr(spec, name)!r}")
    strings("role_headers", spec.role_headers)
    strings("peers", spec.peers)
    for entry in spec.peers:
        suite, _, selector = entry.partition(":")
        if suite not in PEER_SUITES or not selector.strip("/"):
            raise bad(
                "peers", f"has {entry!r}; each entry is 'SUITE:SELECTOR' with SUITE one of {', '.join(PEER_SUITES)}"
            )
    text("source", spec.source, empty_ok=False)
