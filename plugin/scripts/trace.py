#!/usr/bin/env python3
"""Trace an answer's claims to the exact paper passages that support them (= ``episteme trace``)."""

import sys

import _bootstrap

_bootstrap.require("chromadb", "onnxruntime", "tokenizers", "numpy")

from episteme.commands.trace import main  # noqa: E402

sys.exit(main())
