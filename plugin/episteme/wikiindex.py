"""Compatibility alias: this module moved to :mod:`episteme.wiki.index`.

Kept only while the heavy modules (wikiwrite, writer, ingest, server, wikisearch, trace) still
import the old name; remove once they are moved into their subpackages."""

import sys

from .wiki import index as _moved

sys.modules[__name__] = _moved
