"""Serve in-process parsers over the worker protocol (``docs/worker-protocol.md``).

Usage: ``python -m harness.engines.server MODULE[:CLASS] ...`` with the repository on ``PYTHONPATH``. Each
argument names a module whose ``PARSERS`` list (or the named class) gives parser factories with the shape
of :class:`harness.core.protocol.Parser`; one instance per factory is created at start-up, and requests are routed
to the instance that parses the request's ``format``.

Only the standard library and :mod:`harness.core.messages` / :mod:`harness.core.protocol` / :mod:`harness.core.textio`
(themselves standard-library only) are imported, so this runs inside an engine's own virtualenv. A lone surrogate
in a result goes out as its JSON escape (:mod:`harness.core.textio`). A parser that cannot be constructed
(e.g. the library is missing) makes the worker exit with status 3 and the reason on stderr, before it
answers ``hello``.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import sys
import traceback
from collections.abc import Iterator
from typing import Any

from harness.core.messages import Message
from harness.core.protocol import Delta
from harness.core.textio import open_text

PROTOCOL_VERSION = 1


class RequestError(Exception):
    """A request the worker cannot serve; ``kind`` is the protocol error type."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def load_parsers(specs: list[str]) -> list[Any]:
    """Instances for ``MODULE`` or ``MODULE:CLASS`` specs (a module's ``PARSERS`` list, else its ``create()``)."""
    parsers: list[Any] = []
    for spec in specs:
        module_name, _, attr = spec.partition(":")
        module = importlib.import_module(module_name)
        if attr:
            factories = [getattr(module, attr)]
        elif hasattr(module, "PARSERS"):
            factories = list(module.PARSERS)
        else:
            factories = [module.create]
        parsers.extend(factory() for factory in factories)
    return parsers


def message_json(message: Message) -> dict:
    """A parsed message as the ``parse`` result object. Raises :class:`RequestError` (``parser_error``) for a call
    whose ``name`` is not a string: the protocol cannot carry it, and it is the parser's fault, not the worker's."""
    for i, call in enumerate(message.tool_calls):
        if not isinstance(call.name, str):
            raise RequestError("parser_error", f"the parser returned call {i} with name {call.name!r}, not a string")
    return {
        "content": message.content,
        "reasoning": message.reasoning,
        # The harness decodes a string ``arguments`` once (docs/worker-protocol.md); a string the adapter already
        # decoded (a library's double-encoded or invalid JSON) travels as its JSON text, and so does any value that
        # is not an object (a list), so each arrives unchanged.
        "tool_calls": [
            {
                "name": c.name,
                "arguments": c.arguments
                if isinstance(c.arguments, dict)
                else json.dumps(c.arguments, ensure_ascii=False),
            }
            for c in message.tool_calls
        ],
        "diagnostics": [str(d) for d in message.diagnostics],
    }


def deltas_json(deltas: list[Delta]) -> list[dict]:
    """Deltas as the ``deltas`` of a ``feed``/``finish`` result. Raises :class:`RequestError` (``parser_error``) for
    a tool-call piece the protocol cannot carry (an ``index`` that is not an integer, a ``name`` or ``arguments``
    that is not a string): the parser's fault, not the worker's."""
    for delta in deltas:
        for piece in delta.tool_calls:
            if not isinstance(piece.index, int) or isinstance(piece.index, bool) or piece.index < 0:
                raise RequestError("parser_error", f"the parser streamed a tool-call piece with index {piece.index!r}")
            for key in ("name", "arguments", "id"):
                if not isinstance(getattr(piece, key), (str, type(None))):
                    raise RequestError(
                        "parser_error", f"the parser streamed a tool-call piece whose {key} is not a string: {piece!r}"
                    )
    return [d.to_json() for d in deltas]


class Server:
    """Dispatches protocol requests to parsers by format; keeps open streams by the harness' stream id."""

    def __init__(self, parsers: list[Any]):
        if not parsers:
            raise ValueError("no parser to serve")
        self.by_format: dict[str, Any] = {}
        for parser in parsers:
            for fmt in parser.formats:
                self.by_format.setdefault(fmt, parser)
        first = parsers[0]
        self.hello = {
            "protocol": PROTOCOL_VERSION,
            "name": first.library,
            "version": first.version,
            "formats": sorted(self.by_format),
            "incremental": all(getattr(p, "incremental", False) for p in parsers),
        }
        self.streams: dict[str, Any] = {}

    def handle(self, request: dict) -> dict:
        op = request.get("op")
        handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if handler is None:
            raise RequestError("unknown_op", f"unknown op {op!r}")
        return handler(request)

    def op_hello(self, request: dict) -> dict:
        return dict(self.hello)

    def op_parse(self, request: dict) -> dict:
        parser = self._parser(request)
        text = _field(request, "text", str)
        try:
            message = parser.parse(text, request.get("tools"), request.get("prefix") or "")
        except Exception as exc:
            raise RequestError(_error_type(exc), _describe(exc)) from exc
        return message_json(message)

    def op_open(self, request: dict) -> dict:
        parser = self._parser(request)
        stream_id = _field(request, "stream", str)
        try:
            self.streams[stream_id] = parser.stream(request.get("tools"), request.get("prefix") or "")
        except Exception as exc:
            raise RequestError(_error_type(exc), _describe(exc)) from exc
        return {}

    def op_feed(self, request: dict) -> dict:
        session = self._session(request)
        chunk = _field(request, "chunk", str)
        try:
            return {"deltas": deltas_json(session.feed(chunk, request.get("token_ids")))}
        except RequestError:
            self.streams.pop(request["stream"], None)
            raise
        except Exception as exc:
            self.streams.pop(request["stream"], None)
            raise RequestError(_error_type(exc), _describe(exc)) from exc

    def op_finish(self, request: dict) -> dict:
        session = self._session(request)
        self.streams.pop(request["stream"], None)
        try:
            deltas = session.finish()
        except Exception as exc:
            raise RequestError(_error_type(exc), _describe(exc)) from exc
        diagnostics = [str(d) for d in getattr(session, "diagnostics", []) or []]
        return {"deltas": deltas_json(deltas), "diagnostics": diagnostics}

    def op_shutdown(self, request: dict) -> dict:
        return {}

    def _parser(self, request: dict) -> Any:
        fmt = _field(request, "format", str)
        if fmt not in self.by_format:
            raise RequestError("unsupported_format", f"format {fmt!r} not served (serves {sorted(self.by_format)})")
        return self.by_format[fmt]

    def _session(self, request: dict) -> Any:
        stream_id = _field(request, "stream", str)
        if stream_id not in self.streams:
            raise RequestError("unknown_stream", f"no open stream {stream_id!r}")
        return self.streams[stream_id]


def _field(request: dict, name: str, kind: type) -> Any:
    value = request.get(name)
    if not isinstance(value, kind):
        raise RequestError("bad_request", f"field {name!r} must be a {kind.__name__}")
    return value


def _error_type(exc: BaseException) -> str:
    """``timeout`` for a parser call the adapter interrupted (``TimeoutError``), else ``parser_error``."""
    return "timeout" if isinstance(exc, TimeoutError) else "parser_error"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def serve(server: Server, stdin=None, stdout=None) -> None:
    """Answer requests line by line until end of input or ``shutdown``.

    Lines end at ``"\\n"`` only and are decoded as UTF-8. Input is read in blocks; the responses to every
    complete request of a block are written, then flushed once (pipelined requests cost one write)."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout
    for lines in _line_blocks(stdin):
        for raw in lines:
            response, stop = _answer(server, raw.decode("utf-8", "replace"))
            stdout.write(json.dumps(response, ensure_ascii=False, separators=(",", ":")) + "\n")
            if stop:
                stdout.flush()
                return
        stdout.flush()


def _line_blocks(stdin):
    """Yield lists of complete lines (bytes, without the newline) as they arrive."""
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        fd = None
    if fd is None:  # an in-memory stream (tests): one block per line
        for raw in stdin:
            yield [raw.rstrip(b"\n") if isinstance(raw, bytes) else raw.rstrip("\n").encode("utf-8")]
        return
    yield from fd_line_blocks(fd)


def fd_line_blocks(fd: int) -> Iterator[list[bytes]]:
    """The complete lines of a file descriptor, a list per read of up to 64 KiB (bytes, no newline), until end
    of file or a read error; then the unterminated rest, if it holds more than whitespace. Raw reads take no
    file-object lock, so a thread blocked here holds nothing another thread needs. Shared by both protocol
    sides: the worker reads requests with it, the harness its workers' stdout and stderr. Linear in the bytes
    read: the pieces of an unterminated line are kept in a list and joined once, when its newline arrives."""
    partial: list[bytes] = []  # the pieces of the line not ended yet
    while True:
        try:
            block = os.read(fd, 1 << 16)
        except OSError:
            break
        if not block:
            break
        if b"\n" not in block:
            partial.append(block)
            continue
        lines = block.split(b"\n")
        if partial:
            partial.append(lines[0])
            lines[0] = b"".join(partial)
        rest = lines.pop()
        partial = [rest] if rest else []
        yield lines
    rest = b"".join(partial)
    if rest.strip():
        yield [rest]


def _answer(server: Server, line: str) -> tuple[dict, bool]:
    """The response to one request line, and whether it was ``shutdown``."""
    try:
        request = json.loads(line)
        if not isinstance(request, dict):
            raise ValueError("a request must be a JSON object")
    except ValueError as exc:
        return {"id": None, "ok": False, "error": {"type": "bad_request", "message": f"not JSON: {exc}"}}, False
    try:
        response = {"id": request.get("id"), "ok": True, "result": server.handle(request)}
    except RequestError as exc:
        response = {"id": request.get("id"), "ok": False, "error": {"type": exc.kind, "message": str(exc)}}
    return response, request.get("op") == "shutdown"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m harness.engines.server MODULE[:CLASS] ...", file=sys.stderr)
        return 2
    try:
        server = Server(load_parsers(args))
    except Exception:
        print("worker could not start its parsers:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return 3
    # Library output on stdout would corrupt the protocol: send stray prints to stderr.
    protocol_out = open_text(sys.stdout.fileno(), closefd=False)
    sys.stdout = sys.stderr
    serve(server, sys.stdin.buffer, protocol_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
