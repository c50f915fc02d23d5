"""The harness side of the worker protocol (``docs/worker-protocol.md``): a parser in another process.

:class:`WorkerParser` has the shape of :class:`harness.core.protocol.Parser`, so the runner scores it like any
in-process parser. Each call writes request lines to the worker's stdin; a reader thread collects response
lines from its stdout, so requests can be pipelined (a whole stream — ``open``, every ``feed``, ``finish`` —
is written before its responses are read: :meth:`WorkerParser.run_stream`).

Failures of the worker itself raise :class:`WorkerError` with ``kind`` ``crash`` (exited / closed stdout),
``timeout`` (no response within ``timeout_s``) or ``protocol`` (a line that is not a response to the request
sent); the worker is then killed and the next call starts a new one (``hello`` again). The first start waits
``hello_timeout_s`` (120 s: engines import large libraries); a restart waits :attr:`WorkerParser.restart_timeout_s`,
the per-call limit or twice the first start's time if that is longer, so a worker that stalls on restart costs
about one call's limit, not two minutes. A ``parser_error`` response raises :class:`WorkerParserError`: the parser
under test failed, the worker is fine.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import shlex
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Literal, TypeGuard, TypeVar, overload

from harness.core import fields
from harness.core.fields import MISSING, FieldProblem
from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.core.textio import encode, one_line
from harness.engines.server import fd_line_blocks

PROTOCOL_VERSION = 1
HELLO_TIMEOUT_S = 120.0
DEFAULT_TIMEOUT_S = 10.0
STDERR_TAIL_BYTES = 64 * 1024  # the end of a worker's stderr kept to explain a crash (a log flood costs no memory)
STDERR_LINES = 5  # its last lines quoted in a crash message (each cut to its last 200 characters)
INLINE_WRITE_BYTES = 32 * 1024  # below a Linux pipe's 64 KiB capacity
_EOF = object()
T = TypeVar("T")


class WorkerError(Exception):
    """The worker process failed (``kind``: ``crash``, ``timeout`` or ``protocol``); it has been stopped."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class WorkerParserError(Exception):
    """The worker answered ``parser_error``: the parser under test raised; ``str()`` is its message."""


class WorkerParserTimeout(WorkerParserError):
    """The worker answered ``timeout``: it interrupted a parser call that ran past its own limit (the worker
    is fine; the case is scored ``error``/``timeout``)."""


@dataclass
class WorkerSpec:
    """How to start a worker: ``argv``, extra environment variables, and a label for messages.

    ``name``: the stem of its parsers' names (``sglang@/src/sglang`` → ``sglang@/src/sglang:gemma4``) instead of
    the hello's ``library==version``; ``source``: where an engine built from a source tree or wheel came from
    (:func:`harness.engines.environments.source_worker_spec`), recorded in the run log."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    label: str = ""
    name: str = ""
    source: dict | None = None

    @classmethod
    def from_command(cls, command: str) -> WorkerSpec:
        """A spec from a shell-like command line (``cmd:`` parser names); raises ``ValueError`` if empty."""
        argv = shlex.split(command)
        if not argv:
            raise ValueError("empty worker command")
        return cls(argv, {}, command)


class WorkerProcess:
    """One running worker: start, send requests, read responses in order, stop.

    Not thread-safe: one caller at a time (the runner is sequential).
    """

    def __init__(self, spec: WorkerSpec):
        self.spec = spec
        env = {**os.environ, **spec.env}
        try:
            self.proc = subprocess.Popen(
                spec.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
            )
        except OSError as exc:
            raise WorkerError("crash", f"cannot start worker {spec.label or spec.argv[0]!r}: {exc}") from exc
        stdin, stdout, stderr = self.proc.stdin, self.proc.stdout, self.proc.stderr
        assert stdin is not None and stdout is not None and stderr is not None  # all three are PIPE above
        self._stdin: IO[bytes] = stdin
        self._stdout_fd, self._stderr_fd = stdout.fileno(), stderr.fileno()
        self._lines: queue.SimpleQueue = queue.SimpleQueue()  # lists of complete response lines
        self._ready: deque = deque()
        self._writing = threading.Event()  # a background write is in progress
        self._stderr = bytearray()  # the last STDERR_TAIL_BYTES bytes of the worker's stderr
        self._stderr_lock = threading.Lock()
        self._ids = itertools.count(1)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        """Hand over every complete line of a read at once (fewer thread handoffs), then end of file."""
        for lines in fd_line_blocks(self._stdout_fd):
            self._lines.put(lines)
        self._lines.put([_EOF])

    def _read_stderr(self) -> None:
        """Keep the end of the worker's stderr, :data:`STDERR_TAIL_BYTES` at most: a worker that logs without
        end, or writes one endless line, costs a bounded buffer (before: every byte of an unterminated line)."""
        while True:
            try:
                block = os.read(self._stderr_fd, 1 << 16)
            except OSError:
                break
            if not block:
                break
            with self._stderr_lock:
                self._stderr += block
                del self._stderr[:-STDERR_TAIL_BYTES]

    def stderr_tail(self) -> list[str]:
        """The last :data:`STDERR_LINES` non-blank lines of the worker's stderr (of its last
        :data:`STDERR_TAIL_BYTES` bytes), a line over 200 characters cut to its end (``...`` and the last 200)."""
        with self._stderr_lock:
            text = self._stderr.decode("utf-8", "replace")
        lines = [line.rstrip() for line in text.splitlines() if line.strip()]
        return [line if len(line) <= 200 else "..." + line[-200:] for line in lines[-STDERR_LINES:]]

    def send(self, requests: list[dict]) -> list[int]:
        """Write requests (ids assigned here) in one write; returns their ids.

        Every earlier request has been answered (or the worker replaced) when ``send`` is called, so the pipe
        is empty: a payload that fits in it is written here; a bigger one is written by a thread, so that a
        worker that stops reading cannot block the caller past its response timeout."""
        ids, lines = [], []
        for request in requests:
            request_id = next(self._ids)
            ids.append(request_id)
            lines.append(json.dumps({"id": request_id, **request}, ensure_ascii=False, separators=(",", ":")))
        data = encode("\n".join(lines) + "\n")
        if len(data) > INLINE_WRITE_BYTES:
            self._writing.set()
            threading.Thread(target=self._write, args=(data,), daemon=True).start()
            return ids
        try:
            self._write(data, quiet=False)
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise self._crashed(f"cannot write to the worker ({exc})") from exc
        return ids

    def _write(self, data: bytes, quiet: bool = True) -> None:
        try:
            self._stdin.write(data)
            self._stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            if not quiet:
                raise  # else the reader sees the worker's end (crash) or its silence (timeout)
        finally:
            if quiet:
                self._writing.clear()

    @overload
    def receive(self, request_id: int, timeout_s: float, lenient: Literal[False] = False) -> dict: ...
    @overload
    def receive(self, request_id: int, timeout_s: float, lenient: bool) -> dict | None: ...
    def receive(self, request_id: int, timeout_s: float, lenient: bool = False) -> dict | None:
        """The result of ``request_id`` (the next line); raises :class:`WorkerError` on failure.

        ``lenient``: a well-formed error response of any type gives ``None`` instead of raising (used after a
        ``parser_error`` in a pipelined stream, whose later requests may fail as a consequence)."""
        if not self._ready:
            try:
                self._ready.extend(self._lines.get(timeout=timeout_s))
            except queue.Empty:
                raise WorkerError("timeout", f"no response within {timeout_s:g} s") from None
        line = self._ready.popleft()
        if line is _EOF:
            raise self._crashed("the worker closed its output")
        return decode_response(line, request_id, lenient)

    def _crashed(self, what: str) -> WorkerError:
        try:
            status = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            status = None
        time.sleep(0.05)  # let the stderr reader catch the last lines
        tail = " | ".join(self.stderr_tail())
        return WorkerError("crash", f"{what}; exit status {status}" + (f"; stderr: {tail}" if tail else ""))

    def stop(self) -> None:
        """Close stdin, give the worker a moment to exit, then kill it. A worker still being written to (it
        stopped reading) is killed first: closing the pipe would wait for the blocked write."""
        if self.proc.poll() is None and self._writing.is_set():
            self.proc.kill()
        try:
            self._stdin.close()
        except (OSError, ValueError):
            pass  # unsent buffered bytes to a worker that is gone
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        # stdout/stderr are left to the reader threads, which see end of file now that the worker is gone.


def runs_out_of_process(parser: object) -> TypeGuard[WorkerParser]:
    """True for a parser whose calls run in another process (``out_of_process = True``: a :class:`WorkerParser`):
    the caller stops it with ``close()`` and leaves timeouts to it (:func:`harness.parse.calls.alarm_limit`)."""
    return bool(getattr(parser, "out_of_process", False))


class WorkerParser:
    """A parser served by a worker process (see the module docstring).

    Attributes as :class:`harness.core.protocol.Parser`: ``name`` (``library==version:format`` from the worker's
    ``hello``), ``library``, ``version``, ``formats``, ``incremental``; plus ``out_of_process = True`` (the
    runner leaves timeouts to the worker's own per-call limit), ``timeout_s`` (seconds per response),
    ``started_s`` (seconds the first start took) and ``restarts``.

    The worker is started at construction (``hello`` must succeed, or :class:`WorkerError` is raised) and
    restarted on demand after a failure. ``format`` picks one format when the worker serves several.
    """

    out_of_process = True

    def __init__(
        self,
        spec: WorkerSpec,
        format: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        hello_timeout_s: float = HELLO_TIMEOUT_S,
    ):
        self.spec = spec
        self.timeout_s = timeout_s
        self.hello_timeout_s = hello_timeout_s
        self.restarts = 0
        self._worker: WorkerProcess | None = None
        self._streams = itertools.count(1)
        started = time.perf_counter()
        _, hello = self._start(hello_timeout_s)
        self.started_s = time.perf_counter() - started
        self.library = str(hello["name"])
        self.version = str(hello["version"])
        formats = tuple(hello["formats"])
        if format is not None and format not in formats:
            self.close()
            raise WorkerError(
                "protocol", f"worker {spec.label!r} does not parse format {format!r} (it parses {', '.join(formats)})"
            )
        self.format = format or formats[0]
        self.formats: tuple[str, ...] = (self.format,)
        self.incremental = bool(hello.get("incremental", False))
        self.name = f"{spec.name or f'{self.library}=={self.version}'}:{self.format}"
        self.hello = hello

    # -- process management -------------------------------------------------------------------------
    @property
    def restart_timeout_s(self) -> float:
        """Seconds a restarted worker gets to answer ``hello``: ``timeout_s``, or twice the first start's time."""
        return max(self.timeout_s, 2 * self.started_s)

    def _start(self, hello_timeout_s: float) -> tuple[WorkerProcess, dict]:
        """Start a worker and check its ``hello`` (within ``hello_timeout_s``): the running worker (kept as the
        current one) and the hello."""
        worker = WorkerProcess(self.spec)
        try:
            (request_id,) = worker.send([{"op": "hello", "protocol": PROTOCOL_VERSION}])
            hello = worker.receive(request_id, hello_timeout_s)
            _check_hello(hello)
        except (WorkerError, WorkerParserError) as exc:
            worker.stop()
            kind = exc.kind if isinstance(exc, WorkerError) else "protocol"
            raise WorkerError(kind, f"worker {self.spec.label!r} failed to start: {exc}") from exc
        self._worker = worker
        return worker, hello

    def _live(self) -> WorkerProcess:
        if self._worker is None:
            self.restarts += 1
            return self._start(self.restart_timeout_s)[0]
        return self._worker

    def _exchange(self, requests: list[dict], dependent: bool) -> list[dict | WorkerParserError]:
        """Send ``requests`` pipelined; return each result, or the :class:`WorkerParserError` its parser
        raised. ``dependent``: the requests form one stream, so after a parser error the later ones may fail
        as a consequence and any error response to them is taken as ``{}``. On a worker failure the worker is
        stopped and :class:`WorkerError` raised."""
        worker = self._live()
        results: list[dict | WorkerParserError] = []
        failed = False
        try:
            for request_id in worker.send(requests):
                try:
                    results.append(worker.receive(request_id, self.timeout_s, lenient=failed) or {})
                except WorkerParserError as exc:
                    failed = dependent
                    results.append(exc)
        except WorkerError:
            self._kill()
            raise
        return results

    def _call(self, requests: list[dict]) -> list[dict]:
        """The results of one stream's (or one request's) requests; the first parser error is raised after
        the remaining responses are drained (the worker stays usable)."""
        results = self._exchange(requests, dependent=True)
        error = next((r for r in results if isinstance(r, WorkerParserError)), None)
        if error is not None:
            raise error
        return [r for r in results if not isinstance(r, WorkerParserError)]

    def _kill(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def close(self) -> None:
        """Stop the worker (it is restarted if the parser is used again)."""
        self._kill()

    def __del__(self):
        try:
            self._kill()
        except Exception:
            pass

    # -- parser protocol --------------------------------------------------------------------------------
    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        (result,) = self._call([self._parse_request(text, tools, prefix)])
        return self._decoded(message_from_result, result)

    def parse_many(self, items: Iterable[tuple[str, list | None, str]]) -> list[Message | Exception]:
        """One-shot parse of many ``(text, tools, prefix)`` in one pipelined batch (benchmarks, bulk runs).

        Returns a message or the exception per item; a worker failure raises :class:`WorkerError`."""
        results = self._exchange([self._parse_request(*item) for item in items], dependent=False)
        return [r if isinstance(r, WorkerParserError) else self._decoded(message_from_result, r) for r in results]

    def _parse_request(self, text: str, tools: list | None, prefix: str) -> dict:
        return {"op": "parse", "format": self.format, "text": text, "tools": tools, "prefix": prefix}

    def stream(self, tools: list | None = None, prefix: str = "") -> WorkerStream:
        return WorkerStream(self, tools, prefix)

    def run_stream(
        self, chunks: list[str], tools: list | None, prefix: str, token_ids: list[list[int] | None]
    ) -> tuple[list[list[Delta]], list[str]]:
        """A whole stream in one pipelined exchange: ``open``, one ``feed`` per chunk, ``finish``.

        Returns the deltas of each feed plus those of finish (``len(chunks) + 1`` lists) and the
        diagnostics. Used by :func:`harness.core.protocol.run_stream` when a parser offers it."""
        stream_id = f"s{next(self._streams)}"
        requests = [{"op": "open", "stream": stream_id, "format": self.format, "tools": tools, "prefix": prefix}]
        requests += [
            {"op": "feed", "stream": stream_id, "chunk": chunk, "token_ids": ids}
            for chunk, ids in zip(chunks, token_ids, strict=False)
        ]
        requests.append({"op": "finish", "stream": stream_id})
        results = self._call(requests)
        deltas = [self._decoded(deltas_from_result, r, "feed") for r in results[1:-1]]
        deltas.append(self._decoded(deltas_from_result, results[-1], "finish"))
        return deltas, self._decoded(diagnostics_from_result, results[-1])

    def _decoded(self, decode: Callable[..., T], result: dict, *args: str) -> T:
        """``decode(result, *args)``; a result that breaks the protocol (:class:`WorkerError`, ``protocol``) stops
        the worker first, as any other protocol error does (the next call starts a new one)."""
        try:
            return decode(result, *args)
        except WorkerError:
            self._kill()
            raise


class WorkerStream:
    """A streaming session on a worker, one request per call (the runner uses :meth:`WorkerParser.run_stream`,
    which pipelines; this is for callers that need each feed's deltas before sending the next chunk)."""

    def __init__(self, parser: WorkerParser, tools: list | None, prefix: str):
        self._parser = parser
        self._id = f"s{next(parser._streams)}"
        self.diagnostics: list[str] = []
        parser._call([{"op": "open", "stream": self._id, "format": parser.format, "tools": tools, "prefix": prefix}])

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        (result,) = self._parser._call([{"op": "feed", "stream": self._id, "chunk": chunk, "token_ids": token_ids}])
        return self._parser._decoded(deltas_from_result, result, "feed")

    def finish(self) -> list[Delta]:
        (result,) = self._parser._call([{"op": "finish", "stream": self._id}])
        self.diagnostics = self._parser._decoded(diagnostics_from_result, result)
        return self._parser._decoded(deltas_from_result, result, "finish")


def decode_response(line: bytes | str, request_id: int, lenient: bool = False) -> dict | None:
    """The ``result`` object of one response line of a worker (``docs/worker-protocol.md``) answering ``request_id``.

    Raises :class:`WorkerError` (``protocol``) for a line that is not a JSON object, answers another request or is
    malformed, and for an error response of a type other than ``parser_error`` (:class:`WorkerParserError`) and
    ``timeout`` (:class:`WorkerParserTimeout`); ``lenient``: a well-formed error response gives ``None`` instead."""
    try:
        response = json.loads(line)
    except ValueError:
        raise WorkerError("protocol", f"not a JSON line: {_clip(line)}") from None
    except RecursionError:
        raise WorkerError("protocol", f"a JSON line nested too deeply: {_clip(line)}") from None
    if not isinstance(response, dict) or type(response.get("id")) is not int or response["id"] != request_id:
        raise WorkerError("protocol", f"expected the response to request {request_id}, got {_clip(line)}")
    if response.get("ok") is True and isinstance(response.get("result"), dict):
        return response["result"]
    error = response.get("error")
    if response.get("ok") is False and isinstance(error, dict) and isinstance(error.get("type"), str):
        if lenient:
            return None
        message = error.get("message", "")
        if not isinstance(message, str):
            raise WorkerError("protocol", f"field 'error.message': expected a string: {_clip(line)}")
        if error.get("type") == "parser_error":
            raise WorkerParserError(message)
        if error.get("type") == "timeout":
            raise WorkerParserTimeout(message)
        raise WorkerError("protocol", f"worker error {error.get('type')!r}: {_clip(message, 500)}")
    raise WorkerError("protocol", f"malformed response: {_clip(line)}")


def _check_hello(hello: dict) -> None:
    if hello.get("protocol") != PROTOCOL_VERSION:
        raise WorkerError("protocol", f"hello: protocol {hello.get('protocol')!r}, expected {PROTOCOL_VERSION}")
    try:
        for key in ("name", "version"):
            fields.string(hello.get(key, MISSING), key, empty=False)
        formats = fields.string_list(hello.get("formats", MISSING), "formats")
        if not formats or not all(formats):
            raise FieldProblem("formats", "field 'formats': expected a non-empty list of format names")
        fields.boolean(hello.get("incremental", False), "incremental")
    except FieldProblem as exc:
        raise WorkerError("protocol", f"hello: {exc}") from None


def message_from_result(result: dict) -> Message:
    """A ``parse`` result object as a :class:`Message`, each field checked as ``docs/worker-protocol.md`` states:
    ``tool_calls`` a list of ``{"name": string, "arguments": object or JSON text (absent: {})}``, ``content`` and
    ``reasoning`` strings or null, ``diagnostics`` a list of strings (optional). Raises :class:`WorkerError`
    (``protocol``) naming the field, ``parse result: field 'tool_calls[0].name': expected a string, got null``: the
    worker broke the protocol, it is not the parser's answer."""
    try:
        calls = []
        for i, call in enumerate(fields.array(result.get("tool_calls", MISSING), "tool_calls")):
            fields.obj(call, f"tool_calls[{i}]")
            name = fields.string(call.get("name", MISSING), f"tool_calls[{i}].name")
            arguments = call.get("arguments", {})
            if not isinstance(arguments, (dict, str)):
                raise fields.problem(f"tool_calls[{i}].arguments", "an object or a string (JSON text)", arguments)
            calls.append(ToolCall(name, parse_arguments(arguments)))
        return Message(
            content=fields.string(result.get("content"), "content", null=True),
            reasoning=fields.string(result.get("reasoning"), "reasoning", null=True),
            tool_calls=calls,
            diagnostics=_diagnostics(result),
        )
    except FieldProblem as exc:
        raise WorkerError("protocol", f"parse result: {exc}: {_clip(json.dumps(result))}") from None


def deltas_from_result(result: dict, op: str = "feed") -> list[Delta]:
    """The ``deltas`` of a ``feed``/``finish`` result, each field checked (``deltas`` a list of objects whose
    ``content``/``reasoning`` are strings or null and whose ``tool_calls`` pieces have an integer ``index`` ≥ 0 and
    a string or null ``name``, ``arguments``, ``id``); raises :class:`WorkerError` (``protocol``) naming the field,
    ``feed result: field 'deltas[0].tool_calls[0].index': expected an integer ≥ 0, got string``."""
    try:
        deltas = []
        for i, item in enumerate(fields.array(result.get("deltas", MISSING), "deltas")):
            at = f"deltas[{i}]"
            fields.obj(item, at)
            pieces = []
            for j, piece in enumerate(fields.array(item.get("tool_calls"), f"{at}.tool_calls", null=True) or ()):
                where = f"{at}.tool_calls[{j}]"
                fields.obj(piece, where)
                index = fields.integer(piece.get("index", MISSING), f"{where}.index", minimum=0)
                name, arguments, call_id = (
                    fields.string(piece.get(key), f"{where}.{key}", null=True) for key in ("name", "arguments", "id")
                )
                pieces.append(ToolCallDelta(index, name, arguments, call_id))
            deltas.append(
                Delta(
                    content=fields.string(item.get("content"), f"{at}.content", null=True),
                    reasoning=fields.string(item.get("reasoning"), f"{at}.reasoning", null=True),
                    tool_calls=pieces,
                )
            )
        return deltas
    except FieldProblem as exc:
        raise WorkerError("protocol", f"{op} result: {exc}: {_clip(json.dumps(result))}") from None


def diagnostics_from_result(result: dict, op: str = "finish") -> list[str]:
    """The ``diagnostics`` of a ``parse``/``finish`` result: a list of strings, or absent or null (``[]``);
    raises :class:`WorkerError` (``protocol``) naming the field."""
    try:
        return _diagnostics(result)
    except FieldProblem as exc:
        raise WorkerError("protocol", f"{op} result: {exc}: {_clip(json.dumps(result))}") from None


def _diagnostics(result: dict) -> list[str]:
    return list(fields.string_list(result.get("diagnostics"), "diagnostics", null=True) or [])


def _clip(line, limit: int = 200) -> str:
    """``line`` (bytes or text) as one printable line for an error message: its newline dropped, cut at ``limit``
    characters (then ``...``), every non-printable character escaped (:func:`~harness.core.textio.one_line`)."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)
    text = text.rstrip("\n")
    return one_line(text if len(text) <= limit else text[:limit] + "...")
