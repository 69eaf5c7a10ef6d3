"""All of one paper's section writes as one transaction: ``write_section.py --batch``.

The agent sends every write for a paper at once, one JSON object per line::

    {"op": "create", "page": "multi-head-attention", "title": "...", "description": "...",
     "body": "...", "sources": ["attention.pdf"], "page_title": "...", "type": "concept",
     "tags": ["attention"]}
    {"op": "update", "section_id": "sec_004", "body": "...", "sources": ["attention.pdf"]}
    {"op": "append", "section_id": "sec_004", "text": "...", "sources": ["attention.pdf"]}

``update`` replaces a section's body (and title/description when given); ``append`` adds a
paragraph to the end of its body, so adding a new paper's finding to a section does not mean
cutting its old body out and sending all of it back.  ``page`` is optional for both (the
section is found by id).

Why a transaction: a batch that fails on line 9 must not leave lines 1-8 in the wiki.  So:

1. every line is parsed and applied *in memory* (:class:`StagedWriter`, the
   :class:`~episteme.wiki.edit.WikiWriter` rules and validation, nothing written): any error
   names its line and leaves the wiki untouched;
2. the new page texts and indexes are written to temporary files beside their targets, then a
   journal listing them is written atomically -- the commit point;
3. each temporary file is renamed over its target, the log gets one entry, the journal goes.

A crash before step 2's journal leaves only temporary files (removed at the next write); a
crash during step 3 leaves the journal, and the next writer to open the wiki (any
``WikiWriter``: :func:`recover`) finishes the renames.  Either way no reader after recovery sees
half a batch.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

from ..errors import EpistemeError, NotFoundError, UsageError
from .edit import WikiWriter, find_section, resolve_page
from .index import INDEX_JSON, INDEX_MD, IndexEntry
from .pagetext import load_frontmatter, verify_round_trip
from .sections import SECTION_ID_RE, parse_page
from .staging import commit_files
from .upkeep import SEQ_FILE, read_seq

OPS = ("create", "update", "append")
_FIELDS = {
    "create": {"op", "page", "title", "description", "body", "sources", "page_title", "type",
               "tags", "after", "level"},
    "update": {"op", "page", "section_id", "title", "description", "body", "sources", "tags",
               "replace_sources"},
    "append": {"op", "page", "section_id", "text", "sources", "tags"},
}
MAX_LINES = 500
_LINE_END = re.compile(r"\r\n|\r|\n")


def _level(value: Any, n: int) -> int:
    """A heading level 1-6 (a whole number, or its digits as a string)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 6:
        raise UsageError(f"batch line {n}: level must be a whole number from 1 to 6 "
                         f"(got {json.dumps(value)[:40]})")
    return value


def parse_batch(text: str) -> list[dict[str, Any]]:
    """The JSON lines of a batch (blank lines ignored) as dicts with ``line`` numbers; errors
    name the line and say what is wrong."""
    items: list[dict[str, Any]] = []
    # lines end at \n, \r\n or \r only: str.splitlines would also cut at U+2028, U+2029, U+0085
    # and other characters a JSON string may hold raw, and such a body could never be written
    for n, raw in enumerate(_LINE_END.split(text), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise UsageError(f"batch line {n}: not JSON ({e.msg} at column {e.colno})") from None
        except RecursionError:
            raise UsageError(f"batch line {n}: nested too deeply to be a batch line") from None
        if not isinstance(obj, dict):
            raise UsageError(f"batch line {n}: expected a JSON object")
        op = obj.get("op")
        if op not in OPS:
            raise UsageError(f"batch line {n}: op must be one of {', '.join(OPS)} (got {op!r})")
        unknown = sorted(set(obj) - _FIELDS[op])
        if unknown:
            raise UsageError(f"batch line {n}: unknown field(s) for {op}: {', '.join(unknown)} "
                             f"(allowed: {', '.join(sorted(_FIELDS[op] - {'op'}))})")
        for key in ("sources", "tags"):
            v = obj.get(key, [])
            if isinstance(v, str):
                obj[key] = [v]
            elif not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                raise UsageError(f"batch line {n}: {key} must be a list of strings")
        for key in ("page", "title", "description", "body", "text", "section_id", "page_title",
                    "type", "after"):
            if key in obj and obj[key] is not None and not isinstance(obj[key], str):
                raise UsageError(f"batch line {n}: {key} must be a string")
        if "replace_sources" in obj and not isinstance(obj["replace_sources"], bool):
            raise UsageError(f"batch line {n}: replace_sources must be true or false "
                             f"(got {json.dumps(obj['replace_sources'])})")
        if obj.get("level") is not None:
            obj["level"] = _level(obj["level"], n)
        if op == "create":
            missing = [k for k in ("page", "title", "description", "body") if not obj.get(k)]
            if missing:
                raise UsageError(f"batch line {n}: create needs {', '.join(missing)}")
        else:
            if not SECTION_ID_RE.match(str(obj.get("section_id") or "")):
                raise UsageError(f"batch line {n}: {op} needs section_id (sec_NNN)")
            if op == "append" and not (obj.get("text") or "").strip():
                raise UsageError(f"batch line {n}: append needs a non-empty text")
        obj["line"] = n
        items.append(obj)
    if not items:
        raise UsageError("the batch is empty: send one JSON object per line on stdin")
    if len(items) > MAX_LINES:
        raise UsageError(f"a batch holds at most {MAX_LINES} writes (got {len(items)})")
    return items


class StagedWriter(WikiWriter):
    """A :class:`WikiWriter` whose writes land in memory until :meth:`flush`.

    Reads see the batch's own earlier writes (a page created on line 1 can get a second
    section on line 2).  Leaving the ``with`` block without :meth:`flush` -- an exception --
    writes nothing and logs nothing."""

    def __init__(self, wiki, **kw: Any):
        super().__init__(wiki, **kw)
        self.staged: dict[str, str] = {}  # rel page -> its new text
        self._seq_high: int | None = None

    def __enter__(self) -> StagedWriter:
        super().__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:  # nothing reached the wiki: no log entry either
            self.created, self.updated, self.deleted = [], [], []
        super().__exit__(exc_type, exc, tb)

    # reads: the staged text first
    def _load_or_new(self, rel, path, page_title, page_type, tags, sources, page_fields):
        if rel not in self.staged:
            return super()._load_or_new(rel, path, page_title, page_type, tags, sources, page_fields)
        text = self.staged[rel]
        parsed = parse_page(text, strict=True)
        fm = load_frontmatter(parsed.frontmatter_text, rel)
        self._touch_frontmatter(fm, rel, sources, tags, page_fields, None, None)
        return text, parsed, fm, False

    def _existing_section(self, page: str, section_id: str) -> tuple:
        rel, path = resolve_page(self.wiki, page)
        if rel in self.staged:
            text, parsed, fm, _ = self._load_or_new(rel, path, None, None, (), (), None)
            sec = parsed.get(section_id)
            if sec is None:
                raise NotFoundError(f"{rel} has no section {section_id}")
            return rel, path, text, parsed, fm, sec
        return super()._existing_section(page, section_id)

    # writes: into memory
    def _commit(self, rel, path, new_text, before, sec, new_number) -> None:
        verify_round_trip(rel, new_text, before, sec)
        self.staged[rel] = new_text
        if new_number is not None:
            self._seq_high = max(self._seq_high or 0, new_number)
            self._floor = max(self._floor or 0, new_number)
        if sec is not None:
            self._indexes().set(IndexEntry(sec.id, sec.description, rel, list(sec.sources)))
        if rel not in self.pages:
            self.pages.append(rel)

    def page_of(self, section_id: str) -> str:
        """The page holding ``section_id`` (a page this batch wrote first)."""
        for rel, text in self.staged.items():
            if section_id in text and parse_page(text, strict=False).get(section_id) is not None:
                return rel
        rel, _ = find_section(self.wiki, section_id)
        return rel

    def body_of(self, page: str, section_id: str) -> str:
        return self._existing_section(page, section_id)[5].body

    def flush(self) -> None:
        """Write everything staged: temp files, the journal (the commit point), renames."""
        if not self.staged:
            return
        files: dict[str, str] = {rel: text for rel, text in self.staged.items()}
        idx = self._indexes()
        files[INDEX_JSON] = idx.render_json()
        files[INDEX_MD] = idx.render_md()
        if self._seq_high is not None and (read_seq(self.wiki) or 0) < self._seq_high:
            files[f".episteme/{SEQ_FILE}"] = f"{self._seq_high}\n"
        self._check_log()
        commit_files(self.wiki, files)
        self._dirty = False


def run_batch(wiki: str | os.PathLike, items: list[dict[str, Any]], *, known_sources,
              op: str = "ingest", subject: str | None = None,
              default_sources: Iterable[str] = ()) -> dict[str, Any]:
    """Apply parsed batch ``items`` as one transaction; the JSON ``write_section --batch``
    prints: per line its result, and the batch's pages, created and updated ids."""
    defaults = list(default_sources)
    results: list[dict[str, Any]] = []
    with StagedWriter(wiki, op=op, subject=subject, known_sources=known_sources) as w:
        for it in items:
            n = it["line"]
            sources = list(dict.fromkeys([*(it.get("sources") or []), *defaults]))
            try:
                if it["op"] == "create":
                    res = w.create_section(
                        it["page"], title=it["title"], description=it["description"],
                        body=it["body"], sources=sources, page_title=it.get("page_title"),
                        page_type=it.get("type"), tags=it.get("tags") or [],
                        after=it.get("after"), level=int(it.get("level") or 2),
                        page_fields=it.get("page_fields"),  # set by the command, never a line
                    )
                else:
                    page = it.get("page") or w.page_of(it["section_id"])
                    body = it.get("body")
                    if it["op"] == "append":
                        old = w.body_of(page, it["section_id"]).rstrip()
                        body = (old + "\n\n" if old else "") + it["text"].strip() + "\n"
                    res = w.update_section(
                        page, it["section_id"], title=it.get("title"),
                        description=it.get("description"), body=body, sources=sources,
                        replace_sources=it.get("replace_sources", False), tags=it.get("tags") or [],
                    )
            except EpistemeError as e:
                raise type(e)(f"batch line {n} ({it['op']}): {e.message}; nothing was written") from None
            d = res.to_dict()
            d["line"] = n
            d["op"] = it["op"]
            results.append(d)
        w.flush()
        out = {"status": "written", "writes": len(results), "pages": list(w.pages),
               "created": list(w.created), "updated": list(w.updated), "results": results}
    if w.warnings:
        out["warnings"] = list(w.warnings)
    return out
