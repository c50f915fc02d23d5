"""Engine: Ollama's tool-call parsers, listed as unavailable on this machine kind.

Ollama's parsers are Go (``github.com/ollama/ollama/model/parsers``: ``ParserForName(name)`` gives a ``Parser``
whose ``Init(tools, lastMessage)`` and ``Add(text, done) -> (content, thinking, calls, err)`` are the streaming
interface its server drives). Building a Go worker over that package needs the Go module proxy, which this
machine kind cannot reach (no Go toolchain or ``GOPROXY`` mirror; see ``docs/worker-protocol.md``, "A Go worker
(sketch)"). ``toolcall-harness parsers`` lists the reason; there is no parser to run.
"""

from __future__ import annotations

from harness.core.errors import HarnessError

#: registered in-process so the registry lists the reason (:func:`harness.parse.registry.unavailable_parsers`);
#: ``UNAVAILABLE`` marks a reference module with no engine to build.
IN_PROCESS = True
UNAVAILABLE = (
    "Ollama's parsers are Go (github.com/ollama/ollama/model/parsers); a worker over them needs the Go module "
    "proxy, which this machine kind cannot reach (docs/worker-protocol.md, 'A Go worker (sketch)')"
)


class OllamaUnavailable(HarnessError):
    """Raised by :func:`ollama`: the reason Ollama's parsers cannot run here."""


def ollama():
    """The parser factory: raises :class:`OllamaUnavailable` with :data:`UNAVAILABLE`."""
    raise OllamaUnavailable(UNAVAILABLE)


PARSERS = [ollama]
