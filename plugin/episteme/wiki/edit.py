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

import contextlib
import datetime as _dt
import json
import os
import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import EpistemeError, NotFoundError, UsageError
from ..fsutil import atomic_write_text, safe_join, sanitize_filename, slugify, wiki_lock
from .files import DATA_DIR, is_structural, iter_page_files
from .frontmatter import NEVER_CLOSED_ERROR, parse_frontmatter, yaml_frontmatter
from .index import (
    INDEX_JSON,
    INDEX_MD,
    PENDING_FILE,
    IndexEntry,
    IndexMd,
    append_log,
    index_json_row,
    index_md_page,
    join_index_json,
    make_log_entry,
    parse_index_json,
    parse_index_md,
    pending_write,
    read_index_json,
    read_index_md,
    render_index_json,
    section_sort_key,
    write_index_json,
    write_index_md,
)
from .sections import (
    LOOSE_MARKER_RE,
    SECTION_ID_RE,
    ParsedPage,
    SectionFormatError,
    WikiSection,
    format_section_id,
    parse_page,
    section_number,
    split_frontmatter,
)
from .schema import PAGE_TYPES  # the one list of page types

DEFAULT_PAGE_TYPE = "concept"
MAX_TITLE_CHARS = 200
MAX_DESCRIPTION_CHARS = 1000
MAX_BODY_CHARS = 200_000
SEQ_FILE = "section_seq"

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)")
_HEADING_LINE_RE = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")

SourceCheck = Callable[[str], bool] | Collection[str] | None


# ------------------------------------------------------------------------------- validation


def resolve_page(wiki: str | os.PathLike, page: str) -> tuple[str, Path]:
    """Turn ``--page`` (``bert``, ``bert.md``, ``concepts/bert``) into ``(relative path, Path)``.

    Refuses path escapes, hidden parts, ``raw/`` and the structural files.  A page that does
    not exist yet must be ``<slug>.md`` or ``<folder>/<slug>.md`` with lowercase-hyphen slugs;
    existing pages with other names (hand-made vaults) may be updated as they are.
    """
    p = (page or "").strip().replace("\\", "/")
    if not p or "\x00" in p or "\n" in p:
        raise UsageError(f"invalid page name: {page!r}")
    stem = p[:-3] if p.lower().endswith(".md") else p
    parts = stem.split("/")
    if any(part in ("", ".", "..") for part in parts) or stem.startswith("/"):
        raise UsageError(f"page path escapes or is malformed: {page!r}")
    if any(part.startswith(".") for part in parts):
        raise UsageError(f"page may not be in a hidden folder or be a hidden file: {page!r}")
    rel = stem + ".md"
    if parts[0].lower() == "raw":
        raise UsageError(f"raw/ holds source papers, not wiki pages: {page!r}")
    if len(parts) == 1 and is_structural(rel):
        raise UsageError(f"{rel} is a structural wiki file, not a page")
    path = safe_join(wiki, rel)
    if path.exists() and not path.is_file():
        raise UsageError(f"page path is not a file: {rel}")
    if not path.exists() and (len(parts) > 2 or not all(SLUG_RE.match(part) for part in parts)):
        suggestion = "/".join(slugify(x) for x in parts[-2:])
        raise UsageError(
            f"new page must be <slug>.md or <folder>/<slug>.md with lowercase letters, digits "
            f"and hyphens (got {page!r}; try {suggestion!r})"
        )
    return rel, path


def validate_title(title: str, what: str = "title") -> str:
    """Non-empty, one line, short, and something a heading can hold unchanged."""
    if not isinstance(title, str) or not title.strip():
        raise UsageError(f"{what} must not be empty")
    if "\n" in title.strip() or "\r" in title:
        raise UsageError(f"{what} must be a single line")
    t = " ".join(title.split())
    if len(t) > MAX_TITLE_CHARS:
        raise UsageError(f"{what} is longer than {MAX_TITLE_CHARS} characters")
    if t.endswith("#") or t.startswith("#"):
        raise UsageError(f"{what} may not start or end with '#'")
    if LOOSE_MARKER_RE.search(t) or "-->" in t:
        raise UsageError(f"{what} may not contain HTML comment markers")
    return t


def validate_description(description: str) -> str:
    """Non-empty single line; it becomes one ``index.md`` line, so it must not look like the
    ``Page:``/``Source:`` lines or an entry heading."""
    if not isinstance(description, str) or not description.strip():
        raise UsageError("description must not be empty")
    if "\n" in description.strip() or "\r" in description:
        raise UsageError("description must be a single line")
    d = " ".join(description.split())
    if len(d) > MAX_DESCRIPTION_CHARS:
        raise UsageError(f"description is longer than {MAX_DESCRIPTION_CHARS} characters")
    if re.match(r"^(Page|Sources?):", d) or d.startswith("#"):
        raise UsageError("description may not start with 'Page:', 'Source:' or '#'")
    return d


def validate_body(body: str, title: str | None = None) -> str:
    """Clean and check a section body.

    Refused: section markers (even broken ones), a leading ``---`` frontmatter fence, an
    unclosed code fence (it would swallow the markers of the sections after it), NUL bytes,
    oversize bodies, empty bodies.  A first line repeating the section's own heading is
    dropped (models often echo it).
    """
    if not isinstance(body, str):
        raise UsageError("body must be text")
    text = body.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        raise UsageError("body contains NUL bytes")
    if len(text) > MAX_BODY_CHARS:
        raise UsageError(f"body is longer than {MAX_BODY_CHARS} characters")
    text = text.strip("\n")
    lines = [ln.rstrip() for ln in text.split("\n")]
    if title is not None and lines:
        m = _HEADING_LINE_RE.match(lines[0])
        if m and m.group(1).strip().lower() == title.strip().lower():
            lines = lines[1:]
    text = "\n".join(lines).strip("\n")
    if not text.strip():
        raise UsageError("body must not be empty")
    if LOOSE_MARKER_RE.search(text):
        raise UsageError("body contains a section marker ('<!-- section'); markers are written by episteme")
    if text.lstrip().split("\n", 1)[0].strip() == "---":
        raise UsageError("body starts with a '---' frontmatter fence; frontmatter is written by episteme")
    fence: str | None = None
    for ln in text.split("\n"):
        m = _FENCE_RE.match(ln)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
    if fence is not None:
        raise UsageError(f"body has an unclosed {fence} code fence")
    return text


def validate_sources(sources: Iterable[str], known: SourceCheck = None, *, required: bool = True) -> list[str]:
    """Source file names: plain safe base names (as stored in ``raw/``), de-duplicated, and —
    when ``known`` is given — each one a source the stores know."""
    out: list[str] = []
    for s in sources:
        name = str(s).strip()
        if not name:
            continue
        if name != sanitize_filename(name, default="") or "," in name:
            raise UsageError(f"source must be a plain file name as stored in raw/ (got {s!r})")
        if name not in out:
            out.append(name)
    if required and not out:
        raise UsageError("at least one --source is required")
    if known is not None:
        check = known if callable(known) else known.__contains__
        unknown = [s for s in out if not check(s)]
        if unknown:
            raise UsageError(
                f"unknown source(s): {', '.join(unknown)} (not ingested in this wiki; "
                f"names must match files in raw/)"
            )
    return out


def validate_tags(tags: Iterable[str]) -> list[str]:
    out: list[str] = []
    for t in tags:
        tag = str(t).strip().lstrip("#")
        if not tag:
            continue
        if not re.match(r"^[\w][\w/-]*$", tag):
            raise UsageError(f"invalid tag {t!r} (letters, digits, '-', '_', '/' for nesting)")
        if tag not in out:
            out.append(tag)
    return out


def raw_sources(wiki: str | os.PathLike) -> set[str]:
    """The source files present in ``<wiki>/raw/`` (what ``write_section.py`` accepts)."""
    raw = Path(wiki) / "raw"
    if not raw.is_dir():
        return set()
    return {p.name for p in raw.iterdir() if p.is_file() and not p.name.startswith(".")}


# ------------------------------------------------------------------------------ frontmatter


def load_frontmatter(yaml_text: str | None, page: str = "page") -> dict[str, Any]:
    """Parse a page's frontmatter YAML into a dict (empty when absent) with the reader graph
    and lint use; refuse to continue on YAML we cannot read rather than overwrite what a
    person wrote."""
    if yaml_text is None or not yaml_text.strip():
        return {}
    data, error, _ = yaml_frontmatter(yaml_text)
    if error:
        raise EpistemeError(f"{page}: frontmatter is not valid YAML ({error}); fix it by hand first")
    return data


class _NoAliasDumper(yaml.SafeDumper):
    """SafeDumper that never writes ``&id001``/``*id001`` (``created`` and ``updated`` are often
    the same date object; anchors would confuse people and simple frontmatter readers)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_frontmatter(data: Mapping[str, Any]) -> str:
    """YAML in the order given, block style, dates as YYYY-MM-DD, unicode kept (PyYAML's
    ``safe_dump`` settings with ``sort_keys=False``, minus aliases)."""
    return yaml.dump(
        dict(data), Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True,
        default_flow_style=False, width=1000,
    ).rstrip("\n")


def _as_str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None and str(v) != ""]
    return [str(value)] if str(value) else []


def _union(existing: Any, new: Iterable[str]) -> list[str]:
    out = _as_str_list(existing)
    for v in new:
        if v not in out:
            out.append(v)
    return out


def humanize_slug(rel: str) -> str:
    stem = rel.rsplit("/", 1)[-1][:-3]
    words = stem.replace("_", "-").split("-")
    text = " ".join(w for w in words if w)
    return text[:1].upper() + text[1:] if text else "Untitled"


# ----------------------------------------------------------------------------------- results


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


@dataclass
class IndexProblem:
    """A disagreement between pages and indexes (``fixable`` = :func:`rebuild_indexes` fixes it)."""

    code: str
    message: str
    page: str | None = None
    section: str | None = None
    fixable: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


# -------------------------------------------------------------------------------- scanning


def iter_page_paths(wiki: str | os.PathLike) -> list[str]:
    """Relative paths of every page, sorted (``pages.iter_page_files``: the same notion of a
    page as graph and lint, so the indexes cover exactly what they see)."""
    return iter_page_files(wiki)


@dataclass
class ScanResult:
    entries: dict[str, IndexEntry]
    problems: list[IndexProblem]
    pages: int
    max_number: int


def scan_sections(wiki: str | os.PathLike) -> ScanResult:
    """Read every page's section markers (the full scan recovery and lint use)."""
    entries: dict[str, IndexEntry] = {}
    problems: list[IndexProblem] = []
    max_n = 0
    pages = iter_page_paths(wiki)
    for rel in pages:
        try:
            text = (Path(wiki) / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            problems.append(IndexProblem("unreadable-page", f"{rel}: {e}", page=rel, fixable=False))
            continue
        if "<!-- section" not in text:
            continue
        try:
            parsed = parse_page(text, strict=True)
        except SectionFormatError as e:
            problems.append(IndexProblem("broken-marker", f"{rel}: {e}", page=rel, fixable=False))
            parsed = parse_page(text, strict=False)
        for sec in parsed.sections:
            max_n = max(max_n, section_number(sec.id))
            if sec.id in entries:
                problems.append(
                    IndexProblem(
                        "duplicate-section-id",
                        f"{sec.id} appears on {entries[sec.id].page} and {rel} (kept the first)",
                        page=rel,
                        section=sec.id,
                        fixable=False,
                    )
                )
                continue
            entries[sec.id] = IndexEntry(sec.id, " ".join(sec.description.split()), rel, list(sec.sources))
    return ScanResult(entries, problems, len(pages), max_n)


# --------------------------------------------------------------------------------- locking

_THREAD_LOCKS: dict[str, threading.RLock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def write_lock(wiki: str | os.PathLike, timeout: float = 600.0):
    """``fsutil.wiki_lock`` (between processes) plus a per-wiki ``RLock`` (between threads):
    the file lock's re-entrancy is per process, so two server threads would otherwise both
    pass it.  Re-entrant within one thread."""
    key = str(Path(wiki).resolve())
    with _THREAD_LOCKS_GUARD:
        rlock = _THREAD_LOCKS.setdefault(key, threading.RLock())
    if not rlock.acquire(timeout=timeout):
        raise EpistemeError(f"another writer in this process holds the write lock of {wiki}")
    try:
        with wiki_lock(wiki, timeout=timeout):
            yield
    finally:
        rlock.release()


# ------------------------------------------------------------------------ ids, marker, seq


def _data_dir(wiki: str | os.PathLike) -> Path:
    return Path(wiki) / DATA_DIR


def _read_seq(wiki: str | os.PathLike) -> int | None:
    try:
        return int((_data_dir(wiki) / SEQ_FILE).read_text(encoding="utf-8").strip())
    except (FileNotFoundError, ValueError):
        return None


def _write_seq(wiki: str | os.PathLike, n: int) -> None:
    if (_read_seq(wiki) or 0) < n:
        atomic_write_text(_data_dir(wiki) / SEQ_FILE, f"{n}\n")


def _max_number(ids: Iterable[str]) -> int:
    best = 0
    for sid in ids:
        if SECTION_ID_RE.match(sid):
            best = max(best, section_number(sid))
    return best


def next_section_id(wiki: str | os.PathLike) -> str:
    """The id the next created section gets (does not reserve it; call under the lock)."""
    with write_lock(wiki):
        return format_section_id(_allocation_floor(wiki, read_index_json(wiki), read_index_md(wiki)) + 1)


def _seq_floor(wiki: str | os.PathLike) -> int:
    """The id high-water mark; when missing (first write here, or ``.episteme`` was deleted)
    it is learnt from the pages."""
    seq = _read_seq(wiki)
    if seq is None:
        seq = scan_sections(wiki).max_number
        _write_seq(wiki, seq)
    return seq


def _allocation_floor(wiki: str | os.PathLike, index_json: Mapping[str, Any], index_md: IndexMd) -> int:
    return max(_seq_floor(wiki), _max_number(index_json), _max_number(index_md.entries))


def _clear_pending(wiki: str | os.PathLike) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_data_dir(wiki) / PENDING_FILE)


# ------------------------------------------------------------------------- recovery / lint


def _remove_stale_temp_files(wiki: str | os.PathLike) -> list[str]:
    """Temp files an atomic write killed mid-way left behind (``.<name>.<random>.tmp``)."""
    root = Path(wiki)
    removed: list[str] = []
    for rel in [*{str(Path(p).parent) for p in iter_page_paths(wiki)}, ".", DATA_DIR]:
        folder = root / rel
        if not folder.is_dir():
            continue
        for p in folder.iterdir():
            if p.is_file() and p.name.startswith(".") and p.name.endswith(".tmp"):
                base = p.name[1:].split(".tmp")[0]
                if rel == DATA_DIR and not base.startswith((PENDING_FILE, SEQ_FILE)):
                    continue  # other modules' files: not ours to judge
                if rel != DATA_DIR and ".md." not in base and ".json." not in base:
                    continue
                try:
                    p.unlink()
                    removed.append(p.relative_to(root).as_posix())
                except OSError:
                    pass
    return sorted(removed)


def rebuild_indexes(wiki: str | os.PathLike) -> dict[str, Any]:
    """Regenerate ``index.md`` and ``index.json`` purely from the pages (recovery / ``lint --fix``).

    Keeps ``index.md``'s free-text header, drops entries whose section no longer exists, resets
    the id high-water mark upwards, clears an interrupted-write marker and stale temp files.
    Idempotent: a second run reports ``changed: false``.
    """
    wiki = Path(wiki)
    with write_lock(wiki):
        scan = scan_sections(wiki)
        try:
            old_json = read_index_json(wiki)
            json_ok = True
        except EpistemeError:
            old_json, json_ok = {}, False
        old_md = read_index_md(wiki)
        new_json = {sid: e.sources for sid, e in scan.entries.items()}
        new_md = IndexMd(header=old_md.header, entries=dict(scan.entries))
        json_changed = write_index_json(wiki, new_json)
        md_changed = write_index_md(wiki, new_md)
        old_ids, new_ids = set(old_json) | set(old_md.entries), set(new_json)
        changed_ids = sorted(
            (
                sid
                for sid in new_ids & old_ids
                if old_json.get(sid) != new_json[sid]
                or sid not in old_md.entries
                or old_md.entries[sid] != new_md.entries[sid]
                or sid not in old_json
            ),
            key=section_sort_key,
        )
        _write_seq(wiki, max(scan.max_number, _read_seq(wiki) or 0))
        pending = pending_write(wiki)
        _clear_pending(wiki)
        temps = _remove_stale_temp_files(wiki)
        return {
            "pages": scan.pages,
            "sections": len(scan.entries),
            "changed": bool(json_changed or md_changed or pending or temps),
            "index_json_changed": json_changed,
            "index_md_changed": md_changed,
            "index_json_was_invalid": not json_ok,
            "added": sorted(new_ids - old_ids, key=section_sort_key),
            "removed": sorted(old_ids - new_ids, key=section_sort_key),
            "updated": changed_ids,
            "interrupted_write": pending,
            "removed_temp_files": temps,
            "problems": [p.to_dict() for p in scan.problems],
        }


def check_index_consistency(wiki: str | os.PathLike) -> list[IndexProblem]:
    """Every way the pages and the two indexes disagree (read-only; for ``episteme lint``)."""
    wiki = Path(wiki)
    scan = scan_sections(wiki)
    problems = list(scan.problems)
    pending = pending_write(wiki)
    if pending is not None:
        problems.append(
            IndexProblem("interrupted-write", f"a write did not finish ({json.dumps(pending)}); indexes may be stale")
        )
    try:
        ijson = read_index_json(wiki)
        if (wiki / INDEX_JSON).exists() is False:
            problems.append(IndexProblem("index-json-missing", "index.json does not exist"))
    except EpistemeError as e:
        problems.append(IndexProblem("index-json-invalid", e.message))
        ijson = None
    md_path = wiki / INDEX_MD
    md = parse_index_md(md_path.read_text(encoding="utf-8")) if md_path.exists() else None
    if md is None:
        problems.append(IndexProblem("index-md-missing", "index.md does not exist"))
    else:
        problems.extend(IndexProblem("index-md-format", p) for p in md.problems)
    for sid, e in sorted(scan.entries.items(), key=lambda kv: section_sort_key(kv[0])):
        if not e.sources:
            problems.append(IndexProblem("section-without-sources", f"{sid} on {e.page} lists no sources", e.page, sid, False))
        if ijson is not None:
            if sid not in ijson:
                problems.append(IndexProblem("index-json-missing-section", f"{sid} ({e.page}) is not in index.json", e.page, sid))
            elif ijson[sid] != e.sources:
                problems.append(
                    IndexProblem("index-json-sources", f"{sid}: index.json has {ijson[sid]}, the page has {e.sources}", e.page, sid)
                )
        if md is not None:
            m = md.entries.get(sid)
            if m is None:
                problems.append(IndexProblem("index-md-missing-section", f"{sid} ({e.page}) is not in index.md", e.page, sid))
            elif m != e:
                what = [k for k in ("description", "page", "sources") if getattr(m, k) != getattr(e, k)]
                problems.append(IndexProblem("index-md-mismatch", f"{sid}: index.md differs from {e.page} in {', '.join(what)}", e.page, sid))
    for sid in sorted(set(ijson or {}) - set(scan.entries), key=section_sort_key):
        problems.append(IndexProblem("index-json-stale", f"index.json lists {sid}, which no page has", section=sid))
    for sid in sorted(set(md.entries if md else {}) - set(scan.entries), key=section_sort_key):
        problems.append(IndexProblem("index-md-stale", f"index.md lists {sid}, which no page has", section=sid))
    if ijson is not None and render_index_json(ijson) != _read_text(wiki / INDEX_JSON) and not problems:
        problems.append(IndexProblem("index-json-format", "index.json is not in canonical form (ids in order, lists)"))
    return problems


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


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

    # -- context management ---------------------------------------------------------------

    def __enter__(self) -> WikiWriter:
        if not self.wiki.is_dir():
            raise NotFoundError(f"wiki folder does not exist: {self.wiki}")
        lock = write_lock(self.wiki, timeout=self.lock_timeout)
        lock.__enter__()
        self._key = str(self.wiki.resolve())
        if self._key in _OPEN_WRITERS:  # same thread (others wait on the lock): nested batch
            lock.__exit__(None, None, None)
            raise RuntimeError("a WikiWriter for this wiki is already open in this thread; write through it")
        self._lock = lock
        _OPEN_WRITERS.add(self._key)
        try:
            from .batch import recover  # a batch a crash cut short after its commit point

            recover(self.wiki)
            if pending_write(self.wiki) is not None:
                self.recovered = rebuild_indexes(self.wiki)
            self._mark_pending()
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
                append_log(self.wiki, entry)
            if not self._dirty:  # a page was written without its index update: leave the marker
                _clear_pending(self.wiki)
        finally:
            _OPEN_WRITERS.discard(self._key)
            lock, self._lock = self._lock, None
            if lock is not None:
                lock.__exit__(exc_type, exc, tb)

    def _mark_pending(self) -> None:
        atomic_write_text(
            _data_dir(self.wiki) / PENDING_FILE,
            json.dumps({"pid": os.getpid(), "op": self.op, "subject": self.subject}) + "\n",
        )

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
            self._floor = max(_seq_floor(self.wiki), self._indexes().max_number())
        sid = format_section_id(max(self._floor, _max_number(s.id for s in parsed.sections)) + 1)
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
        new_sources = given if replace_sources else _union(old.sources, given)
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
        _verify_round_trip(rel, new_text, remaining, None)
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
        fm.update(_clean_fields(page_fields))
        return fm

    def _touch_frontmatter(self, fm, rel, sources, tags, page_fields, page_title, page_type) -> None:
        old = fm.get("updated")
        if isinstance(old, int) and not isinstance(old, bool) and old > 10**11:
            # Dendron-style epoch milliseconds: keep the vault's own convention.
            fm["updated"] = int(_dt.datetime.combine(self.today, _dt.datetime.now().time()).timestamp() * 1000)
        else:
            fm["updated"] = self.today
        if sources:
            fm["sources"] = _union(fm.get("sources"), sources)
        if tags:
            fm["tags"] = _union(fm.get("tags"), tags)
        if page_title:
            fm["title"] = validate_title(page_title, "page title")
        if page_type:
            if page_type not in PAGE_TYPES:
                raise UsageError(f"page type must be one of {', '.join(PAGE_TYPES)} (got {page_type!r})")
            fm["type"] = page_type
        fm.update(_clean_fields(page_fields))

    def _commit(self, rel, path, new_text: str, before: ParsedPage, sec: WikiSection | None, new_number: int | None) -> None:
        _verify_round_trip(rel, new_text, before, sec)
        self._dirty = True
        atomic_write_text(path, new_text)
        if new_number is not None:
            _write_seq(self.wiki, new_number)
            self._floor = max(self._floor or 0, new_number)
        if sec is not None:
            idx = self._indexes()
            idx.set(IndexEntry(sec.id, sec.description, rel, list(sec.sources)))
            atomic_write_text(self.wiki / INDEX_JSON, idx.render_json())
            atomic_write_text(self.wiki / INDEX_MD, idx.render_md())
        self._dirty = False
        if rel not in self.pages:
            self.pages.append(rel)


_JSON_ID_RE = re.compile(r'^  "(sec_\d{3,})": ', re.M)
_MD_ID_RE = re.compile(r"^## (sec_\d{3,})[ \t]*$", re.M)


def _last_md_id(text: str) -> str | None:
    """The id of the last ``## sec_NNN`` entry heading of ``index.md`` text (``None`` if none),
    searched backwards from the end (where a new entry goes)."""
    end = len(text)
    while end > 0:
        pos = text.rfind("\n## ", 0, end)
        start = pos + 1 if pos >= 0 else 0
        eol = text.find("\n", start)
        m = _MD_ID_RE.match(text, start, eol if eol >= 0 else len(text))
        if m:
            return m.group(1)
        if pos < 0:
            return None
        end = pos
    return None


class IndexFiles:
    """``index.json`` and ``index.md`` as text during a batch, changed entry by entry.

    A write splices one entry into each file (replace its line/block, or append a new id after
    the last one) instead of parsing and re-rendering thousands of entries, so writes stay fast
    on big wikis.  The result is byte-identical to the full renderers of
    :mod:`episteme.wiki.index` for files in their canonical form; for anything else (a
    hand-edited index) it falls back to one full parse and canonical re-render, after which
    splicing resumes.  :class:`WikiWriter` holds one per batch (``set`` / ``delete`` per write,
    then ``render_json`` / ``render_md`` written atomically).
    """

    def __init__(self, wiki: Path):
        self.wiki = wiki
        text = _read_text(wiki / INDEX_JSON) or ""
        self.json_text = text if text.strip() else "{}\n"
        if not isinstance(json.loads(self.json_text), dict):  # garbled: the caller rebuilds it
            raise EpistemeError("index.json is not a JSON object")
        md = _read_text(wiki / INDEX_MD)
        self.md_text = md if md is not None else IndexMd().render()

    def max_number(self) -> int:
        ids = _JSON_ID_RE.findall(self.json_text) + _MD_ID_RE.findall(self.md_text)
        if not ids and self.json_text.strip() != "{}":  # not our layout: read it properly
            return _max_number(parse_index_json(self.json_text))
        return _max_number(ids)

    # -- index.json --------------------------------------------------------------------------

    def _json_full(self, change) -> None:
        mapping = parse_index_json(self.json_text)
        change(mapping)
        self.json_text = render_index_json(mapping)

    def _json_set(self, sid: str, sources: list[str]) -> None:
        row, text = index_json_row(sid, sources), self.json_text
        pos = text.find(f'\n  "{sid}": ')
        if pos >= 0:
            eol = text.find("\n", pos + 1)
            comma = "," if text[pos + 1 : eol].endswith(",") else ""
            self.json_text = text[: pos + 1] + row + comma + text[eol:]
            return
        if text == "{}\n":
            self.json_text = join_index_json([row])
            return
        if text.endswith("\n}\n"):
            last = _JSON_ID_RE.findall(text[text.rfind("\n", 0, len(text) - 3) + 1 :])
            if last and section_sort_key(last[0]) < section_sort_key(sid):
                self.json_text = text[:-3] + ",\n" + row + "\n}\n"
                return
        self._json_full(lambda m: m.__setitem__(sid, list(sources)))

    def _json_delete(self, sid: str) -> None:
        self._json_full(lambda m: m.pop(sid, None))

    # -- index.md ----------------------------------------------------------------------------

    def _md_full(self, change) -> None:
        idx = parse_index_md(self.md_text)
        change(idx.entries)
        self.md_text = idx.render()

    def _md_set(self, entry: IndexEntry) -> None:
        block, text = entry.render(), self.md_text
        pos = text.find(f"\n## {entry.id}\n")
        if pos >= 0 and text.find(f"\n## {entry.id}\n", pos + 1) < 0:  # listed exactly once
            nxt = text.find("\n## ", pos + 1)
            if nxt < 0:  # the last entry
                self.md_text = text[: pos + 1] + block
                return
            if text[nxt - 1 : nxt + 1] == "\n\n":  # one blank line before the next entry
                self.md_text = text[: pos + 1] + block + text[nxt:]
                return
        elif pos < 0 and text.endswith("\n"):
            last = _last_md_id(text)  # from the end: not a scan of every entry per write
            if last is None:
                self.md_text = text.rstrip("\n") + "\n\n" + block
                return
            if section_sort_key(last) < section_sort_key(entry.id):  # a new id: goes last
                self.md_text = text + "\n" + block
                return
        self._md_full(lambda entries: entries.__setitem__(entry.id, entry))

    def _md_delete(self, sid: str) -> None:
        self._md_full(lambda entries: entries.pop(sid, None))

    # -- both --------------------------------------------------------------------------------

    def set(self, entry: IndexEntry) -> None:
        self._json_set(entry.id, list(entry.sources))
        self._md_set(entry)

    def delete(self, section_id: str) -> None:
        self._json_delete(section_id)
        self._md_delete(section_id)

    def render_json(self) -> str:
        return self.json_text

    def render_md(self) -> str:
        return self.md_text


def splice_page(
    text: str,
    parsed: ParsedPage,
    fm: Mapping[str, Any],
    *,
    replace: WikiSection | None = None,
    insert: WikiSection | None = None,
    after: str | None = None,
    preamble: str | None = None,
    remove: str | None = None,
) -> str:
    """The page text with new frontmatter and one change, every other line kept byte for byte:
    ``replace`` swaps the lines of the section with that id, ``insert`` adds a section after
    ``after`` (default: at the end), ``preamble`` replaces the text before the first section,
    ``remove`` drops the section with that id.  Only one of them per call."""
    _, body, body_line = split_frontmatter(text)
    lines = body.split("\n")
    starts = [s.line - body_line for s in parsed.sections]
    if replace is not None:
        i = next(k for k, s in enumerate(parsed.sections) if s.id == replace.id)
        lines = _put(lines, starts[i], starts[i + 1] if i + 1 < len(starts) else len(lines), replace.render())
    if remove is not None:
        i = next(k for k, s in enumerate(parsed.sections) if s.id == remove)
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        head, tail = lines[: starts[i]], lines[end:]
        while head and not head[-1].strip():
            head.pop()
        lines = [*head, *([""] if head and tail else []), *tail]
    if insert is not None:
        if after is not None:
            i = next(k for k, s in enumerate(parsed.sections) if s.id == after)
            pos = starts[i + 1] if i + 1 < len(starts) else len(lines)
        else:
            pos = len(lines)
        lines = _put(lines, pos, pos, insert.render())
    if preamble is not None:
        first = starts[0] if starts else len(lines)
        lines = _put(lines, 0, first, preamble.strip("\n") + "\n")
    new_body = "\n".join(lines).strip("\n") + "\n"
    return f"---\n{dump_frontmatter(fm)}\n---\n{new_body}"


def _put(lines: list[str], start: int, end: int, chunk: str) -> list[str]:
    """Replace ``lines[start:end]`` with ``chunk``, one blank line on either side of it."""
    head = lines[:start]
    while head and not head[-1].strip():
        head.pop()
    tail = lines[end:]
    while tail and not tail[0].strip():
        tail.pop(0)
    middle = chunk.strip("\n").split("\n")
    return [*head, *([""] if head else []), *middle, *([""] if tail else []), *tail]


def _clean_fields(fields: Mapping[str, Any] | None) -> dict[str, Any]:
    """Caller-supplied frontmatter fields: string keys, YAML-safe values, ISO strings for dates."""
    out: dict[str, Any] = {}
    for k, v in (fields or {}).items():
        if not isinstance(k, str) or not re.match(r"^[A-Za-z_][\w-]*$", k):
            raise UsageError(f"invalid frontmatter field name {k!r}")
        if isinstance(v, str) and re.match(r"^\d{4}-\d{2}-\d{2}$", v):
            with contextlib.suppress(ValueError):
                v = _dt.date.fromisoformat(v)
        try:
            yaml.safe_dump(v)
        except yaml.YAMLError:
            raise UsageError(f"frontmatter field {k!r} has a value YAML cannot hold") from None
        out[k] = v
    return out


def _key(sec: WikiSection) -> tuple:
    return (sec.id, sec.title, sec.level, sec.description, sec.sources, sec.body.strip("\n"), sec.extra)


def _verify_round_trip(rel: str, text: str, before: ParsedPage, sec: WikiSection | None) -> None:
    """Re-parse the page about to be written: every other section reads back exactly as before
    and the written one exactly as intended.  Catches anything validation missed (an unclosed
    fence swallowing the next marker, a heading that would not survive) before it hits disk."""
    try:
        again = parse_page(text, strict=True)
    except SectionFormatError as e:
        raise EpistemeError(f"refusing to write {rel}: the result would not parse ({e})") from None
    expected = {s.id: _key(s) for s in before.sections}
    if sec is not None:
        expected[sec.id] = _key(sec)
    got = {s.id: _key(s) for s in again.sections}
    if len(got) != len(again.sections) or got != expected:
        bad = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
        raise EpistemeError(f"refusing to write {rel}: section(s) {', '.join(bad)} would not read back unchanged")
    fm, _, _ = split_frontmatter(text)
    load_frontmatter(fm, rel)


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
