"""What the engine tests share: a declared tool, a call to it, the thinking-off prefix, and the fixture body
that builds an engine (from the user cache, or cold) and starts its worker."""

from harness import engines
from parsers import get_any_parser

OFF = "<|channel>thought\n<channel|>"  # Gemma 4 prefix with thinking off (the template's default)
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                                          "note": {"type": ["string", "null"]}}}}}]
CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>'


def engine_worker(name: str):
    """Yield ``name``'s Gemma 4 worker parser (built first if missing); stop it afterwards."""
    engines.install(name)
    parser = get_any_parser(name, "gemma4")
    yield parser
    parser.close()
