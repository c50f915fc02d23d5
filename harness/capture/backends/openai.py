"""Capture from any OpenAI-compatible server: llama-server, ``python -m llama_cpp.server``, vLLM, SGLang, LM Studio,
Ollama, FastFlowLM / Lemonade NPU runtimes.

``create(weights, base_url=..., mode=...)`` returns an :class:`OpenAIBackend` (the
:class:`~harness.capture.backends.Backend` protocol). Two modes:

- ``completions``: ``POST {base_url}/v1/completions`` with ``prompt`` = the rendered prompt (the harness' own
  template rendering, special tokens as text), ``max_tokens``, ``temperature``, ``top_p``, ``seed``,
  ``stream: true``, ``stop`` (the request's stop strings; the server leaves them out of the text and reports
  ``finish_reason`` ``stop``) and ``grammar`` when the request has one (llama.cpp servers accept a GBNF
  ``grammar``; others ignore unknown fields or reject them). A request's ``force_text`` is sent as a grammar
  holding that literal text (text-level only: the server picks the tokens) and checked on return. Each streamed
  ``choices[0].text`` is one piece; token ids are ``[]`` unless the server sends integer ``tokens`` with the
  chunk (llama.cpp's ``return_tokens``).
- ``chat``: ``POST {base_url}/v1/chat/completions`` with ``messages`` and ``tools``: the server renders the
  template and parses the calls itself. Content deltas are the pieces; ``reasoning_content`` / ``reasoning``
  deltas and ``tool_calls`` deltas (assembled by ``index``) make ``Generation.server_message``
  ``{"content", "reasoning", "tool_calls": [{"name", "arguments"}]}``, which :func:`server_parser` scores as a
  parser named after the server.

``Generation.elapsed_s`` is the wall time of ``generate`` (retries and backoff included); ``Generation.tokens`` is
``usage.completion_tokens`` when the server sends usage in the stream (servers that honour OpenAI's
``extra_body={"stream_options": {"include_usage": True}}`` send a last chunk with ``usage`` and no choices;
llama-cpp-python 0.3.36 never does: 0).

Protocol facts, failure strings, limits (deadline, byte cap), retries and thread safety: ``docs/capture/openai.md``.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from typing import Any, cast
from urllib.parse import urlsplit

from harness.capture.backends import BackendError, Generation, OnPiece, Request, Weights
from harness.capture.backends._budget import BYTES_PER_TOKEN, DEADLINE_S, ERROR_BODY_BYTES, Budget, Overrun, SSEBody
from harness.capture.backends._openai_stream import StreamState
from harness.capture.server_parse import ServerParser, server_parser

MODES = ("completions", "chat")
RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))
BODY_SNIPPET = 300
MODELS_BYTES = 1 << 20  # bytes of a GET /v1/models answer read
MODELS_S = 10.0  # seconds a GET /v1/models may take (at most the read timeout and the request deadline)


def create(
    weights: Weights | None = None,
    base_url: str | None = None,
    mode: str = "completions",
    model: str | None = None,
    timeout_s: float = 120.0,
    retries: int = 3,
    backoff_s: float = 0.5,
    concurrency: int = 4,
    api_key: str | None = None,
    server_name: str | None = None,
    extra_body: dict | None = None,
    strip_bos: str | None = None,
    transport=None,
    deadline_s: float = DEADLINE_S,
    bytes_per_token: int = BYTES_PER_TOKEN,
) -> OpenAIBackend:
    """An :class:`OpenAIBackend` for the server at ``base_url``.

    - ``weights``: what the catalog knows of the model (its ``name`` is kept); the backend's own ``weights`` has
      ``kind="server"`` and ``path=base_url``. When ``base_url`` is omitted, ``weights.path`` is the URL.
    - ``base_url``: ``http(s)://host:port`` with or without a trailing ``/v1`` (``/v1/completions`` is appended
      to the root); any other path prefix is kept (``http://h/proxy`` → ``http://h/proxy/v1/completions``).
    - ``mode``: ``completions`` (raw prompt) or ``chat`` (``messages`` + ``tools``, the server parses calls).
    - ``model``: the ``model`` field sent; None: the first id of ``GET /v1/models`` (looked up once), or no field
      when that fails.
    - ``timeout_s``: seconds without a byte before a read times out (connect: at most 10 s); ``retries``: retries
      after the first attempt (``retries=3``: up to 4 attempts); ``backoff_s``: first retry delay in seconds,
      doubled each retry; ``concurrency``: ``max_concurrency`` and the connection pool size.
    - ``api_key``: sent as ``Authorization: Bearer``; ``server_name``: names the server's own parser
      (``server:<server_name>``, e.g. ``llama-cpp-python==0.3.36``), default ``openai@host:port``.
    - ``extra_body``: fields merged into every request body last (``tool_choice``, ``chat_template_kwargs``,
      ``logit_bias``, ...).
    - ``strip_bos``: completions mode: this text (``"<bos>"``) is removed from the start of the prompt before it
      is sent, for servers that add BOS themselves: llama-cpp-python 0.3.36 (``Llama._create_completion``)
      prepends BOS when the GGUF's ``tokenizer.ggml.add_bos_token`` is true and tokenizes the text with special
      tokens, so a template-rendered ``<bos>`` makes two BOS tokens (measured: ``usage.prompt_tokens`` 2 for
      ``Hi``, 3 for ``<bos>Hi`` with the micro Gemma 4).
    - ``transport``: an ``httpx`` transport to use instead of the network (tests: ``httpx.MockTransport``).
    - ``deadline_s``: seconds one prompt may take, every attempt and backoff included; ``bytes_per_token``: a
      response may hold 64 KiB plus this many bytes per ``max_tokens`` token (:mod:`._budget`).

    Contacts nothing. Raises :class:`BackendError` for an unknown mode, a URL that is not http(s), a missing
    ``base_url`` or a limit out of range."""
    if mode not in MODES:
        raise BackendError(f"openai backend: unknown mode {mode!r}; known: {', '.join(MODES)}")
    url = base_url or (weights.path if weights is not None and weights.kind == "server" else None)
    if not url:
        raise BackendError("openai backend: base_url is required (the server's http://host:port)")
    check_base_url(url)
    if concurrency < 1 or retries < 0 or not timeout_s > 0 or backoff_s < 0:
        raise BackendError("openai backend: concurrency >= 1, retries >= 0, timeout_s > 0, backoff_s >= 0")
    if not 0 < deadline_s <= 86400 or bytes_per_token < 1:
        raise BackendError("openai backend: 0 < deadline_s <= 86400 and bytes_per_token >= 1")
    return OpenAIBackend(
        weights,
        url,
        mode,
        model,
        timeout_s,
        retries,
        backoff_s,
        concurrency,
        api_key,
        server_name,
        extra_body or {},
        strip_bos,
        transport,
        deadline_s,
        bytes_per_token,
    )


def check_base_url(url: str) -> str:
    """``url`` when it is ``http(s)://host[:port][/path]``; raises :class:`BackendError` naming it otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BackendError(f"openai backend: base_url must be http(s)://host:port, got {url!r}")
    return url


@dataclass
class _Outcome:
    """One attempt's result: the generation and whether a retry may repeat it (nothing was delivered)."""

    generation: Generation
    retryable: bool = False


class OpenAIBackend:
    """See the module docstring. Attributes: ``name`` (``openai``), ``weights`` (``kind="server"``,
    ``path=base_url``), ``max_concurrency``, ``mode``, ``base_url``, ``server_name``; :meth:`stats` counts
    requests, attempts and the peak number of requests in flight."""

    name = "openai"

    def __init__(
        self,
        weights: Weights | None,
        base_url: str,
        mode: str,
        model: str | None,
        timeout_s: float,
        retries: int,
        backoff_s: float,
        concurrency: int,
        api_key: str | None,
        server_name: str | None,
        extra_body: dict,
        strip_bos: str | None = None,
        transport=None,
        deadline_s: float = DEADLINE_S,
        bytes_per_token: int = BYTES_PER_TOKEN,
    ):
        import httpx  # a dependency of the project; imported here so listing backends stays cheap

        self._httpx = httpx
        self.base_url = base_url
        self.root = _api_root(base_url)
        self.mode = mode
        self.model = model
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_concurrency = concurrency
        self.extra_body = dict(extra_body)
        self.strip_bos = strip_bos
        self.deadline_s, self.bytes_per_token = deadline_s, bytes_per_token
        self.server_name = server_name or f"openai@{urlsplit(base_url).netloc}"
        source = f"OpenAI-compatible server at {base_url} ({mode} mode)"
        self.weights = (
            replace(weights, path=base_url, kind="server", source=source, sha256="")
            if weights is not None
            else Weights(base_url, "server", source, "", model or "")
        )
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=concurrency + 2, max_keepalive_connections=concurrency),
            transport=transport,
        )
        self._lock = threading.Lock()
        self._model_resolved = model is not None
        self._models_failed: Exception | None = None  # a GET /v1/models answered past its limits: not asked again
        self._versions: dict[str, str] | None = None
        self._stats = {
            "requests": 0,
            "attempts": 0,
            "in_flight": 0,
            "peak_in_flight": 0,
            "open_streams": 0,
            "peak_open_streams": 0,
        }

    # -- Backend protocol -------------------------------------------------------------------------------------

    def versions(self) -> dict[str, str]:
        """``httpx``, ``httpx-sse`` and ``tenacity`` versions, plus what the server tells: ``server`` (its
        ``Server`` response header, e.g. ``uvicorn``), ``server_models`` (the ``GET /v1/models`` ids, comma
        separated, or ``unavailable: <why>``), ``server_name`` and ``mode``. Asks the server once per backend
        (again while it was unreachable)."""
        if self._versions is not None:
            return dict(self._versions)
        out = {name: _dist_version(name) for name in ("httpx", "httpx-sse", "tenacity")}
        out["mode"] = self.mode
        out["server_name"] = self.server_name
        reachable = False
        try:
            status, server, data = self._get_models()
            out["server"] = server
            if status >= 400:
                out["server_models"] = f"unavailable: HTTP {status}"
            else:
                out["server_models"] = ",".join(_model_ids(data))
                reachable = True
        except Exception as exc:  # noqa: BLE001 - recorded, never raised
            out["server_models"] = f"unavailable: {type(exc).__name__}: {exc}"
        if reachable:
            self._versions = out
        return dict(out)

    def generate(self, request: Request, on_piece: OnPiece | None = None) -> Generation:
        """Stream one completion for ``request``; ``on_piece(text, token_ids)`` is called for each piece as it
        arrives (completions: each non-empty ``choices[0].text``; chat: each non-empty ``delta.content``).

        Returns a :class:`Generation` (pieces ``[(text, [token ids])]``, ``finish_reason``, ``server_message`` in
        chat mode, ``error`` on failure: see the module docstring). Never raises: an exception anywhere,
        ``on_piece`` included, becomes ``error``."""
        from tenacity import RetryCallState, Retrying, retry_if_result

        self._count("requests")
        attempts, started, out_of_time = 0, time.monotonic(), False
        budget = Budget.start(self.deadline_s, request.sampling.max_tokens, self.bytes_per_token)

        def backoff(state: RetryCallState) -> float:
            return min(30.0, self.backoff_s * 2 ** (state.attempt_number - 1))

        def stop(state: RetryCallState) -> bool:  # out of attempts, or no time left for the wait and a retry
            nonlocal out_of_time
            out_of_time = state.attempt_number <= self.retries and budget.left() <= backoff(state)
            return state.attempt_number > self.retries or out_of_time

        def last_result(state: RetryCallState) -> Any:
            assert state.outcome is not None  # tenacity calls this after the last attempt
            return state.outcome.result()

        def attempt() -> _Outcome:
            nonlocal attempts
            attempts += 1
            return self._attempt(request, on_piece, budget)

        try:
            retrying = Retrying(
                stop=stop,
                wait=backoff,
                retry=retry_if_result(lambda outcome: outcome.retryable),
                retry_error_callback=last_result,
                reraise=True,
            )
            generation = retrying(attempt).generation
        except Exception as exc:  # noqa: BLE001 - a backend returns failures
            return Generation(error=f"exception: {type(exc).__name__}: {exc}", elapsed_s=time.monotonic() - started)
        generation.elapsed_s = time.monotonic() - started
        if generation.error and attempts > 1:
            generation.error += f" (after {attempts} attempts)"
        if generation.error and out_of_time:
            generation.error += f"; not retried: the {self.deadline_s:g} s deadline (--request-deadline) is near"
        if generation.error is None and request.force_text is not None and generation.text != request.force_text:
            generation.error = (
                f"the server did not honour force_text (sent as a literal GBNF grammar): expected "
                f"{request.force_text[:80]!r}, got {generation.text[:80]!r}"
            )
        return generation

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    # -- helpers for the capture runner ------------------------------------------------------------------------

    def server_parser(self, server_message: dict | None) -> ServerParser:
        """:func:`server_parser` named after this backend's ``server_name``."""
        return server_parser(self.server_name, server_message)

    def stats(self) -> dict[str, int]:
        """Counters since creation: ``requests`` (``generate`` calls), ``attempts`` (HTTP requests sent),
        ``in_flight``/``peak_in_flight`` (requests sent and not finished, now / at most),
        ``open_streams``/``peak_open_streams`` (responses the server had started, 2xx headers received, and not
        finished: proof the server held that many requests at once)."""
        with self._lock:
            return dict(self._stats)

    # -- internals ---------------------------------------------------------------------------------------------

    def _count(self, key: str, step: int = 1) -> None:
        with self._lock:
            self._stats[key] += step
            peak = f"peak_{key}"
            if peak in self._stats:
                self._stats[peak] = max(self._stats[peak], self._stats[key])

    def _resolve_model(self, budget: Budget) -> str | None:
        """The ``model`` field to send: the one given, else the first id of ``GET /v1/models`` (asked within
        what is left of the request's ``budget``), else None (no field)."""
        with self._lock:
            if self._model_resolved:
                return self.model
        if budget.left() <= 0:
            return None
        try:
            status, _, data = self._get_models(budget.left())
            ids = _model_ids(data) if status < 400 else []
        except Exception:  # noqa: BLE001 - no model field then; the request itself reports the problem
            return None
        with self._lock:
            if not self._model_resolved:
                self.model, self._model_resolved = (ids[0] if ids else None), True
            return self.model

    def _get_models(self, limit_s: float = MODELS_S) -> tuple[int, str, Any]:
        """``(status, Server header, JSON or None)`` of ``GET /v1/models``: at most :data:`MODELS_BYTES` bytes and
        :data:`MODELS_S` seconds (no more than ``limit_s``, the read timeout or the request deadline). Raises what
        httpx raises, :class:`Overrun` or ``ValueError``. A server that answered but not within the limits (a
        list that never ends, ``: ping`` forever, silence) is not asked again: its failure is raised at once, so
        it costs its seconds once per backend, not once per prompt; a connection error is asked again (the server
        may be starting)."""
        with self._lock:
            failed = self._models_failed
        if failed is not None:
            raise failed.with_traceback(None)
        seconds = float(f"{max(0.0, min(self.timeout_s, MODELS_S, self.deadline_s, limit_s)):.2g}")  # as shown
        budget = Budget.start(seconds, 0)
        try:
            with self._client.stream("GET", f"{self.root}/v1/models", timeout=seconds) as response:
                body, cut = budget.read(response, MODELS_BYTES)
                if cut:
                    raise ValueError(f"GET /v1/models answered more than {MODELS_BYTES} bytes")
                data = json.loads(body) if response.status_code < 400 else None
                return response.status_code, response.headers.get("server", ""), data
        except (Overrun, ValueError, self._httpx.ReadTimeout) as exc:
            with self._lock:
                self._models_failed = exc
            raise

    def _body(self, request: Request, budget: Budget) -> tuple[str, dict]:
        sampling = request.sampling
        body: dict[str, Any] = {
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "seed": sampling.seed,
            "stream": True,
        }
        model = self._resolve_model(budget)
        if model is not None:
            body["model"] = model
        grammar = request.grammar
        if grammar is None and request.force_text is not None:
            grammar = f"root ::= {gbnf_literal(request.force_text)}"
        if grammar is not None:
            body["grammar"] = grammar
        if request.stop:
            body["stop"] = list(request.stop)
        if self.mode == "completions":
            path = "/v1/completions"
            prompt = request.prompt_text
            if self.strip_bos and prompt.startswith(self.strip_bos):
                prompt = prompt[len(self.strip_bos) :]
            body["prompt"] = prompt
        else:
            path = "/v1/chat/completions"
            body["messages"] = request.messages
            if request.tools:
                body["tools"] = request.tools
        body.update(self.extra_body)
        return path, body

    def _attempt(self, request: Request, on_piece: OnPiece | None, budget: Budget) -> _Outcome:
        httpx = self._httpx
        path, body = self._body(request, budget)
        stream = StreamState(self.mode)
        left = budget.left()
        if left <= 0:
            failed = self._models_failed
            why = f" (GET /v1/models took it: {type(failed).__name__}: {failed})" if failed else ""
            return _Outcome(
                Generation(error=f"deadline: no time left of the {self.deadline_s:g} s (--request-deadline){why}")
            )
        read_s = min(self.timeout_s, left)
        self._count("attempts")
        self._count("in_flight")
        opened = False
        try:
            with self._client.stream(
                "POST", f"{self.root}{path}", json=body, timeout=httpx.Timeout(read_s, connect=min(read_s, 10.0))
            ) as response:
                if response.status_code >= 400:
                    raw, cut = budget.read(response, ERROR_BODY_BYTES)
                    # before the body's first characters, so a record's detail clipped to 300 keeps it
                    more = f" (the body is over {ERROR_BODY_BYTES} bytes; the rest was not read)" if cut else ""
                    return _Outcome(
                        Generation(
                            error=f"HTTP {response.status_code} from POST {urlsplit(self.root).path}{path}{more}: "
                            f"{_snippet(raw.decode('utf-8', 'replace'))}"
                        ),
                        retryable=response.status_code in RETRY_STATUSES,
                    )
                self._count("open_streams")
                opened = True
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    return _Outcome(self._whole_response(response, stream, on_piece, budget))
                return _Outcome(self._read_events(response, stream, on_piece, budget))
        except Overrun as exc:  # past the deadline or the byte cap: final, the pieces so far kept
            return _Outcome(stream.generation(f"{exc} after {len(stream.pieces)} pieces"))
        except httpx.TimeoutException as exc:
            if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)) and not stream.started:
                return _Outcome(Generation(error=f"connection error ({type(exc).__name__}: {exc})"), True)
            return _Outcome(
                stream.generation(f"read timeout: no data for {read_s:g} s after {len(stream.pieces)} pieces")
            )
        except httpx.TransportError as exc:  # ConnectError, ReadError, RemoteProtocolError, WriteError, ...
            why = f"{type(exc).__name__}: {exc}"
            if stream.started:
                return _Outcome(
                    stream.generation(f"truncated stream after {len(stream.pieces)} pieces: connection lost ({why})")
                )
            if opened:  # the server answered, then vanished before any output: safe to retry
                return _Outcome(stream.generation(f"truncated stream after 0 pieces: connection lost ({why})"), True)
            return _Outcome(Generation(error=f"connection error ({why})"), retryable=True)
        finally:
            self._count("in_flight", -1)
            if opened:
                self._count("open_streams", -1)

    def _read_events(self, response, stream: StreamState, on_piece: OnPiece | None, budget: Budget) -> Generation:
        from httpx_sse import EventSource

        for event in EventSource(cast(Any, SSEBody(response, budget))).iter_sse():
            data = event.data
            if not data.strip():
                continue
            if data.strip() == "[DONE]":
                stream.done = True
                break
            stream.events += 1
            try:
                chunk = json.loads(data)
            except ValueError:
                return stream.generation(f"invalid JSON in stream event {stream.events}: {_snippet(data)!r}")
            if not isinstance(chunk, dict):
                return stream.generation(f"invalid stream event {stream.events}: not a JSON object: {_snippet(data)!r}")
            if chunk.get("error") is not None or event.event == "error":
                return stream.generation(
                    f"server error event after {len(stream.pieces)} pieces: "
                    f"{_snippet(json.dumps(chunk.get('error', chunk), ensure_ascii=False))}"
                )
            stream.consume(chunk, on_piece)
        n = len(stream.pieces)
        if stream.finish_reason is not None:
            return stream.generation()
        if stream.done:
            return stream.generation(
                f"stream ended with [DONE] but no finish_reason after {n} pieces (the server stopped the "
                f"generation: llama-cpp-python interrupts a stream when another request arrives unless started "
                f"with --interrupt_requests False)"
            )
        return stream.generation(
            f"truncated stream after {n} pieces: the stream ended without [DONE] or a finish_reason"
        )

    def _whole_response(self, response, stream: StreamState, on_piece: OnPiece | None, budget: Budget) -> Generation:
        """A server that ignored ``stream: true`` and answered one JSON body: one piece (or message)."""
        raw, cut = budget.read(response, budget.max_bytes)
        if cut:
            raise budget.too_large()
        try:
            data = json.loads(raw)
        except ValueError:
            text = raw.decode("utf-8", "replace")
            return stream.generation(
                f"invalid JSON response ({response.headers.get('content-type', '')}): {_snippet(text)!r}"
            )
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices:
            return stream.generation(f"response without choices: {_snippet(json.dumps(data))}")
        choice = dict(choices[0])
        if self.mode == "chat":
            choice["delta"] = choice.pop("message", None) or {}
        stream.consume({"choices": [choice]}, on_piece)
        return stream.generation(None if stream.finish_reason else "response without a finish_reason")


def _api_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root.removesuffix("/v1")


def _model_ids(data: Any) -> list[str]:
    entries = data.get("data") if isinstance(data, dict) else None
    return [str(m["id"]) for m in entries or [] if isinstance(m, dict) and "id" in m]


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= BODY_SNIPPET else text[:BODY_SNIPPET] + "..."


def _dist_version(name: str) -> str:
    try:
        return dist_version(name)
    except PackageNotFoundError:
        return "not installed"


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal (``"..."``; ``"``, ``\\``, newlines, tabs and control characters
    escaped as llama.cpp's ``grammars/README.md`` describes)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
