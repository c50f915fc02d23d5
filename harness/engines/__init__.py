"""Out-of-process machinery: engine recipes and their cached environments, the worker protocol client and
server, and compiled wheels built once."""
