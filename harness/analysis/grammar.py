"""The grammar oracle: does the tool-call grammar engines compile for guided decoding accept the ground truth?

The grammar is xgrammar's built-in structural tag of the format (``FormatSpec.grammar``, a name for
``xgrammar.get_model_structural_tag``, built with each case's tools, ``reasoning="auto"``), matched against what the
model's turn holds after the role header: the case's prefix (what the generation prompt pre-filled) followed by its
text. This checks the corpus, not a parser: a rendered case (slices ``curated``, ``generated``) the grammar rejects is
a template-vs-grammar disagreement (guided decoding would forbid what the template writes), and a drift case it
accepts is flagged too (guided decoding would let that damage through).

xgrammar is pinned (:data:`XGRAMMAR`; the version vLLM's engine environment holds) and installed without its
dependencies (``make`` does: torch, pydantic and transformers are the harness' own); without it :func:`check_corpus`
says why in ``unavailable``. Shapes: :func:`check_corpus` returns the JSON-ready ``run.json`` entry
``{"engine", "tag", "accepted", "total", "rejected": [[case id, detail]], "drift_accepted": [case id],
"drift_total"}``, or ``{"unavailable": reason}``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable

from harness.core.cases import Case
from harness.formats import FormatSpec

XGRAMMAR = ("xgrammar", "0.2.9")
INSTALL = "pip install --no-deps xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2"
RENDERED = ("curated", "generated")
MAX_LISTED = 200


def unavailable() -> str | None:
    """Why the oracle cannot run (xgrammar missing or another version), or ``None``."""
    try:
        from importlib.metadata import version

        import xgrammar  # noqa: F401
    except Exception as exc:  # an import error of xgrammar or of its native part
        return f"xgrammar is not installed ({type(exc).__name__}: {exc}): {INSTALL}"
    found = version("xgrammar")
    return None if found == XGRAMMAR[1] else f"xgrammar {found} is installed, the oracle pins {XGRAMMAR[1]}: {INSTALL}"


@functools.lru_cache(maxsize=256)
def _compiled(tag: str, tools_json: str):
    import xgrammar as xg

    structural = xg.get_model_structural_tag(tag, tools=json.loads(tools_json), reasoning="auto")
    compiler = xg.GrammarCompiler(xg.TokenizerInfo([]), cache_enabled=False)
    return compiler.compile_grammar(xg.Grammar.from_structural_tag(structural))


def first_rejection(tag: str, tools: list | None, text: str) -> str | None:
    """``None`` when the grammar of ``tag`` with ``tools`` accepts the whole ``text``, else where it stopped:
    ``rejected at char N: '...'`` or ``incomplete at the end``."""
    import xgrammar as xg

    grammar = _compiled(tag, json.dumps(tools or [], sort_keys=True))
    matcher = xg.GrammarMatcher(grammar, terminate_without_stop_token=True)
    if matcher.accept_string(text):
        return None if matcher.is_terminated() else "incomplete at the end"
    matcher = xg.GrammarMatcher(grammar, terminate_without_stop_token=True)
    for i, char in enumerate(text):
        if not matcher.accept_string(char):
            return f"rejected at char {i}: {text[max(0, i - 30) : i]!r} + {text[i : i + 20]!r}"
    return "rejected"


def grammar_inputs(case: Case, fmt: FormatSpec) -> list[str]:
    """What the model generates for ``case``, in the forms tried: its text with the stop marker the render stripped
    (``extra["stop"]``: some grammars end on it, Harmony's ``<|call|>``), then without it (others exclude special
    tokens). A pre-filled reasoning opener the text continues is written before it, as the prompt wrote it."""
    text = case.text
    if fmt.thought_markers:
        opener = fmt.thought_markers[0].rstrip()
        at = case.prefix.rfind(opener)
        if at >= 0 and fmt.thought_markers[1] not in case.prefix[at:]:
            text = case.prefix[at:] + text
    stop = str(case.extra.get("stop") or "")
    return [text + stop, text] if stop else [text]


def check_corpus(cases: Iterable[Case], fmt: FormatSpec) -> dict | None:
    """The oracle's entry for a run of format ``fmt`` (module docstring); ``None`` when the format has no grammar."""
    if not fmt.grammar:
        return None
    reason = unavailable()
    if reason:
        return {"unavailable": reason}
    out: dict = {"engine": f"{XGRAMMAR[0]} {XGRAMMAR[1]}", "tag": fmt.grammar, "accepted": 0, "total": 0}
    rejected, drift_accepted, drift_total = [], [], 0
    for case in cases:
        if case.slice not in (*RENDERED, "drift"):
            continue
        problems = [first_rejection(fmt.grammar, case.tools, text) for text in grammar_inputs(case, fmt)]
        problem = None if None in problems else problems[-1]
        if case.slice == "drift":
            drift_total += 1
            if problem is None:
                drift_accepted.append(case.id)
            continue
        out["total"] += 1
        if problem is None:
            out["accepted"] += 1
        else:
            rejected.append([case.id, problem])
    out["rejected"] = rejected[:MAX_LISTED]
    out["drift_accepted"] = drift_accepted[:MAX_LISTED]
    out["drift_total"] = drift_total
    return out
