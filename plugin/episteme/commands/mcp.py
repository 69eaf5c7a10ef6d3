"""``episteme mcp``: the MCP server over stdio (see :mod:`episteme.server.mcp`)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from ..server.mcp import main as serve

    return serve(argv)
