"""What one request to a server may use, checked as its response arrives: a total deadline and a byte cap.

A server that keeps a stream alive with ``: ping`` comments, never ends it, or answers a huge body must not hold
a capture: :class:`Budget` raises :class:`Overrun` (the reason in its message) at the first chunk past the
deadline or past the cap, and :meth:`Budget.read` reads an error body only up to its cap. Byte counts are of the
decoded body (after ``Content-Encoding``). Defaults and reasons: ``docs/capture/openai.md`` ("Limits").
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Iterator
from dataclasses import dataclass

DEADLINE_S = 600.0  # seconds one prompt may take, every attempt and backoff included
BYTES_PER_TOKEN = 16384  # response bytes allowed per max_tokens token (SSE framing, ids, logprobs)
BASE_BYTES = 64 * 1024  # response bytes allowed whatever max_tokens is (first and usage chunks, pings)
ERROR_BODY_BYTES = 64 * 1024  # bytes of an HTTP error body read (the message keeps its first 300 characters)


class Overrun(Exception):
    """A response went past its request's deadline or byte cap; the message says which (and the flag)."""


def response_cap(max_tokens: int, bytes_per_token: int = BYTES_PER_TOKEN) -> int:
    """Bytes a response to a request for ``max_tokens`` tokens may hold: ``BASE_BYTES`` plus
    ``bytes_per_token`` per token."""
    return BASE_BYTES + max(0, max_tokens) * bytes_per_token


@dataclass(frozen=True)
class Budget:
    """One request's limits: ``deadline`` (a ``time.monotonic()`` instant; ``deadline_s`` is the total it was
    given, for messages) and ``max_bytes`` (the response cap, :func:`response_cap`; ``bytes_per_token`` for
    messages)."""

    deadline: float
    deadline_s: float
    max_bytes: int
    bytes_per_token: int = BYTES_PER_TOKEN

    @classmethod
    def start(cls, deadline_s: float, max_tokens: int, bytes_per_token: int = BYTES_PER_TOKEN) -> Budget:
        """A budget starting now."""
        cap = response_cap(max_tokens, bytes_per_token)
        return cls(time.monotonic() + deadline_s, deadline_s, cap, bytes_per_token)

    def left(self) -> float:
        """Seconds until the deadline (0 or less once past it)."""
        return self.deadline - time.monotonic()

    def check_time(self) -> None:
        """Raise :class:`Overrun` once past the deadline."""
        if self.left() <= 0:
            raise Overrun(f"deadline: the request ran past its {self.deadline_s:g} s (--request-deadline)")

    def too_large(self) -> Overrun:
        """The :class:`Overrun` of a response over ``max_bytes``."""
        return Overrun(
            f"response too large: more than {self.max_bytes} bytes ({BASE_BYTES // 1024} KiB + "
            f"{self.bytes_per_token} per max_tokens token; --max-bytes-per-token)"
        )

    def chunks(self, response) -> Iterator[bytes]:
        """The decoded body of an ``httpx`` streaming ``response`` as it arrives; raises :class:`Overrun` at the
        first chunk past the deadline or once more than ``max_bytes`` arrived."""
        received = 0
        for chunk in response.iter_bytes():
            received += len(chunk)
            if received > self.max_bytes:
                raise self.too_large()
            self.check_time()
            yield chunk

    def text(self, response) -> Iterator[str]:
        """:meth:`chunks` decoded as UTF-8 (invalid bytes replaced), pieces split inside a character joined."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        for chunk in self.chunks(response):
            text = decoder.decode(chunk)
            if text:
                yield text
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail

    def read(self, response, limit: int) -> tuple[bytes, bool]:
        """Up to ``limit`` bytes of the body (the deadline checked), and whether there was more (left unread:
        the connection is dropped when the response closes)."""
        parts, size = [], 0
        for chunk in response.iter_bytes():
            self.check_time()
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                return b"".join(parts)[:limit], True
        return b"".join(parts), False


class SSEBody:
    """What ``httpx_sse.EventSource`` reads of a response (``headers``, ``iter_text()``), with ``budget``
    checked at every chunk (:meth:`Budget.text`)."""

    def __init__(self, response, budget: Budget):
        self.headers, self._response, self._budget = response.headers, response, budget

    def iter_text(self) -> Iterator[str]:
        return self._budget.text(self._response)
