"""Capture backends: run a model on a rendered prompt and return what it generated, piece by piece.

One module per backend, found by discovery (:func:`backend_modules`: this package's modules, the backend name being
the module name with ``-`` for ``_``, plus entry points of group ``toolcall_harness.backends``); each exposes
``create(weights, **options) -> Backend``. Adding a backend is adding its module and its tests.

- ``transformers`` (:mod:`harness.capture.backends.transformers`): a Hugging Face model folder on CPU (CUDA when
  present), ``generate`` with a streamer, special tokens kept.
- ``llama-cpp`` (:mod:`harness.capture.backends.llama_cpp`): a GGUF through llama-cpp-python, raw completion of
  the rendered prompt, optional GBNF grammar.
- ``mlx-lm`` (:mod:`harness.capture.backends.mlx_lm`): an MLX (or Hugging Face) model folder, ``stream_generate``.
- ``openai`` (:mod:`harness.capture.backends.openai`): any OpenAI-compatible server, ``/v1/completions`` with the
  rendered prompt or ``/v1/chat/completions`` with ``tools`` (the server's own parsed calls are kept).

A backend never raises for a failed generation: it returns a :class:`Generation` with ``error`` set (the capture
is recorded as a capture error). It raises :class:`BackendError` only when it cannot start at all (library
missing, weights unreadable), with a message saying what to install or download.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Protocol

from harness.core.errors import HarnessError


class BackendError(HarnessError):
    """A backend cannot start: its library is missing or the weights cannot be loaded. The message says what
    to install or download."""


@dataclass(frozen=True)
class Weights:
    """Where a model's weights are: ``path`` (a GGUF file or a model folder), ``kind`` (``gguf``, ``hf``,
    ``mlx``, ``server``), ``source`` (plain words: which catalog field, cache or package supplied it),
    ``sha256`` (of the GGUF file, or of the folder's weight files in name order; ``""`` for a server)."""

    path: str
    kind: str
    source: str
    sha256: str = ""
    name: str = ""  # catalog model name

    def to_json(self) -> dict:
        return {"name": self.name, "file": self.path, "kind": self.kind, "source": self.source, "sha256": self.sha256}


@dataclass(frozen=True)
class Sampling:
    """Sampling parameters recorded with every capture. ``temperature`` 0 is greedy; ``max_tokens`` bounds the
    completion; ``seed`` seeds the backend's sampler."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int = 0

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Request:
    """One generation request.

    - ``prompt_text``: the prompt rendered through the model's chat template with ``add_generation_prompt``
      (special tokens as text, BOS included when the template writes it); ``prefix``: the end of it that the
      template pre-fills for the answer (Gemma 4 thinking off: ``<|channel>thought\n<channel|>``);
    - ``messages``/``tools``: the same prompt unrendered, for servers in chat mode;
    - ``force_text``: for fixture models only: the backend must generate exactly this text (a logits processor
      or a token-reference grammar), so the whole pipeline runs on a known answer;
    - ``grammar``: a GBNF grammar constraining the output (llama-cpp; servers that accept ``grammar``);
    - ``stop``: strings that end generation (the format's stop markers); like a server, a backend leaves the
      stop string out of the pieces and reports ``finish_reason`` ``stop``. End-of-generation tokens stop too.
    """

    prompt_id: str
    prompt_text: str
    prefix: str = ""
    sampling: Sampling = field(default_factory=Sampling)
    messages: list = field(default_factory=list)
    tools: list = field(default_factory=list)
    force_text: str | None = None
    grammar: str | None = None
    stop: tuple[str, ...] = ()


@dataclass
class Generation:
    """What a backend produced for one request.

    - ``pieces``: ``[(text, [token ids]), ...]`` in generation order, special tokens kept as text; ``"".join``
      of the texts is the raw completion. Token ids are ``[]`` where the backend does not expose them.
    - ``finish_reason``: ``stop``, ``length``, ``tool_calls`` (servers) or None;
    - ``server_message``: chat mode only: the server's parsed message ``{content, reasoning, tool_calls:
      [{name, arguments}]}``;
    - ``error``: why the generation failed (connection refused, HTTP status, truncated stream, exception);
    - ``elapsed_s``: wall time in seconds; ``tokens``: completion tokens (servers: from ``usage`` when sent).
    """

    pieces: list = field(default_factory=list)
    finish_reason: str | None = None
    server_message: dict | None = None
    error: str | None = None
    elapsed_s: float = 0.0  # wall time of the request, seconds
    tokens: int = 0  # completion tokens generated (0 where unknown)

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.pieces)


OnPiece = Callable[[str, list], None]


class Backend(Protocol):
    """What :mod:`harness.capture.run` drives. ``name`` is the backend name (``llama-cpp``); ``weights`` what it
    loaded; ``max_concurrency`` how many requests may run at once (1 for local models)."""

    name: str
    weights: Weights
    max_concurrency: int

    def versions(self) -> dict[str, str]:
        """Versions of the libraries generating (``{"llama-cpp-python": "0.3.36"}``)."""

    def generate(self, request: Request, on_piece: OnPiece | None = None) -> Generation:
        """Generate for ``request``; ``on_piece(text, token_ids)`` is called as each piece arrives."""

    def close(self) -> None:
        """Free the model / connections."""


class PieceCollector:
    """Turns generated token ids into ``(text, [ids])`` pieces for local backends.

    ``decode(ids) -> str`` decodes ids with special tokens kept. A token that ends inside a UTF-8 character
    (byte-fallback tokens) decodes with a trailing U+FFFD: its id waits and joins the next piece, so every
    piece is whole text. Like a server, pieces whose end could begin a ``stop`` string are held back until
    it is known; :meth:`add` returns True when a stop string has appeared, and the text from it on is left
    out. ``on_piece(text, ids)`` is called for each piece as it is released."""

    def __init__(self, decode: Callable[[list], str], stop: tuple[str, ...] = (), on_piece: OnPiece | None = None):
        self.decode, self.stop, self.on_piece = decode, tuple(s for s in stop if s), on_piece
        self.pieces: list = []
        self.pending: list = []  # ids of an unfinished UTF-8 character
        self.held: list = []  # pieces that may be the start of a stop string
        self.text = ""
        self.tokens = 0

    def add(self, token_id: int) -> bool:
        self.tokens += 1
        self.pending.append(int(token_id))
        piece = self.decode(self.pending)
        if piece.endswith("\ufffd") and len(self.pending) < 4:
            return False
        self.held.append((piece, self.pending))
        self.pending = []
        window = "".join(text for text, _ in self.held)
        found = [window.find(s) for s in self.stop if s in window]
        if found:
            self._release(min(found))
            return True
        if not any(window.endswith(s[:k]) for s in self.stop for k in range(1, len(s))):
            self._release(len(window))
        return False

    def flush(self) -> list:
        """The pieces, with anything held back or still waiting released as it is."""
        if self.pending:
            self.held.append((self.decode(self.pending), self.pending))
            self.pending = []
        self._release(sum(len(text) for text, _ in self.held))
        return self.pieces

    def _release(self, upto: int) -> None:
        """Emit the held pieces, cut at character ``upto`` of their joined text."""
        at = 0
        for text, ids in self.held:
            keep = text[: max(0, upto - at)]
            at += len(text)
            if keep:
                self.pieces.append((keep, ids))
                self.text += keep
                if self.on_piece:
                    self.on_piece(keep, ids)
        self.held = []


def generate_local(
    request: Request,
    on_piece: OnPiece | None,
    decode: Callable[[list], str],
    run: Callable[[Request, PieceCollector], str],
) -> Generation:
    """A local backend's ``generate``: ``run(request, collector)`` feeds token ids to a :class:`PieceCollector`
    over ``decode`` and returns the finish reason. An exception it raises is recorded, not raised:
    ``Generation.error`` is ``"Type: message"`` and the pieces are those collected so far. ``elapsed_s``: wall
    time in seconds."""
    started = time.perf_counter()
    collector = PieceCollector(decode, request.stop, on_piece)
    try:
        finish = run(request, collector)
    except Exception as exc:  # a failed generation is recorded, not raised
        return Generation(
            collector.flush(),
            None,
            error=f"{type(exc).__name__}: {exc}",
            elapsed_s=time.perf_counter() - started,
            tokens=collector.tokens,
        )
    return Generation(collector.flush(), finish, elapsed_s=time.perf_counter() - started, tokens=collector.tokens)


BACKEND_ENTRY_POINTS = "toolcall_harness.backends"


def backend_modules() -> dict[str, str]:
    """``{backend name: module}``: this package's modules (``llama_cpp`` is ``llama-cpp``), then the entry points of
    group :data:`BACKEND_ENTRY_POINTS` (out-of-tree backends). Modules are not imported here."""
    found = {
        info.name.replace("_", "-"): f"{__name__}.{info.name}"
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    }
    for point in importlib.metadata.entry_points(group=BACKEND_ENTRY_POINTS):
        found.setdefault(point.name, point.value)
    return found


def known_backends() -> list[str]:
    return list(backend_modules())


def create_backend(name: str, weights: Weights, **options) -> Backend:
    """The backend ``name`` loaded with ``weights``. Raises :class:`BackendError` for an unknown name (listing
    the known ones), a missing library, or unloadable weights."""
    modules = backend_modules()
    if name not in modules:
        raise BackendError(f"unknown backend {name!r}; known: {', '.join(modules)}")
    module = importlib.import_module(modules[name])
    return module.create(weights, **options)
