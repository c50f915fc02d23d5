"""A protocol worker that misbehaves on purpose, for the harness' fault-handling tests.

It serves the project's own Gemma 4 parser (``harness.engines.server``), except when a ``parse`` text or the
text a stream has been fed so far contains a trigger word: ``CRASH`` exits at once (status 7, after a line on stderr),
``HANG`` never answers, ``GARBAGE`` answers with a line that is not JSON, ``WRONGID`` answers another request id,
``NULLNAME`` answers a well-formed line whose fields break the protocol (``parse``: every call's ``name`` null, one
call added when there is none; ``finish``: a tool-call piece with ``index`` null).
Argument ``--fail-start`` makes it exit before answering ``hello``; ``--surrogate`` makes every answer's content end
with a lone surrogate (``"\\ud800"`` in the JSON line), one-shot and streamed. ``--always WORD`` acts as if every
``parse`` and ``feed`` text held ``WORD`` (a worker dead for the whole run); ``--stall-restart FILE`` answers
``hello`` when ``FILE`` does not exist (and creates it), and never answers it when it does (every restart stalls).
``--stderr-flood BYTES`` writes ``BYTES`` bytes to stderr with no newline before each ``parse`` and ``finish``
answer (one endless log line), then answers as usual.
"""

import json
import os
import sys
import time

from harness.engines.server import Server, load_parsers


def main() -> None:
    if "--fail-start" in sys.argv:
        print("cannot load the parser library [/INST]", file=sys.stderr, flush=True)  # markup-like text too
        sys.exit(5)
    stall = _value("--stall-restart")
    if stall is not None:
        if os.path.exists(stall):
            time.sleep(3600)
        open(stall, "w").close()
    always = _value("--always") or ""
    flood = int(_value("--stderr-flood") or 0)
    server = Server(load_parsers(["parsers.own.gemma4"]))
    out = sys.stdout
    streamed: dict[str, str] = {}
    for line in sys.stdin:
        request = json.loads(line)
        text = request.get("text") or ""
        if request.get("op") == "feed":
            text = streamed[request["stream"]] = streamed.get(request["stream"], "") + request["chunk"]
        if request.get("op") in ("parse", "feed"):
            text += always
        if "CRASH" in text:
            print("faulty worker: crashing on purpose", file=sys.stderr, flush=True)
            os._exit(7)
        if "HANG" in text:
            time.sleep(3600)
        if "GARBAGE" in text:
            out.write("this is not json {\n")
            out.flush()
            continue
        if flood and request.get("op") in ("parse", "finish"):
            for _ in range(flood >> 16):
                sys.stderr.write("x" * (1 << 16))
            sys.stderr.flush()
        response_id = request["id"] + 1000 if "WRONGID" in text else request["id"]
        result = server.handle(request)
        if "NULLNAME" in text and request.get("op") == "parse":
            result["tool_calls"] = [{**c, "name": None} for c in result["tool_calls"]] or [{"name": None}]
        elif request.get("op") == "finish" and "NULLNAME" in streamed.get(request["stream"], ""):
            result["deltas"].append({"tool_calls": [{"index": None, "name": "f"}]})
        if "--surrogate" in sys.argv and request.get("op") == "parse":
            result["content"] = (result["content"] or "") + "\ud800"
        elif "--surrogate" in sys.argv and request.get("op") == "finish":
            result["deltas"].append({"content": "\ud800"})
        out.write(json.dumps({"id": response_id, "ok": True, "result": result}) + "\n")
        out.flush()


def _value(flag: str) -> str | None:
    """The argument after ``flag`` on the command line, or None."""
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv[:-1] else None


if __name__ == "__main__":
    main()
