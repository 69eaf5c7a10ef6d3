"""The wiki writer's run: choose the writer (Claude or the offline extractive one), plan every
write for one ingested paper, check the plan (and its claims, as ``lint --claims`` will), and
apply it in one locked batch -- or, with ``--dry-run``, print exactly what would be written.

The parts live beside it: the decision types, their checks and :func:`apply_plan` in
:mod:`episteme.compile.decisions`; the writer's inputs (a paper's sections, related wiki
sections) in :mod:`episteme.compile.inputs`; page and title naming in
:mod:`episteme.compile.naming`; the two writers in :mod:`episteme.compile.extractive` and
:mod:`episteme.compile.claude`; the agent's plan in :mod:`episteme.compile.agentplan`.  The
names below are re-exported for the callers that import them from here (``write_paper`` is
the entry point; the others are the public contract of the modules named above).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import EpistemeError, UsageError
from ..fsutil import crash_point
from ..paper import PaperSection
from .agentplan import plan_paper, select_sections
from .decisions import (
    Decision,
    WritePlan,
    WriteReport,
    apply_plan,
    check_links,
    clean_tags,
    link_targets,
    make_idempotent,
    sanitize_decision,
    sanitize_title,
    validate_decision,
    validate_plan,
)
from .inputs import (
    MIN_SECTION_CHARS,
    PAPERS_FOLDER,
    SKIPPED_KINDS,
    PaperInfo,
    RelatedFinder,
    load_paper,
    page_type_of,
    paper_already_written,
    resolve_paper_id,
)

__all__ = [
    "MIN_SECTION_CHARS", "PAPERS_FOLDER", "SKIPPED_KINDS", "WRITERS", "Decision", "PaperInfo",
    "PaperSection", "RelatedFinder", "WritePlan", "WriteReport", "apply_plan", "check_links",
    "choose_writer", "clean_tags", "link_targets", "load_paper", "make_idempotent",
    "page_type_of", "paper_already_written", "plan_paper", "resolve_paper_id",
    "sanitize_decision", "sanitize_title", "select_sections", "validate_decision",
    "validate_plan", "write_paper",
]

WRITERS = ("auto", "claude", "extractive")


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
        out.update(_write_citations(settings, paper_id, today))
        from ..query.wikisearch import refresh_after_write  # the first question as fast as the next

        refresh_after_write(settings, embedder)
    if usage is not None:
        out["llm_usage"] = usage
    return out


def _write_citations(settings, paper_id: str, today: _dt.date | None) -> dict[str, Any]:
    """The ``Citations`` sections of this paper's page and of the pages of the papers it cites
    or is cited by (:mod:`episteme.compile.citelinks`); ``{}`` when nothing changed.  A failure
    here is reported, never undoes the paper's pages just written."""
    from .citelinks import update_citation_sections

    try:
        done = update_citation_sections(settings, papers=[paper_id], today=today)
    except EpistemeError as e:
        return {"citations_error": e.message}
    return {"citations": done} if done["created"] or done["updated"] else {}


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
