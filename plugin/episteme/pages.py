"""Compatibility re-exports: the page scan moved to :mod:`episteme.wiki` (files, frontmatter,
links, page, scan).

Kept only while the heavy modules (wikiwrite, writer_claude, server, wikisearch) still import
the old name; remove once they are moved into their subpackages."""

from .wiki.files import RAW_DIR, STRUCTURAL_FILES, iter_page_files, read_bytes
from .wiki.frontmatter import fast_frontmatter, frontmatter_title, parse_frontmatter
from .wiki.links import extract_links, normalize_target, scan_links
from .wiki.page import Page, parse_page, read_page
from .wiki.scan import scan_wiki

__all__ = [
    "RAW_DIR", "STRUCTURAL_FILES", "Page", "extract_links", "fast_frontmatter", "frontmatter_title",
    "iter_page_files", "normalize_target", "parse_frontmatter", "parse_page", "read_bytes", "read_page",
    "scan_links", "scan_wiki",
]
