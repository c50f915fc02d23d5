"""The pytest plugin's marker and option defaults, shared by its entry point and its corpus items."""

MARKER = "toolcall"
DEFAULT_MODEL = "gemma-4-e2b"
DEFAULT_SLICES = ("curated", "observed")
DEFAULT_MODES = ("oneshot", "char")
