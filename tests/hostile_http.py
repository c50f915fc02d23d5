"""An OpenAI-compatible completions server that misbehaves on purpose (``http.server`` on 127.0.0.1), for the
tests of the ``openai`` backend's limits (``tests/unit/capture/test_backend_openai_hostile.py``) and the fault
matrix (``tests/e2e/test_fault_matrix.py``). The path's first segment picks the behaviour (:class:`Hostile`);
:func:`serving` runs it in a thread and yields its root URL."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HUGE = 200 << 20  # bytes of the huge error body the server announces (and writes until the client leaves)


def event(text: str, finish: str | None = None) -> bytes:
    return f"data: {json.dumps({'choices': [{'index': 0, 'text': text, 'finish_reason': finish}]})}\n\n".encode()


class Hostile(BaseHTTPRequestHandler):
    """``POST /MODE/v1/completions`` behaves as MODE says; ``GET /MODE/v1/models`` lists one model (``ping``:
    pings forever instead). ``/script/...`` answers the n-th request of the server with ``SCRIPT[n]``."""

    protocol_version = "HTTP/1.1"
    requests: list[str] = []  # MODE of each POST, in order
    SCRIPT = ("ping", "endless", "huge-400", "ok")

    def log_message(self, *args) -> None:
        pass

    def _head(self, status: int, kind: str, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length" if length is not None else "transfer-encoding", str(length or "chunked"))
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self) -> None:
        if self.path.startswith("/ping/"):
            return self._pings()
        body = json.dumps({"data": [{"id": "hostile"}]}).encode()
        self._head(200, "application/json", len(body))
        self.wfile.write(body)

    def _pings(self) -> None:
        self._head(200, "text/event-stream")
        try:
            while True:
                self._chunk(b": ping\n\n")
                time.sleep(0.05)
        except OSError:  # the client gave up: what the test wants
            pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        mode = self.path.split("/")[1]
        if mode == "script":
            mode = self.SCRIPT[min(len([m for m in self.requests if m.startswith("script:")]), len(self.SCRIPT) - 1)]
            self.requests.append(f"script:{mode}")
        else:
            self.requests.append(mode)
        try:
            self._answer(mode)
        except OSError:
            pass

    def _answer(self, mode: str) -> None:
        if mode == "ping":
            return self._pings()
        if mode == "endless":
            self._head(200, "text/event-stream")
            while True:
                self._chunk(event("a") * 100)
        if mode in ("huge-500", "huge-400"):
            self._head(500 if mode == "huge-500" else 400, "text/plain", HUGE)
            block = b"x" * (1 << 20)
            for _ in range(HUGE >> 20):
                self.wfile.write(block)
            return
        if mode == "huge-json":  # ignores stream: true and answers a JSON body that does not end
            self._head(200, "application/json", HUGE)
            self.wfile.write(b'{"choices": [{"text": "')
            while True:
                self.wfile.write(b"a" * (1 << 16))
        if mode in ("500", "429") or (mode == "429-then-ok" and self.requests.count(mode) == 1):
            body = b"busy"
            self._head(int(mode[:3]), "text/plain", len(body))
            self.wfile.write(body)
            return
        if mode == "truncated":  # announces more than it sends, then closes
            body = event("a")
            self._head(200, "text/event-stream", len(body) + 100)
            self.wfile.write(body)
            self.close_connection = True
            return
        if mode == "silent":
            self._head(200, "text/event-stream")
            time.sleep(5)
            return
        body = event("Hello") + event(" there", "stop") + b"data: [DONE]\n\n"
        self._head(200, "text/event-stream", len(body))
        self.wfile.write(body)


@contextmanager
def serving() -> Iterator[str]:
    """Serve :class:`Hostile` on a free port of 127.0.0.1 in a daemon thread; yields ``http://127.0.0.1:PORT``.
    A request still streaming when the block ends is left to its daemon thread (it ends when the client leaves)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
