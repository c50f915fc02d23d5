"""The project's own parsers, one module per format."""
