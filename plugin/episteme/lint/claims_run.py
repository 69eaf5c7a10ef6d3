"""wiki-lint ``--claims``, run: every section of the pages read, its claims verified against its
own sources by the tracer's verifier (:class:`episteme.query.claims.ClaimChecker`) unless the
cache holds its result, and reported as lint findings (:mod:`episteme.lint.claims`).

lint's door to the query layer: imported only when ``--claims`` is asked for (by
:func:`episteme.lint.core.lint_wiki`, the server and the command), so a plain lint stays light
(the import-linter contracts allow this one import upward).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..query.claims import ClaimChecker, code_hash, page_sections
from .claims import (
    ClaimCache,
    ClaimsRun,
    changed_pages,
    index_json,
    mark_lost_support,
    remember_paper,
    result_findings,
    section_key,
    tally,
)
from .rules import Finding


def check_claims(root: str, settings: Any, page_files: list[str], *, since: set[str] | None = None,
                 checker: ClaimChecker | None = None, progress: bool = True) -> ClaimsRun:
    """Lint the claims of every section of ``page_files`` (paths relative to ``root``); with
    ``since``, only of those pages (the rest keep their cache entries and are not reported)."""
    started = time.monotonic()
    if settings is None:
        from ..config import load_settings

        settings = load_settings(root)
    own = checker is None
    checker = checker or ClaimChecker(settings)
    try:
        index = index_json(root)
        cache = ClaimCache(root)
        code = code_hash()
        todo: list[tuple[str, Any, str, dict]] = []
        done: list[tuple[str, Any, list[dict]]] = []
        seen: set[str] = set()
        skipped = 0
        for rel in page_files:
            try:
                text = Path(root, rel).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for sec in page_sections(text):
                if sec.id in index:
                    sec.sources = list(index[sec.id])
                seen.add(sec.id)
                if since is not None and rel not in since:
                    key, shas = section_key(sec, checker.papers, code)
                    old = cache.get(sec.id)
                    if not old or old.get("key") != key:
                        # a source changed under an untouched page: that is a change too
                        if not old or old.get("shas") == shas:
                            skipped += 1
                            continue
                    else:
                        skipped += 1
                        continue
                key, shas = section_key(sec, checker.papers, code)
                old = cache.get(sec.id)
                if old and old.get("key") == key:
                    done.append((rel, sec, old.get("results") or []))
                else:
                    todo.append((rel, sec, key, {"shas": shas, "old": old}))
        n_cached = len(done)
        if todo:
            results = checker.check([t[1] for t in todo], progress=progress)
            for (rel, sec, key, meta), res in zip(todo, results, strict=True):
                remember_paper(res, sec, checker.papers)
                mark_lost_support(meta["old"], res, meta["shas"], checker.papers)
                cache.put(sec.id, {"key": key, "shas": meta["shas"], "results": res})
                done.append((rel, sec, res))
        cache.save(keep=seen if since is None else None)
        findings: list[Finding] = []
        pages: dict[str, dict[str, int]] = {}
        for rel, sec, res in done:
            row = pages.setdefault(rel, {"checked": 0, "supported": 0, "unsupported": 0,
                                         "contradicted": 0, "quotes_located": 0})
            tally(row, res)
            findings.extend(result_findings(rel, sec, res))
        return ClaimsRun(findings, pages, len(todo), n_cached, skipped, time.monotonic() - started)
    finally:
        if own:
            checker.close()



def lint_hook(report: Any, settings: Any, sections: list[tuple[str, Any]], since: str | None) -> list[Finding]:
    """What :func:`episteme.lint.lint_wiki` calls with ``claims=True``: the pages holding the
    sections its scan found, checked; the per-page table goes to ``report.extra["claims"]``."""
    root = report.wiki
    files = list(dict.fromkeys(pid for pid, _s in sections))
    changed = changed_pages(root, since, files) if since else None
    run = check_claims(root, settings, files, since=changed)
    report.extra["claims"] = run
    return run.findings
