#!/usr/bin/env python3
"""Ingest a PDF into the wiki's stores: raw/ + SQLite + Chroma (= ``episteme ingest``)."""

import sys

import _bootstrap

_bootstrap.require("pypdf", "chromadb", "onnxruntime", "tokenizers", "numpy")

from episteme.commands.ingest import main  # noqa: E402

if __name__ == "__main__":  # (batch workers are spawned: they import this file)
    sys.exit(main())
