"""Peer test suites read as corpora: canitoolcall's fixtures and llama.cpp's ``test-chat.cpp`` cases."""
