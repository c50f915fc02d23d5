"""Stage 4, parse: which parsers exist (registry, loader), how a text is fed to them (modes) and how a call to one
is guarded."""
