"""``episteme mcp``: the MCP server over stdio (see :mod:`episteme.mcp_server`)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from ..mcp_server import main as serve

    return serve(argv)
