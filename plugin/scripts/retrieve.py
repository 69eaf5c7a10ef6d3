#!/usr/bin/env python3
"""Find the wiki sections relevant to a question (= ``episteme retrieve``)."""

import sys

import _bootstrap

_bootstrap.require("chromadb", "onnxruntime", "tokenizers", "numpy")

from episteme.commands.retrieve import main  # noqa: E402

sys.exit(main())
