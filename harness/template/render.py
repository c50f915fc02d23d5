"""Render a ground-truth :class:`~harness.core.scenarios.Scenario` through a real chat template into a :class:`Case`.

Rendering is transformers' own: ``transformers.utils.chat_template_utils.render_jinja_template`` (sandboxed
jinja2 with ``trim_blocks``/``lstrip_blocks``, its ``tojson``, ``raise_exception``, ``strftime_now``; the
compiled template is cached by transformers, keyed by the template text), with ``bos_token="<bos>"``,
``eos_token="<eos>"``, the format's ``template_vars`` and ``enable_thinking``, run in the render worker within
time, output and memory limits (:mod:`harness.template.bounded`).

How the completion text is cut out of two renders (see :func:`render_scenario`)::

    history = [{"role": "user", "content": HISTORY_USER}]              # fixed, neutral
    full    = render(history + [assistant], add_generation_prompt=False)
    gen     = render(history,               add_generation_prompt=True)
    n       = len(longest common prefix of full and gen), backed off so it never ends inside a marker
    text    = full[n:]  minus one trailing stop marker (+ whitespace after it)
    prefix  = gen[n:]   (what the prompt pre-fills that the full render does not repeat)

Gemma 4 (``google-gemma-4-31B-it.jinja``, llama-cpp-python 0.3.36 sdist), measured:

- thinking off: ``gen`` ends ``<|turn>model\\n<|channel>thought\\n<channel|>`` while ``full`` continues
  ``<|turn>model\\n<|tool_call>call:...``. The character-wise common prefix ends ``...<|turn>model\\n<|``
  (both continuations start with ``<|``); backing off to the marker start gives text ``<|tool_call>...``
  and prefix ``<|channel>thought\\n<channel|>``.
- thinking on (scenario has reasoning): ``gen`` ends ``<|turn>model\\n``, ``full`` continues
  ``<|channel>thought\\nREASONING\\n<channel|><|tool_call>...``: prefix ``""``.
- after the calls the template writes the message content (trimmed) and then ``<|tool_response>`` (the
  stop marker llama.cpp ends generation on); a turn with no calls ends ``<turn|>\\n``.
- reasoning is written only on a turn that has tool calls; content is trimmed (``strip_thinking``).

Hermes JSON family (``NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja``, ``Qwen-Qwen2.5-7B-Instruct.jinja``,
``Qwen-Qwen3-0.6B.jinja``, same sdist), measured:

- ``gen`` ends ``<|im_start|>assistant\\n``; the text is
  ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>`` per call, then ``<|im_end|>\\n`` (the stop marker).
- Qwen 2.5 and Qwen3 write the message content *before* the calls; Hermes 3 drops it (and reasoning).
- Qwen3 with thinking on writes ``<think>\\nREASONING\\n</think>\\n\\n`` first; with thinking off ``gen`` itself
  ends ``<think>\\n\\n</think>\\n\\n``, which the full render repeats, so the prefix is ``""``.
- Hermes 3's tool-declaration macro recurses without end on a parameter typed ``{"type": "null"}`` (a
  string type it does not map is iterated character by character): such a scenario is unrepresentable.

Harmony (``openai-gpt-oss-120b.jinja``, same sdist), measured:

- ``gen`` ends ``<|start|>assistant``; ``full`` continues `` to=functions.NAME<|channel|>commentary json<|message|>``
  ``ARGS<|call|>`` (or ``<|channel|>analysis<|message|>REASONING<|end|><|start|>assistant to=...`` first, or
  ``<|channel|>final<|message|>CONTENT<|return|>`` on a turn without calls): the cut falls right after the role,
  so the text starts inside the first header, where the model starts writing, and the prefix is ``""``.
- transformers fills the message's ``thinking`` (what the template reads) from ``reasoning_content``.
- Three things the template does that the checks below turn into unrepresentable scenarios: it writes only the
  first call of a turn; it writes a tool-call turn's *content* as its analysis (reasoning) message; and it raises
  on a tool-call turn with both content and reasoning. Prose before the calls (``content_before``) cannot be raw
  text in Harmony, so the format module composes it (``compose_content_before``: a commentary preamble message).

Format-neutral checks (any template): a full render that fails while the prompt renders means the template refuses
the turn (unrepresentable); a turn whose last call can be removed without changing the render drops calls; content
of a turn with calls that renders exactly like the same text given as reasoning is written as reasoning. A format's
spec may give ``compose_content_before(completion, prose) -> text`` to place ``content_before`` itself.

Pre-filled reasoning markers (formats with ``FormatSpec.reasoning_markers``), measured on the same sdist:
MiniMax-M2 always ends the prompt ``]~b]ai\\n<think>\\n``; GLM-4.7-Flash ``<|assistant|><think>`` (thinking on) or
``<|assistant|></think>`` (off); Nemotron 3 Nano and DeepSeek V3.1/V3.2 ``<think>`` (on) or ``<think></think>``
(off); Qwen3 ``<think>\\n\\n</think>\\n\\n`` (off). The full render repeats them, so the common prefix would swallow
them: the cut gives them back to ``prefix`` (:func:`split_completion`). When the prompt leaves the block open and
the turn has no reasoning (MiniMax-M2, which always pre-fills ``<think>``), the template's history render writes no
closer at all; a model must close the block before its calls, so the case text starts with the closer
(``text_provenance: composed``).

Errors (all :class:`~harness.core.errors.HarnessError`, messages without tracebacks):
:class:`UnrepresentableError` -- an argument string (key or value) contains one of
``fmt.unrepresentable``, or the template does not write the scenario's reasoning/content;
:class:`TemplateRenderError` -- the template fails to compile or render (Jinja syntax error,
``raise_exception``, an undefined or mistyped value, any exception such as ``{{ 1/0 }}``), naming the template
file, its source, the message and the template line when known; :class:`TemplateLimitError` (a subclass) when a
render passes a bound or kills the worker: never turned into one unrepresentable case.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from typing import Any

from harness.core.cases import Case
from harness.core.errors import TemplateLimitError, TemplateRenderError, UnrepresentableError
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario
from harness.formats import FormatSpec
from harness.template.bounded import RenderFailure, render_bounded
from harness.template.sources import ChatTemplate

__all__ = [
    "render_scenario",
    "render_messages",
    "check_writes_calls",
    "split_completion",
    "declared_tools",
    "HISTORY_USER",
    "BOS",
    "EOS",
    "UnrepresentableError",
    "TemplateRenderError",
]

#: the fixed user turn every scenario is rendered after.
HISTORY_USER = "Please help me with this request, using the tools if they are useful."
BOS = "<bos>"
EOS = "<eos>"
# An unlisted special-token-like tag the cut must not split: <...> with no whitespace, at most 40 chars.
_TAG = re.compile(r"<[^<>\s]{0,40}>")


def render_messages(
    template: ChatTemplate,
    messages: list[dict],
    tools: list | None,
    add_generation_prompt: bool = False,
    **template_vars: Any,
) -> str:
    """Render ``messages`` (and ``tools``) with ``template`` exactly as transformers does; return the text.

    ``template_vars`` go to the template (``enable_thinking``; ``bos_token``/``eos_token`` override
    ``<bos>``/``<eos>``). The render runs in the render worker within the process's render limits
    (:mod:`harness.template.bounded`: time, output size, memory). Raises :class:`TemplateRenderError` naming
    ``template.file``, its source and the failure (Jinja's message and template line, the exception, or the limit
    hit: then :class:`TemplateLimitError`).
    """
    kwargs = {"bos_token": BOS, "eos_token": EOS, **template_vars}
    try:
        return render_bounded(
            template.text, messages=messages, tools=tools, add_generation_prompt=add_generation_prompt, **kwargs
        )
    except RenderFailure as exc:
        where = f"{template.file}" + (f", line {exc.line}" if exc.line else "")
        error = TemplateLimitError if exc.limit else TemplateRenderError
        problem = f"{exc.kind}: {exc.message}"
        raise error(f"chat template {where} ({_origin(template)}) failed to render: {problem}") from None


def _origin(template: ChatTemplate) -> str:
    """Where ``template`` came from, for error messages: ``local_dir /path``, ``sdist llama-cpp-python==0.3.36``."""
    return f"{template.provenance.get('source', '?')} {template.provenance.get('location', '')}".strip()


def _backed_off(n: int, texts: Iterable[str], markers: Iterable[str]) -> int:
    """Move cut ``n`` left until it splits no marker (nor an unlisted ``<tag>``) in any of ``texts``."""
    markers = [m for m in markers if m]
    texts = list(texts)
    moved = True
    while moved and n > 0:
        moved = False
        for text in texts:
            for marker in markers:
                for start in range(max(0, n - len(marker) + 1), n):
                    if text.startswith(marker, start):
                        n, moved = start, True
                        break
            lt = text.rfind("<", 0, n)
            if lt >= 0 and ">" not in text[lt:n]:
                m = _TAG.match(text, lt)
                if m and m.end() > n:
                    n, moved = lt, True
    return n


def _prefill_start(common: str, fmt: FormatSpec) -> int:
    """Where the reasoning markers that end ``common`` (with whitespace between and after them), or the format's
    ``call_prefill``, start: what the generation prompt pre-fills that the full render repeats; ``len(common)``
    when none."""
    start = len(common)
    if fmt.call_prefill and common.endswith(fmt.call_prefill):  # Functionary v3.2's >>>
        return start - len(fmt.call_prefill)
    while fmt.reasoning_markers:
        body = common[:start].rstrip()
        marker = next((m for m in fmt.reasoning_markers if m and body.endswith(m)), None)
        if marker is None:
            return start
        start = len(body) - len(marker)
    return start


def _reasoning_open(prefix: str, fmt: FormatSpec) -> bool:
    """True when ``prefix`` leaves a reasoning block open (its last reasoning marker is the opener)."""
    if len(fmt.reasoning_markers) != 2:
        return False
    opener, closer = fmt.reasoning_markers
    return prefix.rfind(opener) > prefix.rfind(closer)


def _without_repeated_close(prefix: str, completion: str, fmt: FormatSpec) -> str:
    """``completion`` without a leading reasoning closer that a closed pre-filled block already wrote.

    DeepSeek V3.2 (``deepseek-ai-DeepSeek-V3.2.jinja``, thinking off): the prompt ends ``<think></think>`` and the
    history render of the turn starts ``</think>`` again; a model after that prompt writes no second closer."""
    if len(fmt.reasoning_markers) != 2 or fmt.reasoning_markers[1] not in prefix or _reasoning_open(prefix, fmt):
        return completion
    closer = fmt.reasoning_markers[1]
    stripped = completion.lstrip()
    return stripped[len(closer) :] if stripped.startswith(closer) else completion


def _first_turn(completion: str, fmt: FormatSpec) -> str:
    """``completion`` up to the stop marker after which the template starts another assistant turn (a stop marker
    right before one of ``fmt.role_headers``, the last such place, with no call opener or closer after it: not
    text inside a call's string); a model's generation ends there. DeepSeek-R1-Distill-Qwen-32B
    (``deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja`` lines 24-33) writes a turn's calls,
    ``<｜end▁of▁sentence｜>``, then its content as a new ``<｜Assistant｜>`` turn."""
    at, end = -1, 0
    for stop in fmt.stop_markers:
        for header in fmt.role_headers:
            k = completion.rfind(stop + header)
            if k > at:
                at, end = k, k + len(stop)
    if at < 0 or any(m and m in completion[end:] for m in (fmt.call_open, fmt.call_close)):
        return completion
    return completion[:end]


def _without_closing_turn(full: str, gen: str, fmt: FormatSpec) -> tuple[str, str]:
    """Both renders without the turn the template writes after the last message (``fmt.closing_turn``): in the
    full render the last such turn runs to the end; the same text is taken out of the generation prompt, where the
    role header follows it. Command R+ (``CohereForAI-c4ai-command-r-plus-tool_use.jinja`` lines 192-199) ends
    every render with its tool-use instruction as a system turn."""
    at = full.rfind(fmt.closing_turn) if fmt.closing_turn else -1
    if at < 0:
        return full, gen
    turn = full[at:]
    k = gen.rfind(turn)
    return full[:at], gen if k < 0 else gen[:k] + gen[k + len(turn) :]


def split_completion(full: str, gen: str, fmt: FormatSpec) -> tuple[str, str, str]:
    """Cut ``(prefix, completion, stop)`` out of a full render and a generation-prompt render.

    ``completion = full[n:]`` where ``n`` is the common-prefix length backed off to a marker boundary
    (:func:`_backed_off`); ``prefix`` is what the generation prompt pre-fills for the answer: ``gen[n:]``, plus the
    reasoning markers of ``fmt.reasoning_markers`` right before ``n`` that the full render repeats (MiniMax M2's
    ``<think>\\n``, Qwen3's ``<think>\\n\\n</think>\\n\\n`` with thinking off, GLM-4.7's ``</think>``), so the
    prompt always ends with ``prefix`` and the model writes ``completion`` after it. A reasoning closer that a
    closed pre-filled block already wrote is dropped from the start of the completion (DeepSeek V3.2), and a
    second assistant turn the template writes after a stop marker is cut off (:func:`_first_turn`). One
    trailing stop marker of ``fmt.stop_markers`` (with any whitespace after it, e.g. ``<turn|>\\n``) is removed
    from the completion and returned as ``stop`` (``""`` when there is none). A turn the template writes after
    the last message of both renders (``fmt.closing_turn``) is taken out of them first (:func:`_without_closing_turn`).
    """
    full, gen = _without_closing_turn(full, gen, fmt)
    n = 0
    limit = min(len(full), len(gen))
    while n < limit and full[n] == gen[n]:
        n += 1
    n = _backed_off(n, (full, gen), (*fmt.markers, *fmt.stop_markers, BOS, EOS))
    completion, prefix = full[n:], gen[:n][_prefill_start(gen[:n], fmt) :] + gen[n:]
    completion = _first_turn(_without_repeated_close(prefix, completion, fmt), fmt)
    stop = ""
    body = completion.rstrip()
    for marker in sorted(fmt.stop_markers, key=len, reverse=True):
        if marker and body.endswith(marker):
            stop = completion[len(body) - len(marker) :]
            completion = body[: -len(marker)]
            break
    return prefix, completion, stop


def _nulls_blanked(value: Any) -> Any:
    """``value`` with null mapping entries removed and null list items made ``""`` (what a template that skips
    nulls writes alike: MiniMax-M3's ``to_xml``)."""
    if isinstance(value, dict):
        return {k: _nulls_blanked(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return ["" if v is None else _nulls_blanked(v) for v in value]
    return value


def _unrepresentable_in(value: Any, bad: tuple[str, ...]) -> str | None:
    """The first unrepresentable substring found in any string (dict keys included) of ``value``."""
    if isinstance(value, str):
        return next((b for b in bad if b in value), None)
    if isinstance(value, dict):
        for key, item in value.items():
            found = _unrepresentable_in(key, bad) or _unrepresentable_in(item, bad)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for item in value:
            found = _unrepresentable_in(item, bad)
            if found:
                return found
    return None


_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "probe",
        "description": "A plain tool.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "Any text."}},
            "required": ["text"],
        },
    },
}


def _declaration_fault(
    template: ChatTemplate, scenario: Scenario, history: list, tvars: dict, exc: TemplateRenderError
) -> None:
    """Raise :class:`UnrepresentableError` when only the scenario's tool declarations break the template
    (it renders the same prompt with a plain one-string-parameter tool); return otherwise, so the caller
    re-raises ``exc`` (a template that fails on any declaration, or on none, is broken, not this case)."""
    if not scenario.tools or isinstance(exc, TemplateLimitError):
        return
    try:
        render_messages(template, history, [_PROBE_TOOL], add_generation_prompt=True, **tvars)
    except TemplateRenderError:
        return
    raise UnrepresentableError(
        f"case {scenario.id}: {template.file} cannot render this scenario's tool "
        f"declarations ({str(exc).rsplit(': ', 1)[-1]})"
    ) from None


#: the plainest turn with a call: every template of a tool-calling model writes it.
PROBE_SCENARIO = Scenario("template-probe", [_PROBE_TOOL], [ToolCall("probe", {"text": "hello"})])


def check_writes_calls(template: ChatTemplate, fmt: FormatSpec) -> str | None:
    """None when ``template`` writes :data:`PROBE_SCENARIO`'s call (its opener, name and value in the rendered text).

    Otherwise: raises :class:`TemplateRenderError` when the template also renders the same text whatever the
    conversation (an empty or constant template: no case could test a parser), else returns a note saying that the
    rendered slices hold no case with a call (a template that writes a turn's content only: LFM2-8B-A1B). Render
    failures raise as :func:`render_scenario` does."""
    try:
        case = render_scenario(template, PROBE_SCENARIO, fmt)
        text, why = case.prefix + case.text, ""
    except UnrepresentableError as exc:
        text, why = "", str(exc).split(f"{template.file} ", 1)[-1]
    if not why and all(part in text for part in (fmt.call_open, "probe", "hello")):
        return None
    detail = why or f"renders as {text[:80]!r}"
    problem = f"chat template {template.file} ({_origin(template)}) writes no tool call (probe(text='hello'): {detail})"
    tvars = {**fmt.template_vars, "enable_thinking": False}
    one, other = (
        render_messages(template, [{"role": "user", "content": user}], [_PROBE_TOOL], True, **tvars)
        for user in ("one conversation", "another conversation")
    )
    if one == other:
        raise TemplateRenderError(
            f"{problem}; it renders {one[:60]!r} whatever the conversation (an empty or constant template)"
        )
    return f"{problem}: the curated, generated and drift slices hold no case with a call"


def declared_tools(tools: list, fmt: FormatSpec) -> list:
    """``tools`` as the format's templates are given them: completed by ``fmt.declare_tools`` where the format
    has one (a new list; ``tools`` is left alone), else as they are."""
    return fmt.declare_tools(tools) if tools and fmt.declare_tools else tools


def _call_id(index: int) -> str:
    # 9 alphanumerics: the strictest id rule seen (Mistral-Small-3.2's template raises otherwise).
    return f"call{index:05d}"


def render_scenario(template: ChatTemplate, scenario: Scenario, fmt: FormatSpec, slice: str = "curated") -> Case:
    """Render ``scenario`` with ``template`` and return the :class:`Case` a correct parser must pass.

    Messages: ``[{"role": "user", "content": HISTORY_USER}]`` then the assistant turn
    ``{"role": "assistant", "content": scenario.content_after or "", "tool_calls": [{"type": "function",
    "id": "call00000", "function": {"name", "arguments": dict}}, ...]}`` (the dict's JSON string for a format with
    ``string_arguments``; ``tool_calls`` omitted when there are none; content is ``""``, never None: several
    templates print None as text), plus
    ``reasoning_content`` when ``scenario.reasoning`` -- then rendered with ``enable_thinking=True``,
    otherwise ``enable_thinking=False``. Tools: ``scenario.tools`` (:func:`declared_tools`).

    The case (see the module doc for the cut):

    - ``text``: the completion with one stop marker stripped. ``content_before`` is inserted before the first
      ``fmt.call_open`` (after any reasoning block), or prepended when there is none -- or, when the
      template writes the content before the calls (Qwen), before that content; or where the format's
      ``compose_content_before`` puts it (Harmony: a preamble message) -- and ``text_provenance`` is
      ``"composed"``; else ``"full"``.
    - ``prefix``: pre-filled prompt tail (Gemma 4 thinking off: ``<|channel>thought\\n<channel|>``).
    - ``expected``: ``Message(content=(content_before + content_after.strip()).strip() or None,
      reasoning=scenario.reasoning or None, tool_calls=scenario.calls)``.
    - ``id``/``tags``/``seed``/``note`` from the scenario; ``format=fmt.name``; ``tools``; ``slice``;
      ``template=template.summary()`` (source, file, sha256); ``source=f"rendered:{template.file}"``;
      ``extra={"history": [...], "stop": stripped stop text}``.

    Raises :class:`UnrepresentableError` (naming the case) when an argument string contains one of
    ``fmt.unrepresentable``, the rendered text lacks the scenario's calls, reasoning or content (the template
    dropped them, or wrote the content of a turn with calls as its reasoning), only the scenario's tool
    declarations make the template fail, or the template refuses the assistant turn (the prompt renders, the
    turn does not); and :class:`TemplateRenderError` when the template fails otherwise.
    """
    for call in scenario.calls:
        bad = _unrepresentable_in(call.arguments, fmt.unrepresentable) or _unrepresentable_in(
            call.name, fmt.unrepresentable
        )
        if bad:
            raise UnrepresentableError(
                f"case {scenario.id}: call {call.name!r} has a string containing {bad!r}, which the "
                f"{fmt.name} format cannot express (the template has no escape for it)"
            )

    history = [{"role": "user", "content": HISTORY_USER}]
    assistant: dict[str, Any] = {"role": "assistant", "content": scenario.content_after or ""}
    if scenario.calls:
        assistant["tool_calls"] = [
            {
                "type": "function",
                "id": _call_id(i),
                "function": {
                    "name": c.name,
                    "arguments": (
                        json.dumps(c.arguments, ensure_ascii=False)
                        if fmt.string_arguments
                        else copy.deepcopy(c.arguments)
                    ),
                },
            }
            for i, c in enumerate(scenario.calls)
        ]
    thinking = bool(scenario.reasoning)
    if thinking:
        assistant["reasoning_content"] = scenario.reasoning
    tvars = {**fmt.template_vars, "enable_thinking": thinking}
    declared = declared_tools(scenario.tools, fmt)
    tools = declared or None

    try:
        gen = render_messages(template, history, tools, add_generation_prompt=True, **tvars)
    except TemplateRenderError as exc:
        _declaration_fault(template, scenario, history, tvars, exc)
        raise
    try:
        full = render_messages(template, history + [assistant], tools, add_generation_prompt=False, **tvars)
    except TemplateLimitError:
        raise
    except TemplateRenderError as exc:  # the prompt renders: the template refuses this assistant turn itself
        raise UnrepresentableError(
            f"case {scenario.id}: {template.file} refuses this assistant turn ({str(exc).rsplit(': ', 1)[-1]})"
        ) from None
    prefix, completion, stop = split_completion(full, gen, fmt)

    if scenario.calls and fmt.call_open and fmt.call_open not in (prefix if fmt.call_prefill else "") + completion:
        raise UnrepresentableError(
            f"case {scenario.id}: {template.file} does not write tool calls (it has no tool-call section)"
        )

    def ignored(**change: Any) -> bool:
        # The text is found as a substring elsewhere (a short reasoning equal to the content, "me" inside
        # "name"), so whether the template writes a field is checked by rendering the turn without it.
        return (
            render_messages(template, history + [{**assistant, **change}], tools, add_generation_prompt=False, **tvars)
            == full
        )

    if len(scenario.calls) > 1 and ignored(tool_calls=assistant["tool_calls"][:-1]):
        raise UnrepresentableError(
            f"case {scenario.id}: {template.file} does not write every tool call of a turn (it drops the last one)"
        )
    calls = assistant.get("tool_calls", [])
    blanked = [
        {**c, "function": {**c["function"], "arguments": _nulls_blanked(c["function"]["arguments"])}} for c in calls
    ]
    if blanked != calls and ignored(tool_calls=blanked):
        raise UnrepresentableError(
            f"case {scenario.id}: {template.file} does not write null values (it omits the key, or writes nothing)"
        )
    if thinking and ((scenario.reasoning or "") not in prefix + completion or ignored(reasoning_content="")):
        raise UnrepresentableError(
            f"case {scenario.id}: {template.file} does not write the reasoning of this turn"
            + ("" if scenario.calls else " (it writes reasoning only on turns with tool calls)")
        )
    after = (scenario.content_after or "").strip()
    if after and (after not in completion or ignored(content="")):
        raise UnrepresentableError(
            f"case {scenario.id}: {template.file} does not write content_after as given (it rewrites or drops it)"
        )
    if after and scenario.calls and not thinking and ignored(content="", reasoning_content=scenario.content_after):
        raise UnrepresentableError(
            f"case {scenario.id}: {template.file} writes the content of a turn with tool calls as its reasoning"
        )

    text, provenance, floor = completion, "full", 0
    if _reasoning_open(prefix, fmt) and fmt.reasoning_markers[1] not in completion:
        floor = len(fmt.reasoning_markers[1])  # the model closes the open block before anything else
        text, provenance = fmt.reasoning_markers[1] + completion, "composed"
    compose = fmt.compose_content_before
    if scenario.content_before and compose is not None:  # the format says where prose before the calls goes
        text, provenance = compose(text, scenario.content_before), "composed"
    elif scenario.content_before:
        at = text.find(fmt.call_open) if fmt.call_open else -1
        at = at if at >= 0 else floor
        written = text.rfind(after, floor, at) if after and at > floor else -1
        if written >= 0 and not text[written + len(after) : at].strip():
            at = written  # the template writes the content right before the calls (Qwen): prose goes first
        text = text[:at] + scenario.content_before + text[at:]
        provenance = "composed"

    content = (scenario.content_before + after).strip() or None
    expected = Message(
        content=content, reasoning=scenario.reasoning or None, tool_calls=copy.deepcopy(list(scenario.calls))
    )
    return Case(
        id=scenario.id,
        format=fmt.name,
        text=text,
        expected=expected,
        tools=declared,
        prefix=prefix,
        slice=slice,
        tags=list(scenario.tags),
        source=f"rendered:{template.file}",
        text_provenance=provenance,
        note=scenario.note,
        seed=scenario.seed,
        template=template.summary(),
        extra={"history": history, "stop": stop},
    )
