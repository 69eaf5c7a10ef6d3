#!/usr/bin/env python3
"""The episteme MCP server over stdio (= ``episteme mcp``); what .mcp.json starts."""

import sys

import _bootstrap

_bootstrap.require("mcp", "chromadb", "onnxruntime", "tokenizers", "numpy")

from episteme.server.mcp import main  # noqa: E402

sys.exit(main())
