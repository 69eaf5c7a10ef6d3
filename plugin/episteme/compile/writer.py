"""The wiki writer's shared half: what a write decision is, how it is checked, how a batch of
them is applied, and where the writer's inputs (a paper's sections, related wiki sections) come
from.  The two automatic writers build on it: :mod:`episteme.compile.extractive` (offline,
deterministic) and :mod:`episteme.compile.claude` (Claude via tool use); the agent's flow
(``plan_ingest.py`` + ``write_section.py``) uses :func:`plan_paper` and the same primitives.

Why decide first and write afterwards: every decision for a paper is made and validated before
the first byte reaches the wiki, so a bad model reply, a 401 or a refused path stops the run
with the wiki untouched, and ``--dry-run`` prints exactly what a real run would write.  The
writes themselves go through :class:`episteme.wiki.edit.WikiWriter` (one lock, one log entry,
crash-safe index updates); nothing here reimplements them.

Why one module: the decision types, their checks and :func:`apply_plan` are the contract both
writers and the agent's scripts share, and the writer's inputs (:func:`load_paper`,
:class:`RelatedFinder`, :func:`plan_paper`) are the other side of that contract; together they
are what makes ``--dry-run`` print exactly what a real run writes.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EpistemeError, NotFoundError, UsageError
from ..fsutil import crash_point
from ..paper import PaperSection
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

try:  # renamed from read_page (the frontmatter dict of a page, parsed)
    from ..wiki.edit import load_page
except ImportError:  # pragma: no cover - older wikiwrite
    from ..wiki.edit import read_page as load_page

WRITERS = ("auto", "claude", "extractive")
# no wiki text comes from these (objects are quoted from the sections they belong to)
SKIPPED_KINDS = frozenset({"references", "front", "table", "figure", "algorithm", "footnote"})
MIN_SECTION_CHARS = 200  # shorter sections (bare parent headings, stubs) are not written
PAPERS_FOLDER = "papers"
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
    t = " ".join(t.split()).strip("# ").strip()
    if len(t) > limit:
        cut = t[: limit - 1].rsplit(" ", 1)[0] if " " in t[: limit - 1] else t[: limit - 1]
        t = cut.rstrip(" ,;:-") + "…"
    return t or "Untitled"


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
    return report


# --------------------------------------------------------------------------------- inputs


@dataclass
class PaperInfo:
    id: str
    title: str
    authors: list[str]
    sections: list[PaperSection]
    meta: dict = field(default_factory=dict)  # year, venue, arxiv_id, doi (pdfmeta)

    def meta_fields(self) -> dict[str, Any]:
        """The page frontmatter fields the paper page carries besides its authors."""
        return {k: self.meta[k] for k in ("year", "venue", "arxiv_id", "doi", "citation_key")
                if self.meta.get(k)}

    def meta_line(self) -> str | None:
        """"**Published:** venue, year · arXiv:… · doi:…" for the paper page, or None."""
        m = self.meta
        bits = [", ".join(str(x) for x in (m.get("venue"), m.get("year")) if x)]
        bits += [f"arXiv:{m['arxiv_id']}" if m.get("arxiv_id") else "",
                 f"doi:{m['doi']}" if m.get("doi") else ""]
        bits = [b for b in bits if b]
        return f"**Published:** {' · '.join(bits)}" if bits else None

    def writable(self) -> tuple[list[PaperSection], list[dict[str, str]]]:
        """The sections worth writing, and the others with the reason they are skipped."""
        keep: list[PaperSection] = []
        skipped: list[dict[str, str]] = []
        for s in self.sections:
            if s.kind in SKIPPED_KINDS:
                skipped.append({"paper_section": s.id, "title": s.title, "reason": f"{s.kind} section"})
            elif len(s.text.strip()) < MIN_SECTION_CHARS:
                skipped.append({"paper_section": s.id, "title": s.title,
                                "reason": f"too short ({len(s.text.strip())} chars)"})
            else:
                keep.append(s)
        return keep, skipped


def load_paper(settings, paper_id: str) -> PaperInfo:
    """A paper's metadata and sections from SQLite (raises :class:`NotFoundError`)."""
    from ..stores.sqlite import open_store

    with open_store(settings, readonly=True) as store:
        row = store.paper(paper_id)
        if row is None:
            known = ", ".join(p["id"] for p in store.papers()) or "none"
            raise NotFoundError(f"paper {paper_id!r} is not ingested in this wiki (ingested: {known})")
        sections = store.paper_sections(paper_id)
    title = (row.get("title") or "").strip() or Path(paper_id).stem
    return PaperInfo(paper_id, sanitize_title(title), list(row.get("authors") or []), sections,
                     dict(row.get("meta") or {}))


def resolve_paper_id(settings, paper: str) -> str:
    """``attention.pdf``, ``raw/attention.pdf`` or a path to the PDF → the stored paper id."""
    from ..ingest.pipeline import paper_id_for

    name = Path(str(paper)).name
    if name and not name.startswith(".") and (settings.raw_dir / name).is_file():
        return name  # already a stored id (ids are not a fixed point of paper_id_for)
    pid = paper_id_for(name)
    if not (settings.raw_dir / pid).is_file():
        raise NotFoundError(f"{pid} is not in {settings.raw_dir} (ingest it first)")
    return pid


class RelatedFinder:
    """The top related wiki sections for a piece of text: :mod:`episteme.query.wikisearch`'s
    embedding index over wiki sections (refreshed once per paper), never the whole index."""

    def __init__(self, settings, embedder=None):
        from ..query.wikisearch import WikiSectionIndex

        self._index = WikiSectionIndex(settings, embedder=embedder)
        self.refreshed: dict[str, Any] | None = None

    def refresh(self) -> dict[str, Any]:
        self.refreshed = self._index.refresh()
        return self.refreshed

    def search(self, text: str, k: int = 6, exclude_ids: Iterable[str] = ()) -> list[dict[str, Any]]:
        if self.refreshed is None:
            self.refresh()
        return list(self._index.search(text, k=k, exclude_ids=tuple(exclude_ids)))


def page_type_of(wiki: str | Path, page: str) -> str | None:
    """The ``type`` in a page's frontmatter (``None`` if unreadable or absent)."""
    try:
        _, _, fm = load_page(wiki, page)
    except EpistemeError:
        return None
    value = fm.get("type")
    return str(value) if value else None


def _recover_interrupted_write(wiki: str | Path) -> dict | None:
    """An earlier batch was killed mid-way: rebuild the indexes from the pages first, so the
    "already written?" check reads what the pages really hold (a stale ``index.json`` would
    make the re-run write every section a second time).  Returns the interrupted batch's
    record (``{"op", "subject", ...}``) or ``None``."""
    from ..fsutil import wiki_lock
    from ..wiki.edit import pending_write, rebuild_indexes

    if pending_write(wiki) is None:
        return None
    with wiki_lock(wiki):
        pending = pending_write(wiki)
        if pending is not None:
            rebuild_indexes(wiki)
    return pending


def paper_already_written(wiki: str | Path, paper_id: str) -> bool:
    """True when some wiki section already cites ``paper_id`` (``index.json``)."""
    from ..wiki.index import read_index_json

    try:
        return any(paper_id in srcs for srcs in read_index_json(wiki).values())
    except EpistemeError:
        return False


def choose_writer(requested: str, settings, env: Mapping[str, str] | None = None) -> str:
    """``auto`` → ``claude`` when an API key is set and we are not inside an agent, else
    ``extractive``.  ``claude`` without a key is a clear error."""
    from ..llm.client import inside_agent, llm_mode

    if requested not in WRITERS:
        raise UsageError(f"--writer must be one of {', '.join(WRITERS)}")
    if requested == "extractive":
        return "extractive"
    has_key = llm_mode(settings) == "claude"
    if requested == "claude":
        if not has_key:
            raise UsageError("--writer claude needs ANTHROPIC_API_KEY (or LLM_API_KEY); "
                             "use --writer extractive to write offline")
        return "claude"
    return "claude" if has_key and not inside_agent(env) else "extractive"


def write_paper(
    settings,
    paper_id: str,
    *,
    writer: str = "auto",
    dry_run: bool = False,
    today: _dt.date | None = None,
    embedder=None,
    force: bool = False,
    llm_client=None,
    env: Mapping[str, str] | None = None,
    check_claims: bool = True,
    strict: bool = False,
) -> dict[str, Any]:
    """Plan (and unless ``dry_run``, write) the wiki pages for one ingested paper.

    ``check_claims``: each planned body is checked as ``lint --claims`` will check it, and the
    findings returned as ``claim_findings``; with ``strict`` a plan with a contradicted sentence
    is refused (:class:`EpistemeError`, nothing written).

    Returns the writer's part of the ingest JSON: ``writer``, ``wiki_pages_updated``,
    ``new_sections``, ``updated_sections``, ``new_pages``, ``skipped_sections`` and, for Claude,
    ``llm_usage``; with ``dry_run``, ``plan`` instead of the write results.
    """
    mode = choose_writer(writer, settings, env)
    wiki = settings.wiki
    interrupted = _recover_interrupted_write(wiki)
    if interrupted and interrupted.get("op") == "ingest" and interrupted.get("subject") == paper_id:
        force = True  # finish the killed batch: sections already there are updated, not re-added
    if not force and not dry_run and paper_already_written(wiki, paper_id):
        return {
            "writer": mode, "wiki_pages_updated": [], "new_sections": [], "updated_sections": [],
            "new_pages": [], "write_status": "already-written",
            "message": f"the wiki already cites {paper_id}; nothing written (use --force-write to write again)",
        }
    usage: dict[str, Any] | None = None
    if mode == "claude":
        from .claude import plan_with_claude

        plan, usage = plan_with_claude(settings, paper_id, embedder=embedder, client=llm_client)
    else:
        from .extractive import plan_extractive

        plan = plan_extractive(settings, paper_id, embedder=embedder, today=today)
    validate_plan(wiki, plan)  # the whole plan, before the first byte is written
    crash_point("write:planned")
    out: dict[str, Any] = {"writer": mode, "skipped_sections": plan.skipped}
    if check_claims:
        from ..query.claims import ClaimChecker, check_body

        checker = ClaimChecker(settings, embedder=embedder)
        try:
            found = []
            for d in plan.decisions:
                body, sources = _text_to_check(wiki, d)
                found += check_body(settings, body, sources, checker=checker, page=d.page)
        finally:
            checker.close()
        out["claim_findings"] = found
        bad = [f for f in found if f["rule"] == "claim-contradicted"]
        if strict and bad and not dry_run:
            raise EpistemeError(f"write refused (--strict): {len(bad)} contradicted sentence(s); first, on "
                                f"{bad[0]['file']}: {bad[0]['message']}")
    if plan.notes:
        out["notes"] = plan.notes
    if dry_run:
        out.update({"dry_run": True, "plan": [d.to_dict() for d in plan.decisions],
                    "wiki_pages_updated": [], "new_sections": [], "updated_sections": []})
    else:
        report = apply_plan(wiki, plan, today=today)
        out.update(report.to_dict())
        out["write_status"] = "written"
        from ..query.wikisearch import refresh_after_write  # the first question as fast as the next

        refresh_after_write(settings, embedder)
    if usage is not None:
        out["llm_usage"] = usage
    return out


def _text_to_check(wiki: Path, d: Decision) -> tuple[str, list[str]]:
    """What the write-time claim check of ``d`` reads: for an update, only the paragraphs it
    adds to the section, with the sources the section has after the write (the old text was
    checked when it was written; checking all of it against the new paper alone both reported
    the other papers' quotes as contradicted and cost more at each merge as sections grew).
    A section that cannot be read is checked whole."""
    if d.action != "update" or not d.section_id:
        return d.body, list(d.sources)
    from ..wiki.sections import parse_page

    try:
        parsed = parse_page((Path(wiki) / d.page).read_text(encoding="utf-8"), strict=False)
        old = next(x for x in parsed.sections if x.id == d.section_id)
    except (OSError, UnicodeDecodeError, StopIteration, EpistemeError):
        return d.body, list(d.sources)
    had = {p.strip() for p in re.split(r"\n\s*\n", old.body) if p.strip()}
    added = [p for p in re.split(r"\n\s*\n", d.body) if p.strip() and p.strip() not in had]
    return "\n\n".join(added), list(dict.fromkeys([*old.sources, *d.sources]))


# ------------------------------------------------------------------------- the agent's plan


def select_sections(sections: list[PaperSection], only: str | Iterable[str]) -> list[PaperSection]:
    """The sections ``only`` names, in paper order: each name may be a store id
    (``attention.pdf#3.2``), the part after ``#`` (``abstract``, ``3.2``), a number, or a title
    (case-insensitive); comma-separated in one string.  Unknown names are an error listing the
    addressable ones."""
    names = [x.strip() for x in (only.split(",") if isinstance(only, str) else only) if x.strip()]
    picked: list[PaperSection] = []
    for name in names:
        low = name.lower()
        hits = [s for s in sections
                if name in (s.id, s.number) or s.id.split("#", 1)[-1].lower() == low
                or " ".join(s.title.lower().split()) == " ".join(low.split())]
        if not hits:
            known = ", ".join(s.id.split("#", 1)[-1] for s in sections)
            raise NotFoundError(f"no writable section {name!r}; writable: {known}")
        picked.extend(h for h in hits if h not in picked)
    return [s for s in sections if s in picked]


def _wiki_section_texts(wiki: Path) -> dict[str, dict[str, Any]]:
    """Every wiki section's id -> page, title, description, sources and body (one scan)."""
    from ..wiki.files import iter_page_files
    from ..wiki.sections import SectionFormatError, parse_page

    out: dict[str, dict[str, Any]] = {}
    for rel in iter_page_files(wiki):
        try:
            text = (wiki / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "<!-- section" not in text:
            continue
        try:
            parsed = parse_page(text, strict=False)
        except SectionFormatError:
            continue
        for sec in parsed.sections:
            out.setdefault(sec.id, {"page": rel, "title": sec.title,
                                    "description": " ".join(sec.description.split()),
                                    "sources": list(sec.sources), "body": sec.body})
    return out


def plan_paper(
    settings,
    paper_id: str,
    *,
    k: int = 5,
    text: bool = True,
    only: str | Iterable[str] | None = None,
    embedder=None,
    semantic: bool = False,
) -> dict[str, Any]:
    """What the agent (skill ``wiki-ingest``) reads before its one batch write: for every
    paper section worth writing, its full text (``text=False``: a preview), a suggested page
    named from its key terms, and the ``k`` most related existing wiki sections with the
    evidence -- ``shared_terms`` and a TF-IDF ``score`` (:mod:`episteme.compile.keyterms`).  Reads the
    wiki's pages and SQLite only (no embedder, no Chroma) unless ``semantic``, which adds the
    wiki-section search's hits (``similarity``).  Writes nothing."""
    from ..fsutil import slugify
    from .extractive import clean_title, is_generic, paper_page_for, short_title
    from .keyterms import TermSpace, title_names_topic, topic_name

    info = load_paper(settings, paper_id)
    wiki = settings.wiki
    writable, skipped = info.writable()
    if only is not None:
        writable = select_sections(writable, only)
    wiki_secs = _wiki_section_texts(wiki)
    docs = {f"w:{sid}": f"{w['title']}. {w['description']}. {w['body']}" for sid, w in wiki_secs.items()}
    # the text alone (not the heading): a heading word must earn its place among key terms
    docs.update({f"p:{s.id}": s.text for s in info.sections
                 if s.kind not in SKIPPED_KINDS})
    space = TermSpace(docs)
    wiki_keys = [f"w:{sid}" for sid in wiki_secs]
    finder = None
    if semantic and wiki_secs and writable:
        finder = RelatedFinder(settings, embedder=embedder)
        finder.refresh()
    paper_page = paper_page_for(wiki, info)
    taken_pages: set[str] = set()
    sections = []
    for s in writable:
        title = clean_title(s.title)
        key = space.key_terms(f"p:{s.id}", 20)
        related: dict[str, dict[str, Any]] = {}
        for wk, score, shared in space.nearest(f"p:{s.id}", wiki_keys, k):
            sid = wk[2:]
            w = wiki_secs[sid]
            related[sid] = {"id": sid, "page": w["page"], "title": w["title"],
                            "description": w["description"], "sources": w["sources"],
                            "score": score, "shared_terms": shared, "match": "terms"}
        if finder is not None:
            for r in finder.search(f"{title}. {s.text[:2000]}", k=k):
                if r["id"] in related:
                    related[r["id"]]["similarity"] = r.get("similarity")
                    related[r["id"]]["match"] = "terms+search"
                elif r["id"] in wiki_secs:
                    score, shared = space.compare(f"p:{s.id}", f"w:{r['id']}")
                    w = wiki_secs[r["id"]]
                    related[r["id"]] = {"id": r["id"], "page": w["page"], "title": w["title"],
                                        "description": w["description"], "sources": w["sources"],
                                        "score": score, "shared_terms": shared,
                                        "similarity": r.get("similarity"), "match": "search"}
        # A topic page when the heading names the text's topic; an organisational heading
        # ("Hardware and Schedule") puts its text on the paper page, with the text's own
        # key-term topic offered as the alternative page name.
        names_topic = not is_generic(s) and title_names_topic(title, key)
        alt = topic_name(key)
        if names_topic:
            suggested = f"{slugify(title, max_len=60)}.md"
            if suggested in taken_pages and alt:  # two sections on one name: keep them apart
                suggested = f"{slugify(alt, max_len=60)}.md"
            taken_pages.add(suggested)
        else:
            suggested = paper_page
        item: dict[str, Any] = {
            "section_id": s.id, "name": s.id.split("#", 1)[-1], "label": s.label,
            "title": s.title, "kind": s.kind, "pages": s.pages_label, "chars": len(s.text),
            "key_terms": key[:8], "suggested_page": suggested,
            **({} if names_topic or not alt or is_generic(s)
               else {"topic_page": f"{slugify(alt, max_len=60)}.md"}),
            "related": sorted(related.values(), key=lambda r: -(r["score"] or 0)),
        }
        if text:
            item["text"] = s.text
        else:
            item["preview"] = " ".join(s.text.split())[:300]
        sections.append(item)
    return {
        "paper": paper_id,
        "title": info.title,
        "short_title": short_title(info.title),
        "authors": info.authors,
        "paper_page": paper_page,
        "paper_page_exists": (wiki / paper_page).is_file(),
        "already_written": paper_already_written(wiki, paper_id),
        "wiki_sections": len(wiki_secs),
        "sections": sections,
        "skipped": skipped,
    }
