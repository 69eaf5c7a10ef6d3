"""The indexes kept in step with the pages: the full scan of section markers, the section-id
high-water mark, the interrupted-write marker, and :func:`rebuild_indexes` /
:func:`check_index_consistency` (recovery and ``episteme lint``).

Why its own module: pages are the source of truth and both indexes can be rederived from them;
this is that derivation and the bookkeeping that makes it safe to rely on (an id is never
handed out twice, an interrupted write is always noticed).  The writer (:mod:`episteme.wiki.edit`)
and lint call it; it writes nothing but the indexes and its own two files under ``.episteme/``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EpistemeError
from ..fsutil import (
    atomic_write_text,
    clear_journal,
    pid_alive,
    wiki_lock,
    write_error,
    write_journal,
)
from .files import DATA_DIR, iter_page_files
from .index import (
    INDEX_JSON,
    INDEX_MD,
    PENDING_FILE,
    IndexEntry,
    IndexMd,
    parse_index_md,
    pending_write,
    read_index_json,
    read_index_md,
    read_text_or_none,
    render_index_json,
    section_sort_key,
    write_index_json,
    write_index_md,
)
from .sections import (
    SectionFormatError,
    format_section_id,
    max_section_number,
    parse_page,
    section_number,
)
from .staging import JOURNAL as STAGING_JOURNAL

SEQ_FILE = "section_seq"


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

# ------------------------------------------------------------------------ ids, marker, seq


def read_seq(wiki: str | os.PathLike) -> int | None:
    """The section-id high-water mark (``None`` when missing or unreadable)."""
    try:
        return int((Path(wiki) / DATA_DIR / SEQ_FILE).read_text(encoding="utf-8").strip())
    except (FileNotFoundError, ValueError):
        return None


def write_seq(wiki: str | os.PathLike, n: int) -> None:
    """Raise the high-water mark to ``n`` (never lowers it: a deleted id stays taken)."""
    if (read_seq(wiki) or 0) < n:
        atomic_write_text(Path(wiki) / DATA_DIR / SEQ_FILE, f"{n}\n")


def next_section_id(wiki: str | os.PathLike) -> str:
    """The id the next created section gets (does not reserve it; call under the lock)."""
    with wiki_lock(wiki):
        return format_section_id(allocation_floor(wiki, read_index_json(wiki), read_index_md(wiki)) + 1)


def seq_floor(wiki: str | os.PathLike) -> int:
    """The id high-water mark; when missing (first write here, or ``.episteme`` was deleted)
    it is learnt from the pages."""
    seq = read_seq(wiki)
    if seq is None:
        seq = scan_sections(wiki).max_number
        write_seq(wiki, seq)
    return seq


def allocation_floor(wiki: str | os.PathLike, index_json: Mapping[str, Any], index_md: IndexMd) -> int:
    """The highest section number any record holds: new ids go above it."""
    return max(seq_floor(wiki), max_section_number(index_json), max_section_number(index_md.entries))


def mark_pending(wiki: str | os.PathLike, op: str, subject: str | None) -> None:
    """The interrupted-write marker: a write is in progress (its journal; see the module
    docstring of :mod:`episteme.wiki.edit`)."""
    write_journal(Path(wiki) / DATA_DIR, PENDING_FILE, {"pid": os.getpid(), "op": op, "subject": subject})


def clear_pending(wiki: str | os.PathLike) -> None:
    """The write finished: remove the marker."""
    clear_journal(Path(wiki) / DATA_DIR, PENDING_FILE)



_TEMP_RE = re.compile(r"^\.(?P<base>.+?)\.(?:batch(?P<pid>\d+)-\d+|[A-Za-z0-9_]{6,})\.tmp$")
_DATA_TEMPS = (PENDING_FILE, SEQ_FILE, STAGING_JOURNAL)  # ours under .episteme/ (the rest is ingest's)


def stale_temp_files(wiki: str | os.PathLike, *, settled: float | None = None) -> list[str]:
    """Temp files a killed or failed write left behind, relative to ``wiki``: an atomic write's
    ``.<name>.<random>.tmp`` and a batch's ``.<name>.batch<pid>-<n>.tmp``, in any folder of the
    wiki (a batch creating a page in a new folder leaves one where no page is yet), for pages,
    the indexes and the writer's own files under ``.episteme/``.  ``settled`` (seconds): only
    files no live writer can own -- a batch's whose process is gone, others untouched that
    long -- for a caller without the lock (lint); under the lock every one is stale."""
    root = Path(wiki)
    now = time.time()
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        rel_dir = Path(folder).relative_to(root).as_posix()
        if rel_dir == ".":
            dirs[:] = sorted(d for d in dirs if d == DATA_DIR or not (d.startswith(".") or d == "raw"))
        elif rel_dir == DATA_DIR:
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            m = _TEMP_RE.match(name)
            if m is None:
                continue
            base = m.group("base")
            if rel_dir == DATA_DIR:
                if base not in _DATA_TEMPS:
                    continue
            elif not base.lower().endswith((".md", ".json")):
                continue
            path = Path(folder) / name
            if settled is not None:
                pid = m.group("pid")
                try:
                    age = now - path.lstat().st_mtime
                except OSError:
                    continue
                if (pid_alive(int(pid)) and age < 86400) if pid else age < settled:
                    continue
            found.append(path.relative_to(root).as_posix())
    return sorted(found)


def remove_stale_temp_files(wiki: str | os.PathLike) -> list[str]:
    """Delete :func:`stale_temp_files` (call under the wiki lock); returns what went."""
    removed: list[str] = []
    for rel in stale_temp_files(wiki):
        try:
            (Path(wiki) / rel).unlink()
            removed.append(rel)
        except OSError:
            pass
    return removed


def rebuild_indexes(wiki: str | os.PathLike) -> dict[str, Any]:
    """Regenerate ``index.md`` and ``index.json`` purely from the pages (recovery / ``lint --fix``).

    Keeps ``index.md``'s free-text header, drops entries whose section no longer exists, resets
    the id high-water mark upwards, clears an interrupted-write marker and stale temp files.
    Idempotent: a second run reports ``changed: false``.
    """
    wiki = Path(wiki)
    with wiki_lock(wiki):
        temps = remove_stale_temp_files(wiki)  # first: on a full disk they may be what fills it
        scan = scan_sections(wiki)
        try:
            old_json = read_index_json(wiki)
            json_ok = True
        except EpistemeError:
            old_json, json_ok = {}, False
        old_md = read_index_md(wiki)
        new_json = {sid: e.sources for sid, e in scan.entries.items()}
        new_md = IndexMd(header=old_md.header, entries=dict(scan.entries))
        try:
            json_changed = write_index_json(wiki, new_json)
            md_changed = write_index_md(wiki, new_md)
        except OSError as e:  # each index is replaced atomically: the old one stands
            raise write_error(e, Path(e.filename).name if e.filename else "the indexes",
                              "the indexes are unchanged or rebuilt in part; run it again") from e
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
        try:
            write_seq(wiki, max(scan.max_number, read_seq(wiki) or 0))
        except OSError as e:
            raise write_error(e, f"{DATA_DIR}/{SEQ_FILE}", "the indexes were rebuilt; run it again") from e
        pending = pending_write(wiki)
        clear_pending(wiki)
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
    if ijson is not None and render_index_json(ijson) != read_text_or_none(wiki / INDEX_JSON) and not problems:
        problems.append(IndexProblem("index-json-format", "index.json is not in canonical form (ids in order, lists)"))
    return problems
