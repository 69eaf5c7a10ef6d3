#!/usr/bin/env python3
"""Retrieve, answer and trace in one go (= ``episteme chat``)."""

import sys

import _bootstrap

_bootstrap.require("chromadb", "onnxruntime", "tokenizers", "numpy")

from episteme.commands.chat import main  # noqa: E402

sys.exit(main())
