"""The wiki's three bookkeeping files: ``index.md``, ``index.json`` and ``log.md``.

Why these live apart from the pages: the query side must find sections and their source papers
without opening every page (``index.md`` for the retriever and for people, ``index.json`` for
the tracer), and ``log.md`` tells a reader what happened when.  None of them is authoritative:
every entry can be rederived from the section markers in the pages (see
``wikiwrite.rebuild_indexes``), which is what makes a crash between writes recoverable.

``index.md`` opens with a table of contents for readers (``# Papers``, ``# Topics``: every
page as a ``[[link]]`` with one line, :func:`refresh_contents`), then ``# Section map``, the
writer's entries (one per section, ordered by section number so rebuilding is deterministic)::

    ## sec_002
    Multi-head attention: parallel projection heads, concatenation.
    Page: multi-head-attention.md
    Source: attention.pdf, bert.pdf

``index.json`` maps ``"sec_002"`` to ``["attention.pdf", "bert.pdf"]``; readers also accept a
bare string (the seed's original one-source form).  ``log.md`` gets one entry per operation::

    ## [2026-11-29] ingest | attention.pdf
    - pages: transformer.md, multi-head-attention.md
    - created: sec_004, sec_005
    - updated: sec_002

Standard library only (lint imports this module).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EpistemeError
from ..fsutil import append_text, atomic_write_text, read_journal
from .files import DATA_DIR
from .sections import SECTION_ID_RE, section_number

INDEX_MD = "index.md"
INDEX_JSON = "index.json"
LOG_MD = "log.md"

DEFAULT_INDEX_HEADER = (
    "# Index\n\n"
    "One entry per wiki section: what it covers, the page it lives on, and its source papers.\n"
    "Written by episteme; rebuild with `episteme lint --fix`.\n"
)
DEFAULT_LOG_HEADER = "# Log\n\nAppend-only record of every operation on this wiki.\n"

_ENTRY_HEAD_RE = re.compile(r"^##[ \t]+(sec_\d{3,})[ \t]*$")
_SOURCE_LINE_RE = re.compile(r"^Sources?:[ \t]*(.*?)[ \t]*$")
_LOG_HEAD_RE = re.compile(r"^##[ \t]+\[(\d{4}-\d{2}-\d{2})\][ \t]+([^|]+?)[ \t]*\|[ \t]*(.*?)[ \t]*$")
_LOG_ITEM_RE = re.compile(r"^[-*][ \t]+([A-Za-z_ -]+?):[ \t]*(.*?)[ \t]*$")


def section_sort_key(section_id: str) -> tuple[int, str]:
    """Numeric order (``sec_999`` before ``sec_1000``), ties broken by the text."""
    try:
        return (section_number(section_id), section_id)
    except (IndexError, ValueError):
        return (1 << 60, section_id)


# ---------------------------------------------------------------------------------- index.md


#: The marker a wiki write leaves in ``.episteme/`` until it has finished
#: (:class:`episteme.wiki.edit.WikiWriter` writes and clears it; lint and recovery read it).
PENDING_FILE = "pending-write.json"


def pending_write(wiki: str | os.PathLike) -> dict | None:
    """The marker an interrupted write left behind, or None.  Here, beside the indexes it
    says may be stale, rather than in :mod:`episteme.wiki.edit`: lint reads it, and importing
    the writer (PyYAML's full import among the rest) cost a lint run ~30 ms of start-up."""
    data = read_journal(os.path.join(os.fspath(wiki), DATA_DIR), PENDING_FILE)
    return {"raw": data} if isinstance(data, str) else data


@dataclass
class IndexEntry:
    """One ``index.md`` entry: the section id, what it covers, its page and its sources."""

    id: str
    description: str = ""
    page: str = ""
    sources: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"## {self.id}"]
        desc = " ".join(self.description.split())  # one line, whatever was stored
        if desc:
            lines.append(desc)
        if self.page:
            lines.append(f"Page: {self.page}")
        lines.append(f"Source: {', '.join(self.sources)}" if self.sources else "Source:")
        return "\n".join(lines) + "\n"


@dataclass
class IndexMd:
    """A parsed ``index.md``: the free text before the first entry, then entries by id."""

    header: str = DEFAULT_INDEX_HEADER
    entries: dict[str, IndexEntry] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # unparseable lines, duplicate ids

    def render(self) -> str:
        ids = sorted(self.entries, key=section_sort_key)
        return join_index_md(self.header, [self.entries[sid].render() for sid in ids])


def join_index_md(header: str, blocks: Iterable[str]) -> str:
    """``index.md`` from its header and already rendered entries (in order)."""
    return header.rstrip("\n") + "\n" + "".join("\n" + b for b in blocks)


def parse_index_md(text: str) -> IndexMd:
    """Parse ``index.md``.  Tolerant: description lines are joined with spaces, ``Sources:``
    is accepted for ``Source:``, and anything unexpected is reported in ``problems``."""
    idx = IndexMd(header="", entries={})
    header: list[str] = []
    current: IndexEntry | None = None
    desc: list[str] = []

    def close() -> None:
        if current is None:
            return
        current.description = " ".join(" ".join(desc).split())
        if current.id in idx.entries:
            idx.problems.append(f"index.md: section {current.id} is listed twice")
        idx.entries[current.id] = current

    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):  # cheap prefix tests first: big indexes are parsed per write
            m = _ENTRY_HEAD_RE.match(line)
            if m:
                close()
                current, desc = IndexEntry(id=m.group(1)), []
                continue
            idx.problems.append(f"index.md line {lineno}: heading is not a section id: {line!r}")
            if current is None:
                header.append(line)
                continue
        if current is None:
            header.append(line)
        elif line.startswith("Page:"):
            current.page = line[5:].strip()
        elif line.startswith("Source"):
            sm = _SOURCE_LINE_RE.match(line)
            if sm:
                current.sources = split_source_list(sm.group(1))
            elif line.strip():
                desc.append(line.strip())
        elif line.strip():
            desc.append(line.strip())
    close()
    idx.header = "\n".join(header).strip("\n") + "\n" if any(h.strip() for h in header) else ""
    if not idx.header:
        idx.header = DEFAULT_INDEX_HEADER
    return idx


def index_md_page(wiki: str | os.PathLike, section_id: str) -> str | None:
    """The ``Page:`` that ``index.md`` lists for ``section_id`` (``None`` when absent), found
    by searching the text for the entry instead of parsing every entry: a lookup costs one
    read, not a parse that grows with the wiki (the writer looks sections up per paper)."""
    text = read_text_or_none(Path(wiki) / INDEX_MD)
    if not text:
        return None
    m = re.search(rf"^##[ \t]+{re.escape(section_id)}[ \t]*$", text, re.M)
    if m is None:
        return None
    end = text.find("\n## ", m.end())
    for line in text[m.end():end if end >= 0 else len(text)].splitlines():
        if line.startswith("Page:"):
            return line[5:].strip() or None
    return None


def split_source_list(text: str) -> list[str]:
    """``"a.pdf, b.pdf"`` → ``["a.pdf", "b.pdf"]`` (empty items dropped)."""
    return [s.strip() for s in text.split(",") if s.strip()]


def read_index_md(wiki: str | os.PathLike) -> IndexMd:
    """Read ``<wiki>/index.md`` (an empty index with the default header when absent)."""
    path = Path(wiki) / INDEX_MD
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return IndexMd()
    return parse_index_md(text)


def write_index_md(wiki: str | os.PathLike, index: IndexMd) -> bool:
    """Atomically write ``index.md``; returns False (and writes nothing) when unchanged."""
    path = Path(wiki) / INDEX_MD
    text = index.render()
    if read_text_or_none(path) == text:
        return False
    atomic_write_text(path, text)
    return True


# ------------------------------------------------------------------ index.md: the contents

#: The heading between the contents (for readers) and the section map (for the writer): the
#: text above the first ``## sec_NNN`` entry is the index's free header, so the contents live
#: there and every parser and incremental write of the section map is unchanged.
SECTION_MAP_HEADING = "# Section map"
CONTENTS_INTRO = (
    "The wiki's table of contents: every paper with its pages, then every topic page by kind.\n"
    "Written by episteme from the pages after each write; the section map below is the writer's\n"
    "(one entry per section: what it covers, its page, its source papers).\n"
)
#: the order (and headings) of topic page types in the contents
_TYPE_GROUPS = (("method", "Methods"), ("concept", "Concepts"), ("dataset", "Datasets"),
                ("entity", "Tools and entities"), ("comparison", "Comparisons"),
                ("synthesis", "Syntheses"), ("note", "Notes"))
_CHILD_TYPES = frozenset({"result", "setup", "dataset"})
GIST_CHARS = 110


@dataclass
class ContentsPage:
    """What the contents show of one page: its path, frontmatter and first section's line."""

    path: str
    props: Mapping[str, object]
    description: str = ""

    @property
    def title(self) -> str:
        t = self.props.get("title")
        return " ".join(str(t).split()) if t else Path(self.path).stem.replace("-", " ")

    @property
    def type(self) -> str:
        return str(self.props.get("type") or "")

    @property
    def sources(self) -> list[str]:
        v = self.props.get("sources") or []
        return [str(x) for x in v] if isinstance(v, list) else [str(v)]

    def link(self, label: str | None = None) -> str:
        text = " ".join((label or self.title).replace("[", "(").replace("]", ")").replace("|", "/").split())
        return f"[[{self.path[:-3] if self.path.endswith('.md') else self.path}|{text}]]"


def _cut(text: str, limit: int = GIST_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def _byline(props: Mapping[str, object]) -> str:
    authors = props.get("authors") or []
    names = [str(a) for a in authors] if isinstance(authors, list) else [str(authors)]
    who = ""
    if names:
        last = names[0].split()[-1] if names[0].split() else names[0]
        who = last + (" et al." if len(names) > 2 else f" and {names[1].split()[-1]}" if len(names) == 2 and names[1].split() else "")
    bits = [b for b in (who, str(props.get("year") or "")) if b]
    return ", ".join(bits)


def render_contents(pages: Iterable[ContentsPage]) -> str:
    """The header of ``index.md``: ``# Index``, the papers (each with its own pages and the
    topic pages that draw on it), the topic pages grouped by type, one line each with a
    ``[[link]]`` and what its first section covers; then :data:`SECTION_MAP_HEADING`.
    Deterministic (sorted by title, then path), so an unchanged wiki rewrites nothing."""
    pages = sorted(pages, key=lambda p: (p.title.lower(), p.path))
    papers = [p for p in pages if p.type == "paper"]
    paper_paths = {p.path for p in papers}
    children: dict[str, list[ContentsPage]] = {}
    topics: list[ContentsPage] = []
    for p in pages:
        if p.path in paper_paths:
            continue
        parent = str(p.props.get("paper") or "")
        if p.type in _CHILD_TYPES and parent in paper_paths:
            children.setdefault(parent, []).append(p)
        elif p.type in _CHILD_TYPES and p.path.startswith("papers/"):
            owner = next((q.path for q in papers if p.path.startswith(q.path[:-3] + "-")), None)
            (children.setdefault(owner, []) if owner else topics).append(p)
        else:
            topics.append(p)
    lines = ["# Index", "", CONTENTS_INTRO.rstrip("\n"), ""]
    if papers:
        lines += [f"# Papers ({len(papers)})", ""]
        for p in papers:
            by = _byline(p.props)
            lines.append(f"- {p.link()}" + (f" — {by}" if by else ""))
            own = children.get(p.path, [])
            if own:
                suffix = f" ({p.title})"  # "Results (Paper A)" under Paper A is "Results"
                lines.append("  - its results, setup and data: " + ", ".join(
                    c.link(c.title[: -len(suffix)] if c.title.endswith(suffix) else None) for c in own))
            drawn = [t for t in topics if set(t.sources) & set(p.sources)]
            if drawn:
                lines.append("  - topics: " + ", ".join(t.link() for t in drawn))
        lines.append("")
    if topics:
        lines += [f"# Topics ({len(topics)})", ""]
        known = {t for t, _ in _TYPE_GROUPS}
        groups = [(name, [t for t in topics if t.type == key]) for key, name in _TYPE_GROUPS]
        groups.append(("Other pages", [t for t in topics if t.type not in known]))
        for name, group in groups:
            if not group:
                continue
            lines += [f"**{name}**", ""]
            for t in group:
                n = len(t.sources)
                tail = f" ({n} papers)" if n > 1 else ""
                desc = t.description
                if desc.lower().startswith(t.title.lower() + ":"):  # "Attention: ..." under Attention
                    desc = desc[len(t.title) + 1:].strip()
                lines.append(f"- {t.link()}" + (f" — {_cut(desc)}" if desc else "") + tail)
            lines.append("")
    lines += [SECTION_MAP_HEADING, ""]
    return "\n".join(lines) + "\n"


_FIRST_ENTRY = re.compile(r"^##[ \t]+sec_\d{3,}[ \t]*$", re.M)


def refresh_contents(wiki: str | os.PathLike) -> bool:
    """Rewrite the contents at the top of ``index.md`` from the pages (their frontmatter) and
    the section map (each page's first section's description), keeping the section map byte
    for byte.  Returns False (and writes nothing) when unchanged or when ``index.md`` is
    missing.  Call it under ``wiki_lock``, once a write has finished (the writers do, once per
    command).  Cost: one frontmatter scan of the pages and one pass over the map's lines --
    linear in the wiki, like ``lint``; the map is not parsed into entries."""
    from .scan import scan

    path = Path(wiki) / INDEX_MD
    text = read_text_or_none(path)
    if text is None:
        return False
    m = _FIRST_ENTRY.search(text)
    section_map = text[m.start():] if m else ""
    first: dict[str, str] = {}
    desc: list[str] = []
    for line in section_map.splitlines():  # each entry: heading, description lines, Page:, Source:
        if line.startswith("## "):
            desc = []
        elif line.startswith("Page:"):
            first.setdefault(line[5:].strip(), " ".join(desc))
        elif line.strip() and not line.startswith("Source"):
            desc.append(line.strip())
    pages = [ContentsPage(p.id, p.props or {}, first.get(p.id, ""))
             for p in scan(wiki, lines=False).pages if not p.fm_error]
    header = render_contents(pages)
    new = join_index_md(header, [section_map] if section_map else [])
    if new == text:
        return False
    atomic_write_text(path, new)
    return True


# -------------------------------------------------------------------------------- index.json


def parse_index_json(text: str) -> dict[str, list[str]]:
    """Parse ``index.json`` into section id → list of sources; a bare string value is a
    one-item list.  Raises :class:`EpistemeError` when the file is not a JSON object."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise EpistemeError(f"index.json is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise EpistemeError("index.json must be a JSON object of section id -> sources")
    out: dict[str, list[str]] = {}
    for key, value in data.items():
        if isinstance(value, str):
            out[str(key)] = [value] if value else []
        elif isinstance(value, list):
            out[str(key)] = [str(v) for v in value if v not in (None, "")]
        elif value is None:
            out[str(key)] = []
        else:
            raise EpistemeError(f"index.json: {key} maps to {type(value).__name__}, not sources")
    return out


def read_index_json(wiki: str | os.PathLike) -> dict[str, list[str]]:
    """Read ``<wiki>/index.json`` (empty when absent)."""
    text = read_text_or_none(Path(wiki) / INDEX_JSON)
    return {} if text is None else parse_index_json(text)


def render_index_json(mapping: Mapping[str, Iterable[str]]) -> str:
    """One line per section (``"sec_002": ["a.pdf", "b.pdf"]``), ids in numeric order: valid
    JSON that still diffs line by line."""
    return join_index_json(index_json_row(sid, mapping[sid]) for sid in sorted(mapping, key=section_sort_key))


def index_json_row(section_id: str, sources: Iterable[str]) -> str:
    return f"  {json.dumps(section_id, ensure_ascii=False)}: {json.dumps(list(sources), ensure_ascii=False)}"


def join_index_json(rows: Iterable[str]) -> str:
    """``index.json`` from already rendered rows (in order)."""
    rows = list(rows)
    return "{\n" + ",\n".join(rows) + "\n}\n" if rows else "{}\n"


def write_index_json(wiki: str | os.PathLike, mapping: Mapping[str, Iterable[str]]) -> bool:
    """Atomically write ``index.json`` (always lists, ids in numeric order); False when unchanged."""
    path = Path(wiki) / INDEX_JSON
    text = render_index_json(mapping)
    if read_text_or_none(path) == text:
        return False
    atomic_write_text(path, text)
    return True


# ------------------------------------------------------------------------------------ log.md


@dataclass
class LogEntry:
    """One ``log.md`` entry.  ``items`` maps a bullet's key (``pages``, ``created``, ...) to its
    comma-separated values; ``line`` is the 1-based line of the heading."""

    date: str
    op: str
    subject: str
    items: dict[str, list[str]] = field(default_factory=dict)
    line: int = 0

    @property
    def pages(self) -> list[str]:
        return self.items.get("pages", [])

    @property
    def sections(self) -> list[str]:
        """Every section id the entry mentions, in order, without repeats."""
        seen: dict[str, None] = {}
        for key, values in self.items.items():
            if key == "pages":
                continue
            for v in values:
                if SECTION_ID_RE.match(v):
                    seen.setdefault(v, None)
        return list(seen)

    def render(self) -> str:
        lines = [f"## [{self.date}] {self.op} | {self.subject}"]
        for key, values in self.items.items():
            if values:
                lines.append(f"- {key}: {', '.join(values)}")
        return "\n".join(lines) + "\n"


def make_log_entry(
    op: str,
    subject: str,
    *,
    pages: Iterable[str] = (),
    created: Iterable[str] = (),
    updated: Iterable[str] = (),
    extra: Mapping[str, Iterable[str]] | None = None,
    date: _dt.date | str | None = None,
) -> LogEntry:
    """Build an entry, normalising ``op``/``subject`` to one line and ``|``-free ``op``."""
    op = " ".join(str(op).replace("|", "/").split()) or "op"
    subject = " ".join(str(subject).split()) or "-"
    day = date.isoformat() if isinstance(date, _dt.date) else (date or _dt.date.today().isoformat())
    items: dict[str, list[str]] = {
        "pages": _dedupe(pages),
        "created": _dedupe(created),
        "updated": _dedupe(updated),
    }
    for key, values in (extra or {}).items():
        items[" ".join(str(key).replace(":", " ").split())] = _dedupe(values)
    return LogEntry(day, op, subject, {k: v for k, v in items.items() if v})


def append_log(wiki: str | os.PathLike, entry: LogEntry) -> None:
    """Append ``entry`` to ``<wiki>/log.md`` (creating it with its header), one write + fsync.

    Call it under ``wiki_lock`` like every other write."""
    path = Path(wiki) / LOG_MD
    existing = _read_tail(path, 2)  # only the separator depends on what is there: O(1), not O(log)
    prefix = ""
    if existing is None:
        prefix = DEFAULT_LOG_HEADER + "\n"
    elif existing and not existing.endswith(b"\n"):
        prefix = "\n\n"
    elif existing and not existing.endswith(b"\n\n"):
        prefix = "\n"
    append_text(path, prefix + entry.render())


def parse_log(text: str) -> tuple[list[LogEntry], list[str]]:
    """Parse ``log.md`` into entries plus problems (``## `` headings not of the
    ``## [YYYY-MM-DD] op | subject`` form, impossible dates) for lint."""
    entries: list[LogEntry] = []
    problems: list[str] = []
    current: LogEntry | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            m = _LOG_HEAD_RE.match(line)
            if not m:
                problems.append(f"log.md line {lineno}: entry heading is not '## [YYYY-MM-DD] op | subject'")
                current = None
                continue
            try:
                _dt.date.fromisoformat(m.group(1))
            except ValueError:
                problems.append(f"log.md line {lineno}: invalid date {m.group(1)}")
            current = LogEntry(m.group(1), m.group(2), m.group(3), {}, lineno)
            entries.append(current)
            continue
        if current is not None:
            im = _LOG_ITEM_RE.match(line)
            if im:
                current.items.setdefault(im.group(1).strip(), []).extend(split_source_list(im.group(2)))
    return entries, problems


def read_log(wiki: str | os.PathLike) -> tuple[list[LogEntry], list[str]]:
    text = read_text_or_none(Path(wiki) / LOG_MD)
    return ([], []) if text is None else parse_log(text)


# ----------------------------------------------------------------------------------- helpers


def read_text_or_none(path: Path) -> str | None:
    """The UTF-8 text of ``path``, or ``None`` when it does not exist (an index not yet
    written is not an error)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _read_tail(path: Path, n: int) -> bytes | None:
    """The last ``n`` bytes of ``path`` (``None`` when it does not exist).  Appending to
    ``log.md`` needs no more than that, however long the log has grown."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - n))
            return f.read()
    except FileNotFoundError:
        return None


def _dedupe(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values if str(v)))
