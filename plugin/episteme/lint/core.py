"""wiki-lint: every consistency check the wiki needs, and the safe mechanical repairs (``--fix``).

API:

- ``lint_wiki(wiki, *, select=None, disable=(), stores=False, settings=None, today=None)
  -> LintReport``: run the checks; ``report.findings`` sorted by file, line, rule.
- ``apply_fixes(wiki, report, *, settings=None) -> list[dict]`` (:mod:`.fix`): repair what is
  safe to repair mechanically, under the wiki lock with atomic writes; one dict per change.
- ``enabled_rules(schema, select, disable) -> frozenset[str]``: which rules run.

Rule ids, severities and what ``--fix`` does are in :data:`episteme.lint.rules.RULES` (and
``skills/wiki-lint/references/rules.md``).  Rule selection: SCHEMA.md's ``lint: {disable: [...]}``
switches rules off for the wiki; ``--disable R`` adds to that; ``--rule R`` runs exactly the
rules named, whatever SCHEMA.md says (an explicit request wins).  ``lint: {severity: {R: level}}``
in SCHEMA.md changes a rule's severity.

How it stays fast: pages are read once, by the graph's lean build, with the per-page checks
run on each page while its bytes are in hand (:class:`episteme.lint.rules.PageChecker`); link
lines are counted only on the pages whose links are reported (the graph re-reads those); the
indexes are compared with the sections found in that same scan.  Without ``--stores`` only the
standard library and PyYAML are imported; the store checks live in :mod:`episteme.lint.stores`.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterable
from typing import Any

from ..errors import NotFoundError, UsageError
from ..wiki.files import STRUCTURAL_FILES
from ..wiki.schema import Schema, load_schema
from .rules import (
    CLAIM_RULES,
    DEFAULT_DATE_FIELDS,
    RULES,
    SEVERITIES,
    STORE_RULES,
    Finding,
    PageChecker,
    PageRules,
    finding,
    page_key_line,
)

_LINE_IN_MESSAGE = re.compile(r"line (\d+)")
#: link targets that name a structural file (``[[index]]``, ``[[log.md]]``) or the index JSON
STRUCTURAL_TARGETS = frozenset({n[:-3].lower() for n in STRUCTURAL_FILES} | {"index.json"})


class LintReport:
    """The result of :func:`lint_wiki`."""

    def __init__(self, wiki: str, findings: list[Finding], pages: int, enabled: frozenset[str],
                 stores_checked: bool = False, sections: int = 0, extra: dict[str, Any] | None = None):
        self.wiki = wiki
        self.findings = findings
        self.pages = pages
        self.enabled = enabled
        self.stores_checked = stores_checked
        self.sections = sections
        self.extra: dict[str, Any] = {} if extra is None else extra

    def counts(self) -> dict[str, int]:
        c = dict.fromkeys(SEVERITIES, 0)
        for f in self.findings:
            c[f.severity] = c.get(f.severity, 0) + 1
        return c

    def summary(self) -> dict[str, Any]:
        by_rule: dict[str, int] = {}
        for f in self.findings:
            by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
        c = self.counts()
        return {
            "errors": c["error"],
            "warnings": c["warning"],
            "info": c["info"],
            "pages": self.pages,
            "sections": self.sections,
            "rules": dict(sorted(by_rule.items())),
            "rules_run": len(self.enabled),
            "stores_checked": self.stores_checked,
        }


# ------------------------------------------------------------------------------ selection


def _as_rule_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [str(value)]


def parse_rule_args(values: Iterable[str] | None) -> list[str]:
    """``--rule a,b --rule c`` -> ``[a, b, c]``; unknown ids are a usage error."""
    out: list[str] = []
    for v in values or ():
        for r in _as_rule_list(v):
            if r not in RULES:
                raise UsageError(f"unknown rule {r!r} (see skills/wiki-lint/references/rules.md)",
                                 details={"rules": sorted(RULES)})
            out.append(r)
    return out


def enabled_rules(schema: Schema, select: Iterable[str] | None = None, disable: Iterable[str] = (),
                  *, stores: bool = False, claims: bool = False) -> frozenset[str]:
    """The rules that run (store rules only with ``stores``, claim rules only with ``claims``)."""
    if select:
        on = set(select)
    else:
        on = set(RULES)
        on -= {r for r in _as_rule_list((schema.lint or {}).get("disable")) if r in RULES}
        on -= set(disable)
    if not stores:
        on -= STORE_RULES
    if not claims:
        on -= CLAIM_RULES
    return frozenset(on)


def _schema_findings(schema: Schema) -> list[Finding]:
    out = []
    for msg in schema.errors:
        m = _LINE_IN_MESSAGE.search(msg)
        out.append(finding("schema-invalid", "SCHEMA.md", int(m[1]) if m else None, msg))
    lint = schema.lint or {}
    unknown = [r for r in _as_rule_list(lint.get("disable")) if r not in RULES]
    if unknown:
        out.append(finding("schema-invalid", "SCHEMA.md", _schema_line(schema, "disable"),
                           f"lint.disable names unknown rule(s): {', '.join(unknown)}"))
    sev = lint.get("severity")
    if sev is not None and not isinstance(sev, dict):
        out.append(finding("schema-invalid", "SCHEMA.md", _schema_line(schema, "severity"), "lint.severity is not a mapping"))
    elif isinstance(sev, dict):
        for r, level in sev.items():
            if r not in RULES or level not in SEVERITIES:
                out.append(finding("schema-invalid", "SCHEMA.md", _schema_line(schema, "severity"),
                                   f"lint.severity: {r}: {level} (rule ids from the rule list; levels: {', '.join(SEVERITIES)})"))
    return out


def _schema_line(schema: Schema, key: str) -> int | None:
    if not schema.path:
        return None
    try:
        with open(schema.path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    m = re.search(rf"^\s*{re.escape(key)}\s*:", text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else None


# ------------------------------------------------------------------------------ the run


def lint_wiki(
    wiki: str | os.PathLike,
    *,
    select: Iterable[str] | None = None,
    disable: Iterable[str] = (),
    stores: bool = False,
    settings: Any = None,
    today: _dt.date | None = None,
    claims: bool = False,
    since: str | None = None,
) -> LintReport:
    """Run every enabled rule over the wiki at ``wiki`` (``claims``: also check the claims of
    the sections against their papers, :mod:`episteme.lint.claims_run`; ``since`` limits that)."""
    from ..graph.core import WikiGraph
    from .indexes import check_indexes, log_findings

    root = os.fspath(wiki)
    if not os.path.isdir(root):
        raise NotFoundError(f"wiki folder not found: {root}")
    schema = load_schema(root)
    enabled = enabled_rules(schema, select, disable, stores=stores, claims=claims)
    date_fields = (
        tuple(k for k, s in schema.fields.items() if str(s.get("type", "")).lower() == "date")
        if schema.fields else DEFAULT_DATE_FIELDS
    )
    checker = PageChecker(PageRules(enabled, dict(schema.fields), bool(schema.fields), date_fields))
    g = WikiGraph.build(root, today=today, keep_links=False, visit=checker.visit, schema=schema)
    findings = checker.findings
    sections = checker.sections
    if "page-unreadable" in enabled:
        findings.extend(finding("page-unreadable", pid, None, f"not read: {why}") for pid, why in g.skipped)
    if "schema-invalid" in enabled:
        findings.extend(_schema_findings(schema))
    findings.extend(_page_findings(g, enabled))
    findings.extend(check_indexes(root, sections, enabled))
    if "log-malformed" in enabled:
        findings.extend(log_findings(root))
    findings.extend(_link_findings(g, enabled))
    report = LintReport(root, findings, len(g.pages), enabled, stores, len(sections))
    if stores:
        from .stores import check_stores

        findings.extend(check_stores(root, settings, enabled, sections))
    if claims and enabled & CLAIM_RULES:
        from .claims_run import lint_hook

        findings.extend(lint_hook(report, settings, sections, since))
    _apply_severity(schema, findings)
    report.findings = sorted((f for f in findings if f.rule in enabled), key=_sort_key)
    return report


def _sort_key(f: Finding) -> tuple:
    return (f.file, f.line or 0, f.rule, f.message)


def _apply_severity(schema: Schema, findings: list[Finding]) -> None:
    sev = (schema.lint or {}).get("severity")
    if not isinstance(sev, dict):
        return
    for f in findings:
        level = sev.get(f.rule)
        if level in SEVERITIES:
            f.severity = level


# ------------------------------------------------------------------------------ links


def _is_structural(target: str) -> bool:
    t = target.strip().lower()
    while t.startswith("./") or t.startswith("/"):
        t = t[2:] if t.startswith("./") else t[1:]
    return t in STRUCTURAL_TARGETS or t.startswith("raw/")


def _link_findings(g: Any, on: frozenset[str]) -> list[Finding]:
    """Dangling (with the closest page), structural and ambiguous links."""
    from .suggest import Suggester

    out: list[Finding] = []
    if on & {"link-dangling", "link-structural"}:
        sug = None
        for d in g.dangling:
            if _is_structural(d.target):
                if "link-structural" in on:
                    out.append(finding("link-structural", d.source, d.line,
                                       f"[[{d.target}]] points at a structural file, not a page", target=d.target))
            elif "link-dangling" in on:
                if sug is None:
                    sug = Suggester.of_graph(g)
                near = sug.suggest(d.target)
                hint = f"; closest page: {near}" if near else ""
                out.append(finding("link-dangling", d.source, d.line, f"[[{d.target}]] matches no page{hint}",
                                   target=d.target, suggestion=near))
    if "link-ambiguous" in on:
        seen: set[tuple[str, str]] = set()
        for a in g.ambiguities:
            k = (a.source, a.target.lower())
            if k in seen:
                continue
            seen.add(k)
            out.append(finding("link-ambiguous", a.source, a.line,
                               f"[[{a.target}]] matches {len(a.candidates)} pages by {a.step} "
                               f"({', '.join(a.candidates)}); using {a.chosen}",
                               target=a.target, candidates=list(a.candidates), chosen=a.chosen))
    return out


def _page_findings(g: Any, on: frozenset[str]) -> list[Finding]:
    from ..graph.algorithms import degrees
    from ..wiki.frontmatter import frontmatter_title
    from ..wiki.schema import page_date

    out: list[Finding] = []
    n = len(g.ids)
    if on & {"page-orphan", "page-leaf"} and n >= 2:
        _, indeg, outdeg = degrees(g, None)
        for i in [i for i, d in enumerate(outdeg) if d == 0]:  # (most pages link somewhere)
            if indeg[i] == 0:
                if "page-orphan" in on:
                    out.append(finding("page-orphan", g.ids[i], 1, "no page links here and this page links nowhere"))
            elif "page-leaf" in on:
                out.append(finding("page-leaf", g.ids[i], 1, f"linked from {indeg[i]} page(s) but links nowhere"))
    if "title-duplicate" in on:
        # the graph's title index holds a list of nodes (in id order) where pages share a title
        for nodes in g.shared_names("title"):
            j = nodes[0]
            for i in nodes[1:]:
                p = g.pages[i]
                t = frontmatter_title(p.props)
                out.append(finding("title-duplicate", p.id, page_key_line(g.root, p.id, "title"),
                                   f"title {t!r} is also the title of {g.ids[j]}", other=g.ids[j]))
    if "page-stale" in on and g.tiers_enabled:
        tiers = g.schema.tiers
        for i, p in enumerate(g.pages):
            tier = g.tiers[i]
            if tier == "active" or p.props.get("tier_override") is not None:
                continue
            key, d = None, None
            for key in (tiers.driving_field, "ingested_at", "updated"):
                d = page_date(p.props.get(key))
                if d is not None:
                    break
            line = page_key_line(g.root, p.id, key) if key and key in p.props else 1
            age = (g.today - d).days if d else None
            out.append(finding("page-stale", p.id, line,
                               f"tier {tier}: '{key}' is {d} ({age} days old); review it or pin it with tier_override: pin",
                               tier=tier))
    return out
