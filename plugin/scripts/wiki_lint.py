#!/usr/bin/env python3
"""Check the wiki: links, frontmatter vs SCHEMA.md, sections vs index.md/index.json, log.md,
memory tiers, with ``--stores`` raw/ + SQLite + Chroma, and with ``--claims`` every sentence
of every section against its source papers.  ``--fix`` applies the safe
repairs.  ``--help`` lists the options; the logic is in ``episteme.commands.lint`` (the same as
``episteme lint``)."""

import sys

import _bootstrap

if "--stores" in sys.argv[1:] or "--claims" in sys.argv[1:]:
    _bootstrap.require("yaml", "chromadb", "onnxruntime", "tokenizers")
else:
    _bootstrap.require("yaml")

from episteme.commands.lint import main  # noqa: E402

if __name__ == "__main__":
    _bootstrap.run_once(main)
