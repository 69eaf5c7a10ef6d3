#!/usr/bin/env python3
"""For each section of an ingested paper, list the related wiki sections (= ``episteme plan``)."""

import sys

import _bootstrap

_bootstrap.require("chromadb", "onnxruntime", "tokenizers", "numpy")

from episteme.commands.plan import main  # noqa: E402

sys.exit(main())
