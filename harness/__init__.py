"""toolcall-harness: differential testing and evaluation of LLM tool-call parsers."""

import os

# The harness uses transformers for rendering and parsing only, never for models: silence its advice that
# PyTorch is missing (printed at import otherwise).
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
