"""Bounded rendering: transformers' ``render_jinja_template`` run in a reused worker process, so that a chat template
(code from a model repository or a user's file) cannot hang, flood or exhaust the harness.

Limits, per render (:func:`set_render_limits`; the CLI's ``--render-timeout`` and ``--render-max-chars``):

- time: :data:`DEFAULT_TIMEOUT_S` s of wall time, then the worker is killed (SIGKILL), which stops a render stuck
  inside one expression (``'x' * 10**10``, ``2 ** 10**9``) as surely as nested ``range(100000)`` loops; the worker
  also caps its own CPU time (``RLIMIT_CPU``: what it has used + the limit + 1 s), so an orphan cannot spin on;
- output: :data:`DEFAULT_MAX_CHARS` characters of rendered text;
- memory: the worker's address space (``RLIMIT_AS``) is its size after start-up plus :data:`MEMORY_HEADROOM_BYTES`
  (enforced on Linux; elsewhere the time limit bounds a render that swaps).

Any failure (Jinja syntax, ``raise_exception``, ``{{ 1/0 }}``, recursion, a limit) comes back as
:class:`RenderFailure` with ``kind`` (``"Jinja error"``, the exception's type name, or for a limit ``"time limit"``,
``"output limit"``, ``"out of memory"``, ``"render worker"`` when it died), ``message``, ``line`` (template line, when
known) and ``limit`` (True for a limit or a dead worker: a failure of the template or the machine, never of one
input); :mod:`harness.template.render` names the template in the error it raises.

Protocol (stdin/stdout of ``python -c BOOT``; the worker writes anything else to stderr): frames of an 8-byte
big-endian length then a pickle. The worker sends ``("ready", address_space_limit or None)`` once, then answers
each request ``(key, text or None, kwargs, timeout_s, max_chars)`` with ``("ok", rendered)`` or
``("error", kind, message, line, limit)``; a template's text travels once per worker (``key`` names it after).
One worker per process (a forked child starts its own); started on first use or by :func:`prestart` (the CLI's
rendering commands call it first thing), stopped at exit, or killed after a limit.
Cost (``bench/bench_render.py``, 2 shared cores, 2026-12-04): a render 23 -> 76 us in a bare process (pipe, pickle,
``setrlimit``), no slower in a loaded one; the worker starts in 1.4 s (importing transformers; :func:`prestart`
overlaps it). ``corpus --model gemma-4-e2b --slices curated,generated``: 4.85 s before, 4.97 s after (medians of 3);
the corpus written is byte for byte the same.
"""

from __future__ import annotations

import atexit
import math
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: seconds of wall time one render may take (real templates: milliseconds).
DEFAULT_TIMEOUT_S = 10.0
#: characters one render may write (the longest render of every catalog model's corpus: about 30,000).
DEFAULT_MAX_CHARS = 1_000_000
#: bytes of address space a render may add to the worker's size after start-up.
MEMORY_HEADROOM_BYTES = 1 << 30
#: seconds the worker may take to start (import transformers) before it counts as broken.
START_TIMEOUT_S = 120.0

_HEADER = struct.Struct(">Q")
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from harness.template.bounded import serve; serve()"


@dataclass(frozen=True)
class RenderLimits:
    """Bounds of one render: ``timeout_s`` seconds of wall time, ``max_chars`` characters of output."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_chars: int = DEFAULT_MAX_CHARS


_limits = RenderLimits()


def set_render_limits(timeout_s: float | None = None, max_chars: int | None = None) -> RenderLimits:
    """Set this process's render limits (``None`` keeps a value); returns the new limits. Raises ``ValueError`` for
    a time limit not in (0, 86400] s or an output limit below 1."""
    global _limits
    timeout = _limits.timeout_s if timeout_s is None else float(timeout_s)
    chars = _limits.max_chars if max_chars is None else int(max_chars)
    if not 0 < timeout <= 86400:
        raise ValueError(f"a render time limit must be more than 0 and at most 86400 seconds, got {timeout_s}")
    if chars < 1:
        raise ValueError(f"a render output limit must be 1 character or more, got {max_chars}")
    _limits = RenderLimits(timeout, chars)
    return _limits


def render_limits() -> RenderLimits:
    """The render limits in force in this process."""
    return _limits


class RenderFailure(Exception):
    """A render that failed (see the module doc for the fields)."""

    def __init__(self, kind: str, message: str, line: int | None = None, limit: bool = False):
        super().__init__(f"{kind}: {message}")
        self.kind, self.message, self.line, self.limit = kind, message, line, limit


# --- the parent side ----------------------------------------------------------------------------------------


class _Worker:
    """One render worker process and the templates it holds."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[2])
        self.pid = os.getpid()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, root], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        self.keys: dict[str, int] = {}
        self.ready = False

    def _await_ready(self) -> None:
        ready = self._read(START_TIMEOUT_S, "start")
        if not (isinstance(ready, tuple) and ready[0] == "ready"):
            self.kill()
            detail = ready[1] if isinstance(ready, tuple) and len(ready) > 1 else ready
            raise RenderFailure("render worker", f"could not start: {detail}", limit=True)
        self.ready = True

    def render(self, text: str, kwargs: dict, limits: RenderLimits) -> str:
        if not self.ready:
            self._await_ready()
        key = self.keys.get(text)
        send = key is None
        if key is None:
            key = self.keys[text] = len(self.keys)
        payload = pickle.dumps((key, text if send else None, kwargs, limits.timeout_s, limits.max_chars), protocol=5)
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(_HEADER.pack(len(payload)) + payload)
        except OSError:
            raise RenderFailure("render worker", self._death(), limit=True) from None
        reply = self._read(limits.timeout_s, "render")
        if reply[0] == "ok":
            return reply[1]
        _, kind, message, line, limit = reply
        if kind == "out of memory":  # the worker exits after one: Python may not recover in every library
            self.kill()
        raise RenderFailure(kind, message, line, limit)

    def _read(self, timeout_s: float, what: str) -> Any:
        """The next frame, within ``timeout_s`` seconds; kills the worker and raises on a timeout or its death."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        buffer = bytearray()
        need = _HEADER.size
        while len(buffer) < need:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.kill()
                if what == "start":
                    raise RenderFailure("render worker", f"did not start within {timeout_s:g} s", limit=True)
                raise RenderFailure("time limit", f"no result within {timeout_s:g} s (--render-timeout)", limit=True)
            chunk = os.read(fd, max(need - len(buffer), 1 << 16))
            if not chunk:
                raise RenderFailure("render worker", self._death(), limit=True)
            buffer += chunk
            if need == _HEADER.size and len(buffer) >= need:
                need += _HEADER.unpack_from(buffer)[0]
        return pickle.loads(buffer[_HEADER.size : need])

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self.kill()
        if code is not None and code < 0:
            return f"exited on signal {-code} (killed: out of memory or CPU time?)"
        return f"exited with status {code}"

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None

    def kill(self) -> None:
        if self.pid != os.getpid():  # a forked child's copy: the parent's worker is not ours to stop
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()

    def close(self) -> None:
        """Ask the worker to exit (end of its input); kill it if it has not within a second."""
        if self.pid != os.getpid():
            return
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=1)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


_worker: _Worker | None = None
_lock = threading.Lock()


def _forget_after_fork() -> None:
    global _worker, _lock
    _worker, _lock = None, threading.Lock()


def _stop() -> None:
    if _worker is not None:
        _worker.close()


os.register_at_fork(after_in_child=_forget_after_fork)
atexit.register(_stop)


def prestart() -> None:
    """Start this process's render worker now, without waiting for it (its imports then overlap other work)."""
    global _worker
    with _lock:
        if _worker is None or not _worker.alive():
            _worker = _Worker()


def render_bounded(text: str, limits: RenderLimits | None = None, **kwargs: Any) -> str:
    """``render_jinja_template(conversations=[...], chat_template=text, **kwargs)[0][0]`` in the render worker,
    within ``limits`` (default: :func:`render_limits`). ``kwargs`` are pickled: plain data only. Raises
    :class:`RenderFailure`."""
    global _worker
    limits = limits or _limits
    with _lock:
        if _worker is None or not _worker.alive():
            _worker = _Worker()
        worker = _worker
        try:
            return worker.render(text, kwargs, limits)
        except BaseException:
            if not worker.alive() or not isinstance(sys.exc_info()[1], RenderFailure):
                worker.kill()  # dead, or interrupted mid-request (Ctrl-C): its next reply would be this one's
                _worker = None
            raise


# --- the worker side ----------------------------------------------------------------------------------------


def _template_line(exc: BaseException) -> int | None:
    """The template line of a Jinja error: ``lineno`` for syntax errors, else the last template frame."""
    import jinja2

    if isinstance(exc, jinja2.TemplateSyntaxError) and exc.lineno:
        return exc.lineno
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _address_space_limit() -> int | None:
    """Cap this process's address space at its size now plus :data:`MEMORY_HEADROOM_BYTES`; the cap, or None."""
    import resource

    try:
        with open("/proc/self/status", encoding="ascii") as status:
            size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
        cap = size + MEMORY_HEADROOM_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
        return cap
    except (OSError, ValueError, StopIteration):
        return None


def _cpu_limit(seconds: float) -> None:
    """Let this process use ``seconds`` (+1) more CPU seconds, then be killed by ``SIGXCPU``."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds + 1)
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    except (OSError, ValueError):
        pass


def _serve_one(render, templates: dict[int, str], request: tuple) -> tuple:
    import jinja2

    key, text, kwargs, timeout_s, max_chars = request
    if text is not None:
        templates[key] = text
    _cpu_limit(timeout_s)
    try:
        rendered = render(conversations=[kwargs.pop("messages")], chat_template=templates[key], **kwargs)[0][0]
    except MemoryError:
        return ("error", "out of memory", f"more than {MEMORY_HEADROOM_BYTES >> 20} MiB", None, True)
    except Exception as exc:  # every failure inside a template is the template's
        kind = "Jinja error" if isinstance(exc, jinja2.TemplateError) else type(exc).__name__
        return ("error", kind, str(exc).strip() or type(exc).__name__, _template_line(exc), False)
    if len(rendered) > max_chars:
        wrote = f"it wrote {len(rendered):,} characters, more than {max_chars:,} (--render-max-chars)"
        return ("error", "output limit", wrote, None, True)
    return ("ok", rendered)


def serve() -> None:
    """The worker's loop (see the module doc). Exits at the end of its input, or after running out of memory."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # whatever a library prints goes to stderr, not into the protocol
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer

    def send(value: Any) -> None:
        data = pickle.dumps(value, protocol=5)
        out.write(_HEADER.pack(len(data)) + data)

    try:
        from transformers.utils.chat_template_utils import render_jinja_template
    except Exception as exc:
        send(("fatal", f"cannot import transformers' renderer: {type(exc).__name__}: {exc}"))
        return
    send(("ready", _address_space_limit()))
    templates: dict[int, str] = {}
    while True:
        header = inp.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        request = pickle.loads(inp.read(_HEADER.unpack(header)[0]))
        try:
            reply = _serve_one(render_jinja_template, templates, request)
        except MemoryError:
            reply = ("error", "out of memory", f"more than {MEMORY_HEADROOM_BYTES >> 20} MiB", None, True)
        try:
            send(reply)
        except MemoryError:
            send(("error", "out of memory", "the result could not be sent", None, True))
        if reply[0] == "error" and reply[1] == "out of memory":
            return
