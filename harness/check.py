"""``toolcall-harness check``: score an external case file with one parser."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from harness.cases import load_cases
from harness.errors import HarnessError
from harness.formats import get_format
from harness.runner import DEFAULT_TIMEOUT_S, ResultsWriter, evaluate_case, modes_for


def check_file(path: Path, parser_name: str, modes: tuple[str, ...] = ("oneshot",), fmt: str | None = None,
               seed: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, out: Path | None = None) -> dict[str, int]:
    """Score every case of ``path`` (of the parser's formats) with ``parser_name`` in ``modes``.

    Writes one record per (case, mode) to ``out`` when given (fields include case_id, parser, mode, verdict,
    error_type, detail, got). Returns verdict counts. Raises ``HarnessError`` for an unknown parser or a
    malformed file (naming file and line); cases of formats the parser does not handle are left out and
    counted as ``other_format``.
    """
    from parsers import get_parser

    parser = get_parser(parser_name, fmt)
    cases = load_cases(path, fmt=fmt)
    if not cases:
        raise HarnessError(f"{path}: no cases" + (f" of format {fmt}" if fmt else ""))
    spec_modes = modes_for(parser, modes, get_format(parser.formats[0]))
    skipped = [m for m in modes if m not in spec_modes]
    if skipped:
        raise HarnessError(f"mode(s) {', '.join(skipped)} do not apply to {parser.name} "
                           "(prefix: only the project's own incremental parsers; tokens: formats with a real vocabulary)")
    counts: Counter = Counter()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("")
    writer = ResultsWriter(out) if out is not None else None
    try:
        for case in cases:
            if case.format not in parser.formats:
                counts["other_format"] += 1
                continue
            spec = get_format(case.format)
            for record in evaluate_case(case, parser, spec, modes_for(parser, modes, spec), seed, timeout_s):
                counts[record.verdict] += 1
                if writer:
                    writer.write(record)
    finally:
        if writer:
            writer.close()
    return dict(counts)
