"""Helpers the tests share (imported as ``helpers.<module>``; ``tests/`` is on the path):
no test module imports another test module."""
