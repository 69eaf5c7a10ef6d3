"""The write decisions both writers and the agent's scripts share: what a decision is
(:class:`Decision`, :class:`WritePlan`), how paper-derived text is made writable
(:func:`sanitize_title`, :func:`sanitize_decision`), how a decision is checked against the wiki
as it is now (:func:`validate_decision`, :func:`validate_plan`), and how a checked plan is
written (:func:`apply_plan`, one :class:`episteme.wiki.edit.WikiWriter` batch).

Why decide first and write afterwards: every decision for a paper is made and validated before
the first byte reaches the wiki, so a bad model reply, a 401 or a refused path stops the run
with the wiki untouched, and ``--dry-run`` prints exactly what a real run would write.  The
writes themselves go through :class:`episteme.wiki.edit.WikiWriter` (one lock, one log entry,
crash-safe index updates); nothing here reimplements them.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EpistemeError, NotFoundError, UsageError
from ..fsutil import crash_point
from ..wiki.edit import (
    WikiWriter,
    find_section,
    raw_sources,
    resolve_page,
    validate_body,
    validate_description,
    validate_sources,
    validate_tags,
    validate_title,
)
from ..wiki.sections import SECTION_ID_RE

_LINK_TARGET_OK = re.compile(r"^[\w][\w .,'()&+-]*(?:/[\w][\w .,'()&+-]*)?$")


# ------------------------------------------------------------------------------ decisions


@dataclass
class Decision:
    """One write: create a section (on a new or existing page) or replace an existing one.

    ``paper_section`` is the store id of the paper section it came from (``None`` for pages the
    writer adds on its own, such as a paper's topic list).  ``page_*`` fields only matter when the
    write creates the page.
    """

    action: str  # "create" | "update"
    page: str
    title: str
    description: str
    body: str
    sources: list[str]
    section_id: str | None = None
    tags: list[str] = field(default_factory=list)
    page_title: str | None = None
    page_type: str | None = None
    page_fields: dict[str, Any] = field(default_factory=dict)
    paper_section: str | None = None
    reason: str = ""

    def to_dict(self, *, body: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action": self.action,
            "page": self.page,
            "section_id": self.section_id,
            "title": self.title,
            "description": self.description,
            "sources": list(self.sources),
            "tags": list(self.tags),
            "paper_section": self.paper_section,
        }
        if self.page_title:
            out["page_title"] = self.page_title
        if self.page_type:
            out["page_type"] = self.page_type
        if self.reason:
            out["reason"] = self.reason
        if body:
            out["body"] = self.body
        return out


@dataclass
class WritePlan:
    """Everything a writer decided for one paper, plus what it chose not to write."""

    paper: str
    writer: str
    decisions: list[Decision] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "paper": self.paper,
            "writer": self.writer,
            "decisions": [d.to_dict() for d in self.decisions],
            "skipped": list(self.skipped),
            **({"notes": list(self.notes)} if self.notes else {}),
        }


def link_targets(body: str) -> list[str]:
    """The page parts of the ``[[target|label]]`` links in ``body``, as graph and lint read
    them (:mod:`episteme.wiki.links`: embeds and code are not links)."""
    from ..wiki.links import scan_links

    return list(scan_links(body.encode("utf-8", "surrogatepass")).targets)


def check_links(body: str) -> None:
    """Links must look like page names: no paths out of the wiki, no markup, not absurdly long.
    (Links to pages that do not exist yet are allowed: that is how a wiki grows.)"""
    for target in link_targets(body):
        if not target:
            continue
        t = target[:-3] if target.lower().endswith(".md") else target
        if ".." in t or t.startswith(("/", "~")) or "\\" in t or len(t) > 120 or not _LINK_TARGET_OK.match(t):
            raise UsageError(f"implausible link target [[{target}]] (use a page slug such as [[multi-head-attention]])")


def validate_decision(
    wiki: str | Path,
    d: Decision,
    known_sources: Collection[str] | Callable[[str], bool] | None,
    *,
    required_source: str | None = None,
) -> Decision:
    """Check one decision against the wiki as it is now and return it normalised (page as a
    relative ``.md`` path, title/description/body/tags cleaned).  Raises :class:`UsageError` /
    :class:`NotFoundError` with a message a model (or a person) can act on.

    Checks: action; page path safety (``resolve_page``: no escapes, no hidden or structural
    files, slug form for new pages); for updates, that the section exists and lives on that
    page; title, description and body hygiene (no section markers, fences closed); sources
    known (and including ``required_source``); tags; link plausibility.
    """
    if d.action not in ("create", "update"):
        raise UsageError(f"action must be 'create' or 'update' (got {d.action!r})")
    rel, path = resolve_page(wiki, d.page)
    section_id = d.section_id or None
    if d.action == "update":
        if not section_id or not SECTION_ID_RE.match(section_id):
            raise UsageError(f"an update needs the id of an existing section (sec_NNN), got {section_id!r}")
        try:
            where, _ = find_section(wiki, section_id)
        except NotFoundError:
            raise NotFoundError(f"section {section_id} does not exist; use action 'create' for a new section") from None
        if where != rel:
            raise UsageError(f"section {section_id} lives on {where}, not on {rel}")
    else:
        section_id = None
    title = validate_title(d.title)
    description = validate_description(d.description)
    body = validate_body(d.body, title)
    check_links(body)
    sources = list(d.sources)
    if required_source and required_source not in sources:
        sources.insert(0, required_source)
    sources = validate_sources(sources, known_sources)
    tags = validate_tags(d.tags)
    page_title = validate_title(d.page_title, "page title") if d.page_title else None
    return Decision(
        action=d.action, page=rel, title=title, description=description, body=body,
        sources=sources, section_id=section_id, tags=tags, page_title=page_title,
        page_type=d.page_type, page_fields=dict(d.page_fields), paper_section=d.paper_section,
        reason=d.reason,
    )


MAX_TAGS = 8  # tags one decision may add to a page


def clean_tags(value: Any, limit: int = MAX_TAGS) -> list[str]:
    """Tags as every writer writes them: read by the one tag reader graph and lint use
    (:func:`episteme.wiki.frontmatter.normalize_tags`: a string splits at commas and spaces, a
    leading ``#`` goes), each part of a nested ``a/b`` tag slugged (``Machine Translation`` ->
    ``machine-translation``), empty and repeated tags dropped, at most ``limit``; what is left
    passes :func:`episteme.wiki.edit.validate_tags`.  Why one function: the offline writer's
    key terms and a model's proposals end up as the same kind of tag."""
    from ..fsutil import slugify
    from ..wiki.frontmatter import normalize_tags

    items = [value] if isinstance(value, str) else value
    out: list[str] = []
    for raw in items or []:
        for tag in normalize_tags(str(raw).replace(" ", "-") if isinstance(raw, str) else raw):
            parts = [slugify(p, max_len=40) for p in tag.split("/") if p.strip(" -_")]
            t = "/".join(p for p in parts if p != "untitled")
            if t and t not in out:
                out.append(t)
    return validate_tags(out[:limit])


# --------------------------------------------------------------------- sanitizing, the plan

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_TITLE_MARKER_RE = re.compile(r"<!--\s*(?:section\b)?|-->")


def sanitize_title(text: str | None, limit: int | None = None) -> str:
    """A title any heading can hold: one line, no control characters, no HTML comment markers
    (``<!-- section`` / ``-->`` are dropped, not refused: a PDF's heading or metadata title is
    data), no leading/trailing ``#``, at most ``limit`` characters (cut at a word, ``…``)."""
    from ..wiki.edit import MAX_TITLE_CHARS

    limit = limit or MAX_TITLE_CHARS
    t = _CONTROL_RE.sub(" ", str(text or ""))
    prev = None
    while prev != t:  # "<!<!---->--" must not reassemble a marker
        prev, t = t, _TITLE_MARKER_RE.sub(" ", t)
    t = " ".join(escape_html(t).split()).strip("# ").strip()
    if len(t) > limit:
        cut = t[: limit - 1].rsplit(" ", 1)[0] if " " in t[: limit - 1] else t[: limit - 1]
        t = cut.rstrip(" ,;:-") + "…"
    return t or "Untitled"


def escape_html(text: str) -> str:
    """``<`` and ``>`` as entities: a PDF's title or heading holding HTML (``<b>``,
    ``<script>``) is shown as text by every markdown viewer (Obsidian renders raw HTML in
    headings and properties), and reads the same.  ``&`` is left alone, so applying it twice
    changes nothing."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


#: words a title keeps in lower case (unless first or after a colon)
_SMALL_WORDS = frozenset(["a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "into", "nor", "of", "on", "or", "per", "than", "the", "to", "via", "vs", "with"])
_CASE_PARTS = re.compile(r"([-\u2010-\u2015/])")


def normal_case(title: str, acronyms: Collection[str] = ()) -> str:
    """An ALL-CAPS heading or title in title case ("ENCODER" -> "Encoder", "RNN
    ENCODER\u2013DECODER" -> "RNN Encoder\u2013Decoder"); any title with a lower-case letter is
    left as it is.  A word stays in capitals when it is one of the paper's ``acronyms`` (written
    in capitals in its prose), has a digit, or is a single letter.  Why: a paper set in
    small caps or capitals gave pages titled "ENCODER" beside "Multi-Head Attention"."""
    letters = [c for c in title if c.isalpha()]
    if len(letters) < 2 or any(c.islower() for c in letters):
        return title
    keep = {a.upper() for a in acronyms}
    out: list[str] = []
    start = True
    for word in title.split(" "):
        parts = _CASE_PARTS.split(word)
        cased = []
        for part in parts:
            core = part.strip("()[]{}\"'.,:;!?")
            if not core or core.upper() in keep or any(c.isdigit() for c in core) or len(core) == 1:
                cased.append(part)
            elif not start and not cased and core.lower() in _SMALL_WORDS:
                cased.append(part.lower())
            else:
                i = part.index(core[0])
                cased.append(part[:i] + core[0] + part[i + 1:].lower())
        out.append("".join(cased))
        if word:
            start = word.endswith(":")
    return " ".join(out)


def _neutralise_markers(text: str) -> str:
    """Body or description text with every HTML comment opener/closer made inert (rendered the
    same by Markdown, never read as a section marker by episteme)."""
    return text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def sanitize_decision(d: Decision) -> Decision:
    """The same decision with paper-derived text made writable: titles through
    :func:`sanitize_title`; description one line, markers neutralised, capped; body without
    control characters (tabs and newlines kept) or markers, an unclosed code fence closed, and
    capped.  Why: a hostile or merely odd PDF must not make a write half-fail."""
    from ..wiki.edit import MAX_BODY_CHARS, MAX_DESCRIPTION_CHARS

    desc = " ".join(_neutralise_markers(_CONTROL_RE.sub(" ", d.description or "")).split())
    if len(desc) > MAX_DESCRIPTION_CHARS:
        desc = desc[: MAX_DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0] + "…"
    if re.match(r"^(Page|Sources?):", desc) or desc.startswith("#"):
        desc = "— " + desc.lstrip("#").lstrip()
    body = _neutralise_markers(_CONTROL_RE.sub("", (d.body or "").replace("\r\n", "\n")))
    if body.count("```") % 2:
        body = body.rstrip("\n") + "\n```"
    if body.lstrip().split("\n", 1)[0].strip() == "---":
        body = "\u2014\n" + body.lstrip().split("\n", 1)[-1]
    if len(body) > MAX_BODY_CHARS - 100:
        body = body[: MAX_BODY_CHARS - 100].rsplit("\n", 1)[0] + "\n\n…"
        if body.count("```") % 2:
            body += "\n```"
    return Decision(
        action=d.action, page=d.page, title=sanitize_title(d.title), description=desc or "—",
        body=body, sources=list(d.sources), section_id=d.section_id, tags=list(d.tags),
        page_title=sanitize_title(d.page_title) if d.page_title else None,
        page_type=d.page_type, page_fields=dict(d.page_fields), paper_section=d.paper_section,
        reason=d.reason,
    )


def _existing_sections(wiki: Path, page: str) -> list:
    """The sections of ``page`` (``[]`` when it does not exist or cannot be parsed)."""
    from ..wiki.sections import parse_page

    try:
        _, path = resolve_page(wiki, page)
        return list(parse_page(path.read_text(encoding="utf-8"), strict=False).sections)
    except (EpistemeError, OSError, UnicodeDecodeError, ValueError):
        return []


def make_idempotent(wiki: str | Path, plan: WritePlan) -> WritePlan:
    """Turn each ``create`` that would add a second copy of a section -- same page, same title,
    citing the same paper -- into an ``update`` of the copy already there.  Why: a re-run after
    a crash, or ``--force-write``, must converge on one copy, never add another."""
    wiki = Path(wiki)
    cache: dict[str, list] = {}
    claimed: set[str] = set()
    out = []
    for d in plan.decisions:
        if d.action == "create":
            try:
                rel, _ = resolve_page(wiki, d.page)
            except EpistemeError:
                rel = d.page
            secs = cache.setdefault(rel, _existing_sections(wiki, rel))
            title = d.title.strip().lower()
            for sec in secs:
                if (sec.id not in claimed and sec.title.strip().lower() == title
                        and set(d.sources) & set(sec.sources)):
                    d = Decision(**{**d.__dict__, "action": "update", "section_id": sec.id,
                                    "page": rel, "reason": (d.reason + "; " if d.reason else "")
                                    + "already written: updated in place"})
                    break
        if d.section_id:
            claimed.add(d.section_id)
        out.append(d)
    plan.decisions = out
    return plan


def validate_plan(wiki: str | Path, plan: WritePlan,
                  known_sources: Collection[str] | Callable[[str], bool] | None = None) -> WritePlan:
    """Sanitize, de-duplicate and validate EVERY decision before anything is written: the
    plan returned is exactly what :func:`apply_plan` will write (and what ``--dry-run``
    prints).  Raises on the first decision that still fails, with the wiki untouched."""
    known = raw_sources(wiki) if known_sources is None else known_sources
    plan.decisions = [sanitize_decision(d) for d in plan.decisions]
    make_idempotent(wiki, plan)
    checked = []
    for d in plan.decisions:
        try:
            checked.append(validate_decision(wiki, d, known))
        except EpistemeError as e:
            what = f"section {d.title!r} on {d.page}"
            e.args = (f"{what}: {e.message} (nothing was written)", *e.args[1:])
            raise
    plan.decisions = checked
    return plan


# ------------------------------------------------------------------------------- applying


@dataclass
class WriteReport:
    """What applying a plan did (the keys ``episteme ingest --write`` adds to its JSON)."""

    pages: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    pages_created: list[str] = field(default_factory=list)
    recovered: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "wiki_pages_updated": list(self.pages),
            "new_sections": list(self.created),
            "updated_sections": list(self.updated),
            "new_pages": list(self.pages_created),
            **({"recovered_interrupted_write": True} if self.recovered else {}),
        }


def apply_plan(
    wiki: str | Path,
    plan: WritePlan,
    *,
    known_sources: Collection[str] | Callable[[str], bool] | None = None,
    today: _dt.date | None = None,
) -> WriteReport:
    """Write every decision of ``plan`` in one :class:`WikiWriter` batch (``log.md`` gets one
    ``ingest | <paper>`` entry).  Each decision is validated again right before its write."""
    known = raw_sources(wiki) if known_sources is None else known_sources
    report = WriteReport()
    if not plan.decisions:
        return report
    with WikiWriter(wiki, op="ingest", subject=plan.paper, known_sources=known, today=today) as w:
        report.recovered = w.recovered is not None
        for d in plan.decisions:
            if d.action == "update":
                res = w.update_section(
                    d.page, d.section_id or "", title=d.title, description=d.description,
                    body=d.body, sources=d.sources, tags=d.tags,
                )
            else:
                res = w.create_section(
                    d.page, title=d.title, description=d.description, body=d.body,
                    sources=d.sources, page_title=d.page_title, page_type=d.page_type,
                    tags=d.tags, page_fields=d.page_fields or None,
                )
            if res.page_created and res.page not in report.pages_created:
                report.pages_created.append(res.page)
            crash_point("write:section")
        report.pages = list(w.pages)
        report.created = list(w.created)
        report.updated = list(w.updated)
    refresh_contents_locked(wiki)
    return report


def refresh_contents_locked(wiki: str | Path) -> None:
    """The contents at the top of ``index.md`` brought up to date after a write
    (:func:`episteme.wiki.index.refresh_contents`), under the wiki's lock."""
    from ..fsutil import wiki_lock
    from ..wiki.index import refresh_contents

    with wiki_lock(wiki):
        refresh_contents(wiki)
