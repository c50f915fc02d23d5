"""Capture runs: suite prompts → a backend → capture records (:mod:`harness.capture.records`), and their scoring.

:func:`run_capture` renders each prompt through the model's chat template (:func:`render_prompt`), sends it to a
backend (:mod:`harness.capture.backends`) — up to ``backend.max_concurrency`` at once — and appends one record per
prompt to a capture file as each answer arrives. A file that already holds a successful capture for the same prompt,
backend, model sha256, library versions, sampling, forcing, options and rendered prompt is reused: an
interrupted run resumes, and re-scoring never re-generates. Failed captures are kept in the file and captured
again on the next run.

:func:`score_captures` judges every parser on the latest capture of each prompt (one-shot on the raw text,
streaming on the recorded pieces with their token ids), and the server's own parse where a server in chat
mode sent one (parser ``server:NAME``).

Fixture runs (``force=True``) make the model write the reference answer of each prompt (:func:`reference_text`:
the expected calls with their pinned arguments, rendered through the same template), so the whole pipeline —
prompt rendering, generation, token ids, pieces, parsing — runs on a known answer.
"""

from __future__ import annotations

import concurrent.futures as futures
import copy
import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from jsonschema import Draft202012Validator

from harness.capture.backends import Backend, BackendError, Generation, Request, Sampling, create_backend
from harness.capture.backends._budget import BYTES_PER_TOKEN, DEADLINE_S
from harness.capture.backends.openai import check_base_url
from harness.capture.records import Capture, CaptureWriter, read_captures
from harness.capture.suites import Prompt, SuiteError, load_suite, suite_names
from harness.capture.weights import locate_weights, server_weights
from harness.core.errors import HarnessError, UnrepresentableError
from harness.core.guards import check_interrupted
from harness.core.jsonl import read_json
from harness.core.messages import ToolCall
from harness.core.paths import FEWSHOT_DIR
from harness.core.scenarios import Scenario
from harness.formats import FormatSpec
from harness.template.render import BOS, declared_tools, render_messages, render_scenario, split_completion
from harness.template.sources import ChatTemplate

NO_TOOL_ANSWER = "I can answer that directly, without calling a tool."
MAX_FAILURES_IN_A_ROW = 5  # a dead server or a broken model: stop instead of failing every prompt


def load_examples(name: str) -> list[dict]:
    """Few-shot turns ``corpora/fewshot/NAME.json`` (or ``name`` itself when it ends in ``.json``: a JSON list of
    chat messages; assistant turns may carry ``tool_calls``) put before each prompt's messages. Raises
    :class:`HarnessError` naming the file."""
    path = Path(name) if name.endswith(".json") else FEWSHOT_DIR / f"{name}.json"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in FEWSHOT_DIR.glob("*.json")))
        raise HarnessError(f"no few-shot file {path} (known: {known})")
    messages = read_json(path, HarnessError, "few-shot")
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages
    ):
        raise HarnessError(f"{path}: must be a JSON list of messages with a 'role'")
    return messages


def render_prompt(template: ChatTemplate, fmt: FormatSpec, prompt: Prompt) -> tuple[str, str]:
    """``(prompt_text, prefix)``: the prompt rendered with ``add_generation_prompt=True`` and thinking off, and
    the part of its end the template pre-fills for the answer (Gemma 4: ``<|channel>thought\\n<channel|>``), cut
    as :func:`harness.template.render.split_completion` cuts rendered cases. Raises ``TemplateRenderError``."""
    tvars = {**fmt.template_vars, "enable_thinking": False}
    tools = declared_tools(prompt.tools, fmt)
    gen = render_messages(template, prompt.messages, tools, add_generation_prompt=True, **tvars)
    full = render_messages(template, prompt.messages + [{"role": "assistant", "content": "x"}], tools, **tvars)
    prefix, _, _ = split_completion(full, gen, fmt)
    return gen, prefix


def reference_arguments(prompt: Prompt, index: int) -> dict:
    """Arguments of expected call ``index`` that satisfy it: the pinned values, plus each ``contains`` key as its
    substrings joined by newlines. Raises ``UnrepresentableError`` when the tool's schema rejects them."""
    want = prompt.calls[index]
    arguments = copy.deepcopy(want.pinned)
    for key, needles in want.contains.items():
        arguments.setdefault(key, "\n".join(needles))
    tool = prompt.tool(want.name)
    if tool is None:  # load_suite rejects such a prompt; one built by hand may not be checked
        raise UnrepresentableError(f"{prompt.id}: expected call {want.name!r} names no declared tool")
    schema = tool.get("parameters", {})
    error = next(iter(Draft202012Validator(schema).iter_errors(arguments)), None)
    if error is not None:
        raise UnrepresentableError(
            f"{prompt.id}: the pinned arguments of call {index} are not a full valid call "
            f"({error.message}); it cannot be forced"
        )
    return arguments


def reference_text(template: ChatTemplate, fmt: FormatSpec, prompt: Prompt) -> str:
    """The completion a model trained on ``template`` writes for ``prompt``'s expected answer: the expected
    calls with :func:`reference_arguments`, or a one-line prose answer when no call is expected."""
    calls = [ToolCall(call.name, reference_arguments(prompt, i)) for i, call in enumerate(prompt.calls)]
    scenario = Scenario(id=prompt.id, tools=prompt.tools, calls=calls, content_after="" if calls else NO_TOOL_ANSWER)
    return render_scenario(template, scenario, fmt, slice="capture").text


@dataclass
class CaptureRun:
    """What :func:`run_capture` did: the capture file, the latest capture per prompt (prompt order), how many
    were reused from the file and how many generated now."""

    path: Path
    captures: list[Capture]
    reused: int
    generated: int
    stopped: str = ""  # why generation stopped early (consecutive failures), else ""
    torn: list[str] = dataclasses.field(default_factory=list)  # torn last line of the file skipped and cut off

    @property
    def errors(self) -> int:
        return sum(1 for c in self.captures if c.error is not None)


def run_capture(
    prompts: list[Prompt],
    backend: Backend,
    template: ChatTemplate,
    fmt: FormatSpec,
    path: Path,
    *,
    sampling: Sampling,
    force: bool = False,
    options: dict | None = None,
    examples: list | None = None,
    on_capture: Callable[[Capture], None] | None = None,
) -> CaptureRun:
    """Capture ``prompts`` with ``backend`` into the JSON Lines file ``path`` (created or appended).

    ``force`` makes fixture models write :func:`reference_text`; ``examples`` (few-shot turns) go before each
    prompt's messages; ``options`` (backend settings such as the server URL or mode, the few-shot file name)
    are recorded, and a capture is reused only with the same options. ``on_capture`` is called after each
    record is written (progress). A template that cannot render a prompt raises; a failed generation is recorded
    with its error; after :data:`MAX_FAILURES_IN_A_ROW` failed generations in a row the run stops
    (``CaptureRun.stopped`` says why)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    model = backend.weights.to_json()
    versions = backend.versions()
    options = dict(options or {})
    planned = {p.id: _request(p, template, fmt, sampling, force, examples or []) for p in prompts}
    torn: list[str] = []
    latest = _reusable(
        torn,
        path,
        backend.name,
        model,
        versions,
        sampling,
        force,
        options,
        {pid: r.prompt_text for pid, r in planned.items()},
    )
    todo = [p for p in prompts if p.id not in latest]
    requests = [planned[p.id] for p in todo]
    generated, failures_in_a_row, stopped = 0, 0, ""
    with CaptureWriter(path) as writer:  # cuts a torn last line off
        for prompt, request, generation in _generate_all(backend, requests, todo):
            capture = Capture(
                prompt_id=prompt.id,
                suite=prompt.suite,
                format=fmt.name,
                backend=backend.name,
                model=model,
                text=None if generation.error and not generation.pieces else generation.text,
                pieces=[[text, list(ids)] for text, ids in generation.pieces],
                prefix=request.prefix,
                prompt_text=request.prompt_text,
                finish_reason=generation.finish_reason,
                elapsed_s=round(generation.elapsed_s, 4),
                tokens=generation.tokens,
                sampling=sampling.to_json(),
                seed=sampling.seed,
                versions=versions,
                error=generation.error,
                server_message=generation.server_message,
                forced=force,
                options=options,
            )
            writer.write(capture)
            latest[prompt.id] = capture
            generated += 1
            if on_capture:
                on_capture(capture)
            failures_in_a_row = failures_in_a_row + 1 if capture.error else 0
            if failures_in_a_row >= MAX_FAILURES_IN_A_ROW and generated < len(todo):
                stopped = (
                    f"capture stopped after {failures_in_a_row} failures in a row ({len(todo) - generated} "
                    f"prompts not attempted); last: {capture.error}"
                )
                break
    captures = [latest[p.id] for p in prompts if p.id in latest]
    return CaptureRun(path, captures, len(prompts) - len(todo), generated, stopped, torn)


def _request(
    prompt: Prompt, template: ChatTemplate, fmt: FormatSpec, sampling: Sampling, force: bool, examples: list
) -> Request:
    shown = dataclasses.replace(prompt, messages=examples + prompt.messages) if examples else prompt
    prompt_text, prefix = render_prompt(template, fmt, shown)
    return Request(
        prompt_id=prompt.id,
        prompt_text=prompt_text,
        prefix=prefix,
        sampling=sampling,
        messages=shown.messages,
        tools=declared_tools(prompt.tools, fmt),
        stop=fmt.stop_markers,
        force_text=reference_text(template, fmt, prompt) if force else None,
    )


def _generate_all(backend: Backend, requests: list[Request], prompts: list[Prompt]) -> Iterable:
    """``(prompt, request, generation)`` as generations finish, at most ``backend.max_concurrency`` at once."""
    if backend.max_concurrency <= 1:
        for prompt, request in zip(prompts, requests, strict=False):
            check_interrupted()
            yield prompt, request, backend.generate(request)
        return
    pool = futures.ThreadPoolExecutor(max_workers=backend.max_concurrency)
    try:
        running = {pool.submit(backend.generate, r): (p, r) for p, r in zip(prompts, requests, strict=False)}
        for done in futures.as_completed(running):
            prompt, request = running[done]
            try:
                generation = done.result()
            except Exception as exc:  # a backend must not raise; record it if one does
                generation = Generation(error=f"{type(exc).__name__}: {exc}")
            yield prompt, request, generation
    finally:  # the caller stopped (failures in a row, Ctrl-C): requests not started are cancelled
        pool.shutdown(wait=True, cancel_futures=True)


def _reusable(
    torn: list[str],
    path: Path,
    backend: str,
    model: dict,
    versions: dict,
    sampling: Sampling,
    force: bool,
    options: dict,
    prompt_texts: dict[str, str],
) -> dict[str, Capture]:
    """Successful captures already in ``path`` made the same way: same backend, model file and sha256, library
    versions (for a server: the models it serves), sampling, forcing, options, and the same rendered prompt
    (so a changed template, few-shot file or suite prompt generates again). A torn last line is reported to
    ``torn`` and not reused."""
    if not path.exists():
        return {}
    found = {}
    for capture in read_captures(path, torn):
        if (
            capture.backend == backend
            and capture.model.get("sha256") == model["sha256"]
            and capture.model.get("file") == model["file"]
            and capture.versions == versions
            and capture.sampling == sampling.to_json()
            and capture.forced == force
            and capture.options == options
            and capture.prompt_text == prompt_texts.get(capture.prompt_id)
        ):
            if capture.error is None:
                found[capture.prompt_id] = capture
            else:
                found.pop(capture.prompt_id, None)
    return found


def capture_stats(captures: list[Capture], fmt: FormatSpec) -> list[dict]:
    """Per suite: ``{suite, prompts, errors, wrote_call (raw text holds the call opener), finish (counts),
    tokens, tokens_per_s}`` — how often the model tried a call at all, independent of any parser."""
    by_suite: dict[str, list[Capture]] = {}
    for capture in captures:
        by_suite.setdefault(capture.suite, []).append(capture)
    rows = []
    for suite, items in by_suite.items():
        ok = [c for c in items if c.error is None]
        tokens = sum(c.tokens for c in ok)
        seconds = sum(c.elapsed_s for c in ok)
        finish: dict[str, int] = {}
        for c in ok:
            finish[c.finish_reason or "?"] = finish.get(c.finish_reason or "?", 0) + 1
        rows.append(
            {
                "suite": suite,
                "prompts": len(items),
                "errors": len(items) - len(ok),
                "wrote_call": sum(1 for c in ok if fmt.call_open and fmt.call_open in (c.text or "")),
                "finish": finish,
                "tokens": tokens,
                "tokens_per_s": round(tokens / seconds, 1) if seconds else 0.0,
            }
        )
    return rows


def capture_key(backend: str, model_sha256: str) -> str:
    """File name of a model's capture file for a backend: ``<backend>-<sha256[:12]>.jsonl``."""
    return f"{backend}-{model_sha256[:12] or 'server'}.jsonl"


@dataclass(frozen=True)
class CaptureSettings:
    """How ``eval`` (and ``capture``) capture: ``backend`` (a :func:`harness.capture.backends.known_backends` name),
    ``suites`` (names or files; empty: every shipped suite), ``limit`` (first N prompts of each suite),
    ``sampling``, ``force`` (fixture models write the reference answers), ``grammar`` (GBNF), for ``openai``:
    ``base_url``, ``server_mode`` (``completions`` or ``chat``), ``concurrency``, ``server_name``, and the
    per-request limits ``deadline_s`` and ``bytes_per_token`` (:mod:`harness.capture.backends._budget`; not
    recorded: a capture made within any limits is the same capture);
    ``files``: score these capture files instead of generating; ``out_dir``: where capture files go;
    ``examples``: few-shot turns before every prompt (:func:`load_examples`). Raises
    :class:`~harness.capture.backends.BackendError` for a ``base_url`` that is not http(s)."""

    backend: str
    suites: tuple[str, ...] = ()
    limit: int | None = None
    sampling: Sampling = Sampling()
    force: bool = False
    grammar: str | None = None
    base_url: str | None = None
    server_mode: str = "completions"
    concurrency: int = 4
    server_name: str | None = None
    files: tuple[Path, ...] = ()
    out_dir: Path | None = None
    examples: str | None = None
    deadline_s: float = DEADLINE_S
    bytes_per_token: int = BYTES_PER_TOKEN

    def __post_init__(self) -> None:
        if self.base_url is not None:
            check_base_url(self.base_url)

    def recorded_options(self) -> dict:
        """What each capture records as ``options`` (backend settings plus the few-shot file name)."""
        return {**self.backend_options(), **({"examples": self.examples} if self.examples else {})}

    def backend_options(self) -> dict:
        """Options recorded with each capture and given to the backend's ``create``."""
        if self.backend == "openai":
            # servers add their own BOS to a completions prompt: the template's is stripped (no double BOS)
            return {
                "base_url": self.base_url,
                "mode": self.server_mode,
                "concurrency": self.concurrency,
                **({"strip_bos": BOS} if self.server_mode == "completions" else {}),
                **({"server_name": self.server_name} if self.server_name else {}),
            }
        return {"grammar": self.grammar} if self.grammar and self.backend == "llama-cpp" else {}


def load_prompts(suites: Iterable[str], limit: int | None = None) -> list[Prompt]:
    """The prompts of ``suites`` (names or files; empty: every shipped suite), the first ``limit`` of each.
    Raises :class:`harness.capture.suites.SuiteError` (file:line) for a bad suite and for an id in two suites."""

    prompts: list = []
    seen: dict = {}
    for suite in list(suites) or suite_names():
        for prompt in load_suite(suite)[:limit]:
            if prompt.id in seen:
                raise SuiteError(f"{prompt.source}: id {prompt.id!r} also in {seen[prompt.id]}")
            seen[prompt.id] = prompt.source
            prompts.append(prompt)
    return prompts


def open_backend(settings: CaptureSettings, entry, *, gguf: str | None = None, model_dir: str | None = None) -> Backend:
    """Locate the weights (:func:`harness.capture.weights.locate_weights`; for ``openai`` the server URL) and start the
    backend. Raises :class:`harness.capture.weights.WeightsNotFound` or
    :class:`harness.capture.backends.BackendError`."""
    if settings.backend == "openai":
        if not settings.base_url:
            raise BackendError("the openai backend needs a server URL: BASE_URL=http://127.0.0.1:8080 (--base-url)")
        weights = server_weights(entry.name, settings.base_url)
        limits = {"deadline_s": settings.deadline_s, "bytes_per_token": settings.bytes_per_token}
        return create_backend(settings.backend, weights, **settings.backend_options(), **limits)
    weights = locate_weights(entry, settings.backend, gguf=gguf, model_dir=model_dir)
    return create_backend(settings.backend, weights, **settings.backend_options())


def capture_with(
    settings: CaptureSettings,
    prompts: list[Prompt],
    backend: Backend,
    template: ChatTemplate,
    fmt: FormatSpec,
    path: Path,
    *,
    examples: list | None = None,
    on_capture: Callable[[Capture], None] | None = None,
) -> CaptureRun:
    """:func:`run_capture` with the sampling, ``force`` flag and recorded options of ``settings``."""
    return run_capture(
        prompts,
        backend,
        template,
        fmt,
        path,
        sampling=settings.sampling,
        force=settings.force,
        options=settings.recorded_options(),
        examples=examples,
        on_capture=on_capture,
    )


def latest_captures(paths: Iterable[Path], torn: list[str] | None = None) -> list[Capture]:
    """The last record of each prompt across capture files (a later success replaces an earlier failure); a torn
    last line of a file is reported to ``torn`` and skipped (raises :class:`CaptureFileError` when ``torn`` is None)."""
    latest: dict[str, Capture] = {}
    for path in paths:
        for capture in read_captures(path, torn):
            latest[capture.prompt_id] = capture
    return list(latest.values())
