#!/usr/bin/env python3
"""Check the wiki: links, frontmatter vs SCHEMA.md, sections vs index.md/index.json, log.md,
memory tiers, and with ``--stores`` raw/ + SQLite + Chroma.  ``--fix`` applies the safe
repairs.  ``--help`` lists the options; the logic is in ``episteme.commands.lint`` (the same as
``episteme lint``)."""

import gc
import os
import sys

import _bootstrap

if "--stores" in sys.argv[1:]:
    _bootstrap.require("yaml", "chromadb", "onnxruntime", "tokenizers")
else:
    _bootstrap.require("yaml")

from episteme.commands.lint import main  # noqa: E402

if __name__ == "__main__":
    # A one-shot command that ends with os._exit (as graph_query.py): no cyclic garbage is
    # worth collecting, and the report (every page object) is held until the exit so that it
    # is never freed object by object.
    gc.disable()
    held: list = []
    rc = main(hold=held)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
