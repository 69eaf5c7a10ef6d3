"""Primitives every wiki writer uses: validate, then create or replace one section of a page and
keep ``index.md``, ``index.json`` and ``log.md`` in step, crash-safely.

The LLM writer, the extractive writer and the agent's ``write_section.py`` all go through
:class:`WikiWriter`, so the checks (slug safety, body hygiene, known sources) and the write order
live in one place.

Crash safety.  Pages are the source of truth: a section's marker carries its id, description and
sources, so both indexes can be rederived from the pages (:func:`rebuild_indexes`).  A write
happens under ``wiki_lock`` in this order:

1. ``.episteme/pending-write.json`` (atomic): "a write is in progress";
2. the page (atomic replace, so it is either the old or the new page, never a torn one);
3. the section-id high-water mark, ``index.json``, ``index.md`` (each atomic, read-modify-write
   of the affected entries only, so normal writes never rescan the wiki);
4. one ``log.md`` entry per batch (single appended write);
5. remove the pending marker.

If a process dies anywhere in between, the marker stays behind; the next writer (or
``episteme lint --fix``) sees it and rebuilds both indexes from the pages before doing anything
else.  Section ids are allocated as max + 1 over the pages, ``index.json``, ``index.md`` and the
high-water mark (``.episteme/section_seq``, itself reset from a page scan whenever it is missing
or a recovery runs), so an id is never handed out twice, even after its section was deleted.

Standard library + PyYAML only: the caller passes the set of known source files, so this module
never imports SQLite or the stores.

Why one module: validation, id allocation, the page splice, the index updates and the recovery
are the single write protocol listed above; a writer that went around any part of it would break
the crash-safety argument, so all of it is here and nowhere else.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EpistemeError, NotFoundError, UsageError
from ..fsutil import atomic_write_text, wiki_lock, write_error
from .files import DATA_DIR
from .frontmatter import NEVER_CLOSED_ERROR, parse_frontmatter
from .index import (
    INDEX_JSON,
    INDEX_MD,
    LOG_MD,
    PENDING_FILE,
    IndexEntry,
    append_log,
    index_md_page,
    make_log_entry,
    pending_write,
)
from .indexfiles import IndexFiles
from .pagetext import (
    clean_fields,
    dump_frontmatter,
    humanize_slug,
    load_frontmatter,
    splice_page,
    union_values,
    verify_round_trip,
)
from .schema import PAGE_TYPES  # the one list of page types
from .sections import (
    SECTION_ID_RE,
    ParsedPage,
    SectionFormatError,
    WikiSection,
    format_section_id,
    max_section_number,
    parse_page,
    section_number,
)
from .staging import recover as recover_batch
from .upkeep import (
    SEQ_FILE,
    IndexProblem,
    ScanResult,
    check_index_consistency,
    clear_pending,
    iter_page_paths,
    mark_pending,
    next_section_id,
    rebuild_indexes,
    scan_sections,
    seq_floor,
    write_seq,
)
from .validate import (
    DEFAULT_PAGE_TYPE,
    MAX_BODY_CHARS,
    MAX_DESCRIPTION_CHARS,
    MAX_TITLE_CHARS,
    SLUG_RE,
    SourceCheck,
    raw_sources,
    resolve_page,
    validate_body,
    validate_description,
    validate_sources,
    validate_tags,
    validate_title,
)

# The write API, gathered here: callers import the writer and what it validates with from one
# place (the parts live in validate, pagetext, indexfiles, upkeep and staging).
__all__ = [
    "DEFAULT_PAGE_TYPE", "MAX_BODY_CHARS", "MAX_DESCRIPTION_CHARS", "MAX_TITLE_CHARS", "SEQ_FILE",
    "SLUG_RE", "IndexFiles", "IndexProblem", "ScanResult", "SourceCheck", "WikiWriter",
    "WriteResult", "check_index_consistency", "create_section", "dump_frontmatter", "find_section",
    "humanize_slug", "iter_page_paths", "load_frontmatter", "load_page", "next_section_id",
    "pending_write", "raw_sources", "rebuild_indexes", "resolve_page", "scan_sections",
    "splice_page", "update_section", "validate_body", "validate_description", "validate_sources",
    "validate_tags", "validate_title", "write_section",
]


@dataclass
class WriteResult:
    """What one create/update did (``to_dict`` is what ``write_section.py`` prints)."""

    status: str  # "created" | "updated"
    page: str
    section_id: str
    title: str
    description: str
    sources: list[str]
    page_created: bool = False
    recovered: bool = False  # an interrupted earlier write was repaired first

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "page": self.page,
            "section_id": self.section_id,
            "title": self.title,
            "description": self.description,
            "sources": list(self.sources),
            "page_created": self.page_created,
            "recovered": self.recovered,
        }


# --------------------------------------------------------------------------------- reading


def load_page(wiki: str | os.PathLike, page: str) -> tuple[str, ParsedPage, dict[str, Any]]:
    """``(relative path, parsed page, frontmatter dict)`` of an existing page."""
    rel, path = resolve_page(wiki, page)
    if not path.is_file():
        raise NotFoundError(f"no such page: {rel}")
    text = path.read_text(encoding="utf-8")
    try:
        parsed = parse_page(text, strict=True)
    except SectionFormatError as e:
        raise EpistemeError(f"{rel}: {e}; fix the marker by hand or run episteme lint") from None
    if parsed.frontmatter_text is None and parse_frontmatter(text).error == NEVER_CLOSED_ERROR:
        raise EpistemeError(f"{rel}: {NEVER_CLOSED_ERROR}; fix it by hand first")
    return rel, parsed, load_frontmatter(parsed.frontmatter_text, rel)


def find_section(wiki: str | os.PathLike, section_id: str) -> tuple[str, WikiSection]:
    """Locate a section by id: the page ``index.md`` names first, a full scan as a fallback."""
    if not SECTION_ID_RE.match(section_id or ""):
        raise UsageError(f"invalid section id {section_id!r} (expected sec_NNN)")
    listed = index_md_page(wiki, section_id)
    candidates = [listed] if listed else []
    for rel in candidates + [p for p in iter_page_paths(wiki) if p not in candidates]:
        path = Path(wiki) / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if section_id not in text:
            continue
        sec = parse_page(text, strict=False).get(section_id)
        if sec is not None:
            return rel, sec
    raise NotFoundError(f"no section {section_id} in this wiki")

# --------------------------------------------------------------------------------- writing


_OPEN_WRITERS: set[str] = set()  # wikis with an open WikiWriter (only touched under the lock)


class WikiWriter:
    """A batch of section writes under one lock, ending in one ``log.md`` entry.

    ::

        with WikiWriter(wiki, op="ingest", subject="attention.pdf", known_sources=names) as w:
            r = w.create_section("multi-head-attention", title=..., description=..., body=...,
                                 sources=["attention.pdf"], page_title="Multi-head attention")
            w.update_section("transformer", "sec_003", body=..., sources=["attention.pdf"])

    Each call writes the page, then the indexes (so readers see every section as soon as it
    is written); the log entry lists all pages and sections when the batch ends, also when it
    ends with an exception after some writes.
    """

    def __init__(
        self,
        wiki: str | os.PathLike,
        *,
        op: str = "write-section",
        subject: str | None = None,
        known_sources: SourceCheck = None,
        today: _dt.date | None = None,
        log: bool = True,
        lock_timeout: float = 600.0,
    ):
        self.wiki = Path(wiki)
        self.op = op
        self.subject = subject
        self.known_sources = known_sources
        self.today = today or _dt.date.today()
        self.log = log
        self.lock_timeout = lock_timeout
        self.created: list[str] = []
        self.updated: list[str] = []
        self.deleted: list[str] = []
        self.pages: list[str] = []
        self.recovered: dict | None = None
        self._lock = None
        self._key = ""
        self._index: IndexFiles | None = None
        self._floor: int | None = None  # highest section number known taken (lock held)
        self._dirty = False
        self._log_checked = False
        self.warnings: list[str] = []  # what went wrong after the commit (a log entry not appended)

    # -- context management ---------------------------------------------------------------

    def __enter__(self) -> WikiWriter:
        if not self.wiki.is_dir():
            raise NotFoundError(f"wiki folder does not exist: {self.wiki}")
        lock = wiki_lock(self.wiki, timeout=self.lock_timeout)
        lock.__enter__()
        self._key = str(self.wiki.resolve())
        if self._key in _OPEN_WRITERS:  # same thread (others wait on the lock): nested batch
            lock.__exit__(None, None, None)
            raise RuntimeError("a WikiWriter for this wiki is already open in this thread; write through it")
        self._lock = lock
        _OPEN_WRITERS.add(self._key)
        try:
            recover_batch(self.wiki)  # a batch a crash cut short after its commit point
            if pending_write(self.wiki) is not None:
                self.recovered = rebuild_indexes(self.wiki)
            try:
                self._mark_pending()
            except OSError as e:
                raise write_error(e, f"{DATA_DIR}/{PENDING_FILE}", "nothing was written") from e
        except BaseException:
            _OPEN_WRITERS.discard(self._key)
            self._lock, lock = None, self._lock
            lock.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if self.log and (self.created or self.updated or self.deleted):
                subject = self.subject or ", ".join(self.pages)
                entry = make_log_entry(
                    self.op, subject, pages=self.pages, created=self.created, updated=self.updated,
                    extra={"deleted": self.deleted}, date=self.today,
                )
                try:
                    append_log(self.wiki, entry)
                except OSError as e:  # after the commit: the write stands, the log lacks it
                    self.warnings.append(write_error(e, LOG_MD, "the write itself is complete").message)
                    print(f"warning: {self.warnings[-1]}", file=sys.stderr)
            if not self._dirty:  # a page was written without its index update: leave the marker
                clear_pending(self.wiki)
        finally:
            _OPEN_WRITERS.discard(self._key)
            lock, self._lock = self._lock, None
            if lock is not None:
                lock.__exit__(exc_type, exc, tb)

    def _mark_pending(self) -> None:
        mark_pending(self.wiki, self.op, self.subject)

    def _check_log(self) -> None:
        """Before the first change to the wiki: ``log.md`` can be appended to, so a write is
        never reported failed after it was made (a retry would then make it twice).  Opened
        for appending, not created, and nothing written."""
        if not self.log or self._log_checked:
            return
        path = self.wiki / LOG_MD
        try:
            if os.path.lexists(path):
                os.close(os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_BINARY", 0)))
        except OSError as e:
            raise write_error(e, LOG_MD, "nothing was written") from e
        self._log_checked = True

    def _require_open(self) -> None:
        if self._lock is None:
            raise RuntimeError("use WikiWriter as a context manager (with WikiWriter(...) as w:)")

    def _indexes(self) -> IndexFiles:
        """Both indexes, read once per batch (the lock is held, nobody else changes them)."""
        if self._index is None:
            try:
                self._index = IndexFiles(self.wiki)
            except (EpistemeError, ValueError):  # garbled by hand: rederive it from the pages
                rebuild_indexes(self.wiki)
                self._mark_pending()  # the rebuild cleared it; this batch is still in progress
                self._index = IndexFiles(self.wiki)
        return self._index

    # -- public operations -----------------------------------------------------------------

    def write_section(self, page: str, section_id: str | None = None, **kwargs: Any) -> WriteResult:
        """``update_section`` when ``section_id`` is given, else ``create_section``."""
        if section_id:
            return self.update_section(page, section_id, **kwargs)
        kwargs.pop("replace_sources", None)
        return self.create_section(page, **kwargs)

    def create_section(
        self,
        page: str,
        *,
        title: str,
        description: str,
        body: str,
        sources: Iterable[str],
        page_title: str | None = None,
        page_type: str | None = None,
        tags: Iterable[str] = (),
        page_fields: Mapping[str, Any] | None = None,
        level: int = 2,
        after: str | None = None,
    ) -> WriteResult:
        """Add a new section (fresh id) to ``page``, creating the page when it does not exist.

        ``after`` places it right after that section id of the page (default: at the end).
        """
        self._require_open()
        rel, path = resolve_page(self.wiki, page)
        title = validate_title(title)
        description = validate_description(description)
        body = validate_body(body, title)
        srcs = validate_sources(sources, self.known_sources)
        tag_list = validate_tags(tags)
        if not 1 <= level <= 6:
            raise UsageError("section heading level must be 1..6")
        text, parsed, fm, page_created = self._load_or_new(rel, path, page_title, page_type, tag_list, srcs, page_fields)
        if self._floor is None:
            self._floor = max(seq_floor(self.wiki), self._indexes().max_number())
        sid = format_section_id(max(self._floor, max_section_number(s.id for s in parsed.sections)) + 1)
        sec = WikiSection(id=sid, title=title, level=level, description=description, sources=srcs, body=body)
        if after and parsed.get(after) is None:
            raise NotFoundError(f"no section {after} on {rel} to insert after")
        new_text = splice_page(text, parsed, fm, insert=sec, after=after)
        self._commit(rel, path, new_text, parsed, sec, new_number=section_number(sid))
        self.created.append(sid)
        return WriteResult("created", rel, sid, title, description, srcs, page_created, self.recovered is not None)

    def update_section(
        self,
        page: str,
        section_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        body: str | None = None,
        sources: Iterable[str] = (),
        replace_sources: bool = False,
        tags: Iterable[str] = (),
        page_fields: Mapping[str, Any] | None = None,
        page_title: str | None = None,
        page_type: str | None = None,
    ) -> WriteResult:
        """Replace one section of ``page`` in place; every other byte of the page stays as it was
        (except the frontmatter's ``updated``/``sources``/``tags``).  ``None`` keeps a field;
        ``sources`` are added to the section's (``replace_sources`` to set them)."""
        rel, path, text, parsed, fm, old = self._existing_section(page, section_id)
        new_title = validate_title(title) if title is not None else old.title
        new_desc = validate_description(description) if description is not None else old.description
        new_body = validate_body(body, new_title) if body is not None else old.body
        given = validate_sources(sources, self.known_sources, required=replace_sources)
        new_sources = given if replace_sources else union_values(old.sources, given)
        if not new_sources:
            raise UsageError(f"{section_id} has no sources; pass at least one --source")
        tag_list = validate_tags(tags)
        sec = WikiSection(
            id=section_id, title=new_title, level=old.level, description=new_desc,
            sources=new_sources, body=new_body, extra=dict(old.extra),
        )
        self._touch_frontmatter(fm, rel, new_sources, tag_list, page_fields, page_title, page_type)
        new_text = splice_page(text, parsed, fm, replace=sec)
        self._commit(rel, path, new_text, parsed, sec, new_number=None)
        if section_id not in self.updated and section_id not in self.created:
            self.updated.append(section_id)
        return WriteResult("updated", rel, section_id, new_title, new_desc, new_sources, False, self.recovered is not None)

    def _existing_section(self, page: str, section_id: str) -> tuple:
        """``(rel, path, text, parsed, frontmatter, section)`` of ``section_id`` in the existing
        ``page``, or the error that says what is missing (and where the id is, if elsewhere)."""
        self._require_open()
        if not SECTION_ID_RE.match(section_id or ""):
            raise UsageError(f"invalid section id {section_id!r} (expected sec_NNN)")
        rel, path = resolve_page(self.wiki, page)
        if not path.is_file():
            raise NotFoundError(self._where_is(section_id, f"page {rel} does not exist"))
        text, parsed, fm, _ = self._load_or_new(rel, path, None, None, (), (), None)
        sec = parsed.get(section_id)
        if sec is None:
            raise NotFoundError(self._where_is(section_id, f"{rel} has no section {section_id}"))
        return rel, path, text, parsed, fm, sec

    def delete_section(self, page: str, section_id: str) -> str:
        """Remove one section from ``page`` (its id is never handed out again) and from both
        indexes; returns the page's relative path.  The page itself stays, even if empty."""
        rel, path, text, parsed, fm, _ = self._existing_section(page, section_id)
        new_text = splice_page(text, parsed, fm, remove=section_id)
        remaining = ParsedPage(parsed.frontmatter_text, parsed.preamble, [s for s in parsed.sections if s.id != section_id])
        verify_round_trip(rel, new_text, remaining, None)
        self._check_log()
        self._dirty = True
        atomic_write_text(path, new_text)
        idx = self._indexes()
        idx.delete(section_id)
        atomic_write_text(self.wiki / INDEX_JSON, idx.render_json())
        atomic_write_text(self.wiki / INDEX_MD, idx.render_md())
        self._dirty = False
        self.deleted.append(section_id)
        if rel not in self.pages:
            self.pages.append(rel)
        return rel

    def ensure_page(
        self,
        page: str,
        *,
        title: str,
        page_type: str = DEFAULT_PAGE_TYPE,
        tags: Iterable[str] = (),
        sources: Iterable[str] = (),
        page_fields: Mapping[str, Any] | None = None,
        preamble: str | None = None,
    ) -> tuple[str, bool]:
        """Create ``page`` with frontmatter (and an optional preamble, e.g. a paper's abstract)
        when missing, else merge sources/tags/fields into its frontmatter.  Returns
        ``(relative path, created)``."""
        self._require_open()
        rel, path = resolve_page(self.wiki, page)
        srcs = validate_sources(sources, self.known_sources, required=False)
        tag_list = validate_tags(tags)
        pre = validate_body(preamble) if preamble is not None else None
        text, parsed, fm, created = self._load_or_new(rel, path, title, page_type, tag_list, srcs, page_fields)
        new_text = splice_page(text, parsed, fm, preamble=pre)
        self._commit(rel, path, new_text, parsed, None, new_number=None)
        return rel, created

    # -- internals -------------------------------------------------------------------------

    def _where_is(self, section_id: str, message: str) -> str:
        try:
            other, _ = find_section(self.wiki, section_id)
            return f"{message}; {section_id} lives on {other}"
        except NotFoundError:
            return f"{message}; {section_id} does not exist (omit --section-id to create a section)"

    def _load_or_new(self, rel, path, page_title, page_type, tags, sources, page_fields):
        """``(text, parsed, frontmatter, created)``; frontmatter already carries this write's
        ``updated``/sources/tags for an existing page, or the full new-page fields."""
        if path.is_file():
            _, parsed, fm = load_page(self.wiki, rel)
            text = path.read_text(encoding="utf-8")
            if not fm:  # a hand-made page without frontmatter: give it one
                fm = self._new_frontmatter(rel, page_title, page_type or "note", tags, sources, page_fields)
            else:
                self._touch_frontmatter(fm, rel, sources, tags, page_fields, None, None)
            return text, parsed, fm, False
        fm = self._new_frontmatter(rel, page_title, page_type, tags, sources, page_fields)
        return "", ParsedPage(frontmatter_text=None, preamble="", sections=[]), fm, True

    def _new_frontmatter(self, rel, page_title, page_type, tags, sources, page_fields) -> dict[str, Any]:
        ptype = page_type or DEFAULT_PAGE_TYPE
        if ptype not in PAGE_TYPES:
            raise UsageError(f"page type must be one of {', '.join(PAGE_TYPES)} (got {ptype!r})")
        fm: dict[str, Any] = {
            "title": validate_title(page_title, "page title") if page_title else humanize_slug(rel),
            "type": ptype,
            "tags": list(tags),
            "created": self.today,
            "updated": self.today,
            "sources": list(sources),
            "ingested_at": self.today,
        }
        fm.update(clean_fields(page_fields))
        return fm

    def _touch_frontmatter(self, fm, rel, sources, tags, page_fields, page_title, page_type) -> None:
        old = fm.get("updated")
        if isinstance(old, int) and not isinstance(old, bool) and old > 10**11:
            # Dendron-style epoch milliseconds: keep the vault's own convention.
            fm["updated"] = int(_dt.datetime.combine(self.today, _dt.datetime.now().time()).timestamp() * 1000)
        else:
            fm["updated"] = self.today
        if sources:
            fm["sources"] = union_values(fm.get("sources"), sources)
        if tags:
            fm["tags"] = union_values(fm.get("tags"), tags)
        if page_title:
            fm["title"] = validate_title(page_title, "page title")
        if page_type:
            if page_type not in PAGE_TYPES:
                raise UsageError(f"page type must be one of {', '.join(PAGE_TYPES)} (got {page_type!r})")
            fm["type"] = page_type
        fm.update(clean_fields(page_fields))

    def _commit(self, rel, path, new_text: str, before: ParsedPage, sec: WikiSection | None, new_number: int | None) -> None:
        verify_round_trip(rel, new_text, before, sec)
        self._check_log()
        try:
            atomic_write_text(path, new_text)
        except OSError as e:  # atomic: the page is as it was
            raise write_error(e, rel, "nothing was written") from e
        self._dirty = True  # the page is written, its index entries not yet: the marker stays
        try:
            if new_number is not None:
                write_seq(self.wiki, new_number)
                self._floor = max(self._floor or 0, new_number)
            if sec is not None:
                idx = self._indexes()
                idx.set(IndexEntry(sec.id, sec.description, rel, list(sec.sources)))
                atomic_write_text(self.wiki / INDEX_JSON, idx.render_json())
                atomic_write_text(self.wiki / INDEX_MD, idx.render_md())
        except OSError as e:
            raise write_error(e, Path(e.filename).name if e.filename else "the indexes",
                              f"{rel} was written; the next write or `episteme lint --fix` "
                              "rebuilds the indexes from the pages") from e
        self._dirty = False
        if rel not in self.pages:
            self.pages.append(rel)

# ------------------------------------------------------------------------ one-shot helpers


def create_section(wiki: str | os.PathLike, page: str, *, known_sources: SourceCheck = None, op: str = "write-section", subject: str | None = None, **kwargs: Any) -> WriteResult:
    """One section in its own batch (lock, indexes, one log entry)."""
    with WikiWriter(wiki, op=op, subject=subject, known_sources=known_sources) as w:
        return w.create_section(page, **kwargs)


def update_section(wiki: str | os.PathLike, page: str, section_id: str, *, known_sources: SourceCheck = None, op: str = "write-section", subject: str | None = None, **kwargs: Any) -> WriteResult:
    with WikiWriter(wiki, op=op, subject=subject, known_sources=known_sources) as w:
        return w.update_section(page, section_id, **kwargs)


def write_section(wiki: str | os.PathLike, page: str, section_id: str | None = None, *, known_sources: SourceCheck = None, op: str = "write-section", subject: str | None = None, **kwargs: Any) -> WriteResult:
    with WikiWriter(wiki, op=op, subject=subject, known_sources=known_sources) as w:
        return w.write_section(page, section_id, **kwargs)

