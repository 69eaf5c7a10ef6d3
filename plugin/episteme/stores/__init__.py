"""The derived stores: SQLite (papers, sections, passages, objects), Chroma passage vectors,
the embedding model, and the tracer's per-paper vector cache.

Everything here can be rebuilt from ``wiki/raw/``; the wiki files stay the source of truth."""
