"""Comparison helpers shared by the wiki-model tests."""

from __future__ import annotations


def same(a, b) -> bool:
    """Deep equality that also compares types (True != 1, date != '2024-01-01')."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b
