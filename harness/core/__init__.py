"""Core shapes every stage shares (standard library only, importable inside engine virtualenvs): messages,
cases and scenarios, the parser protocol, results, errors, guards, paths and text output (textio)."""
