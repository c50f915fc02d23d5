"""Peer test suites (canitoolcall's fixtures, llama.cpp's chat tests) read as harness cases, one slice each."""
