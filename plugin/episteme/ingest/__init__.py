"""Ingest: a PDF into ``wiki/raw/``, the stores, and (with ``--write``) the wiki pages.

The pipeline owns naming, the write order and the journal that keep a crash from losing a paper."""
