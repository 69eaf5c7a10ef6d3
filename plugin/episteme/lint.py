"""wiki-lint: every consistency check the wiki needs, and the safe mechanical repairs (``--fix``).

API:

- ``lint_wiki(wiki, *, select=None, disable=(), stores=False, settings=None, today=None,
  jobs=None) -> LintReport``: run the checks; ``report.findings`` sorted by file, line, rule.
- ``apply_fixes(wiki, report, *, settings=None) -> list[dict]``: repair what is safe to repair
  mechanically, under the wiki lock with atomic writes; one dict per change made.
- ``enabled_rules(schema, select, disable) -> frozenset[str]``: which rules run.

Rule ids, severities and what ``--fix`` does are in :data:`episteme.lint_rules.RULES` (and
``skills/wiki-lint/references/rules.md``).  Rule selection: SCHEMA.md's ``lint: {disable: [...]}``
switches rules off for the wiki; ``--disable R`` adds to that; ``--rule R`` runs exactly the
rules named, whatever SCHEMA.md says (an explicit request wins).  ``lint: {severity: {R: level}}``
in SCHEMA.md changes a rule's severity.

How it stays fast: pages are read once (:func:`episteme.lint_rules.scan_lean`, which runs the
per-page checks while the bytes are in hand, in two processes on big wikis, and counts link
lines only on pages whose links may be reported), the link graph is built from those rows as
the graph command builds its own, the closest-page suggestions are found by the scan's second
process meanwhile (:class:`_SuggestAhead`), and the indexes are compared with the sections
found in that same scan.  Without ``--stores`` only the standard library and PyYAML are
imported; the store checks live in :mod:`episteme.lint_stores`.
"""

from __future__ import annotations

import datetime as _dt
import heapq
import os
import re
from collections.abc import Iterable

from .errors import NotFoundError, UsageError
from .lint_rules import (
    CLAIM_RULES,
    DEFAULT_DATE_FIELDS,
    RULES,
    SEVERITIES,
    STORE_RULES,
    Finding,
    PageRules,
    SectionInfo,
    finding,
    normalize_date_text,
    page_key_line,
    scan_lean,
)
from .schema import Schema, load_schema

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (typing and dataclasses cost the command start-up time)
    from typing import Any

_LINE_IN_MESSAGE = re.compile(r"line (\d+)")
STRUCTURAL_TARGETS = frozenset({"index", "log", "schema", "index.json"})


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
    jobs: int | None = None,
    claims: bool = False,
    since: str | None = None,
) -> LintReport:
    """Run every enabled rule over the wiki at ``wiki``.

    The cyclic garbage collector is paused for the run: a lint allocates many small objects
    (pages, links, findings) and frees almost none of them before it ends, so collections only
    cost time (about a tenth of the run on a 10k-page wiki)."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _lint_wiki(wiki, select=select, disable=disable, stores=stores, settings=settings, today=today,
                          jobs=jobs, claims=claims, since=since)
    finally:
        if was_enabled:
            gc.enable()


def _lint_wiki(wiki, *, select, disable, stores, settings, today, jobs, claims=False, since=None) -> LintReport:

    root = os.fspath(wiki)
    if not os.path.isdir(root):
        raise NotFoundError(f"wiki folder not found: {root}")
    schema = load_schema(root)
    enabled = enabled_rules(schema, select, disable, stores=stores, claims=claims)
    date_fields = (
        tuple(k for k, s in schema.fields.items() if str(s.get("type", "")).lower() == "date")
        if schema.fields else DEFAULT_DATE_FIELDS
    )
    key_lines: tuple[str, ...] = ("title",)
    if schema.tiers.enabled:
        key_lines += (schema.tiers.driving_field, "ingested_at", "updated")
    rules = PageRules(enabled, dict(schema.fields), bool(schema.fields), date_fields, key_lines)
    ahead = _SuggestAhead() if "link-dangling" in enabled else None
    try:
        g, rows = _scan_graph(root, rules, schema, today, jobs, ahead)
        pages = g.pages
        sug = _line_numbers(g, [r[4] for r in rows], enabled)
        findings: list[Finding] = []
        sections: list[tuple[str, SectionInfo]] = []
        for i, r in enumerate(rows):
            extra = r[5]
            if extra is not None:
                pid = pages[i].id
                sections.extend((pid, s) for s in extra[0])
                findings.extend(extra[1])
        del rows
        if "schema-invalid" in enabled:
            findings.extend(_schema_findings(schema))
        findings.extend(_page_findings(g, enabled))
        findings.extend(check_indexes(root, sections, enabled))
        if "log-malformed" in enabled:
            findings.extend(_log_findings(root))
        # last: the second process may still be finding the suggestions these need
        if sug is not None and ahead is not None and ahead.used:
            sug.take(ahead.collect())
        findings.extend(_link_findings(g, enabled, {"suggester": sug}))
    finally:
        if ahead is not None:
            ahead.close()
    report = LintReport(root, findings, len(pages), enabled, stores, len(sections))
    if stores:
        from .lint_stores import check_stores

        findings.extend(check_stores(root, settings, enabled, sections))
    if claims and enabled & CLAIM_RULES:
        from .lint_claims import lint_hook

        findings.extend(lint_hook(report, settings, sections, since))
    _apply_severity(schema, findings)
    report.findings = sorted((f for f in findings if f.rule in enabled), key=_sort_key)
    return report


def _scan_graph(root: str, rules: PageRules, schema: Schema, today: _dt.date | None, jobs: int | None,
                ahead: _SuggestAhead | None = None) -> tuple[Any, list[tuple]]:
    """The link graph of a lean scan (no link line numbers: the graph re-reads only the pages
    with dangling or ambiguous links for those), with each page's per-page check results
    (``rows[i][5]``).  The same steps as the graph command's lean build: the first part's page
    objects and names are made while the second process scans.  ``ahead``: the suggestions'
    follow-up for that process (see :class:`_SuggestAhead`)."""
    from .graph import STEPS, WikiGraph, _add_names
    from .pages import NO_LINKS, Page

    prefix = "" if not root or root.endswith("/") else root + "/"
    pages: list[Page] = []
    keys: dict[str, dict[str, Any]] = {s: {} for s in STEPS}

    def page_objects(part: list[str], rows: list[tuple]) -> None:
        if ahead is not None:
            ahead.early(rows)
        pages.extend(Page(pid, prefix + pid, r[0], NO_LINKS, r[1], r[2], r[3]) for pid, r in zip(part, rows, strict=True))
        _add_names(keys, pages, 0)

    followup = ahead.fu if ahead is not None else None
    ids, rows = scan_lean(root, rules, jobs=jobs, meanwhile=page_objects, followup=followup)
    done = len(pages)
    pages.extend(
        Page(pid, prefix + pid, r[0], NO_LINKS, r[1], r[2], r[3]) for pid, r in zip(ids[done:], rows[done:], strict=True)
    )
    _add_names(keys, pages, done)
    g = WikiGraph(root, pages, schema, today, False, [r[4] for r in rows], keys)
    return g, rows


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


class _Suggester:
    """The closest page name to a dangling target.

    ``difflib`` over every name costs tens of milliseconds per target on a 10k-page wiki, so
    candidates are first narrowed to the dozen names sharing the most words with the target
    (character trigrams when no word is shared, e.g. a typo inside a one-word name); only
    those are scored with ``difflib``.  Results are cached per target."""

    _WORD = re.compile(r"[a-z0-9]+")

    def __init__(self, names: dict[str, int] | None, ids: list[str], graph: Any = None):
        """``names``: lowercased page name -> node (see :meth:`name_index`), or ``None`` to
        make it from ``graph`` when first needed (every answer may come from elsewhere, see
        :meth:`take`); ``ids``: page ids by node."""
        self._names = names
        self._graph = graph
        self.ids = ids
        self._words: dict[str, list[str]] | None = None
        self._grams: dict[str, list[str]] | None = None
        self._cache: dict[str, str | None] = {}

    @staticmethod
    def name_index(ids: list[str], titles: list[str | None]) -> dict[str, int]:
        """Each page's title and file stem, lowercased -> the first node (in id order) with
        that name.  ``titles[i]``: the frontmatter title of ``ids[i]`` (``None``: no title, so
        the stem stands for it, as :attr:`episteme.pages.Page.title` says)."""
        names: dict[str, int] = {}
        put = names.setdefault
        for i, pid in enumerate(ids):
            stem = pid[pid.rfind("/") + 1 :]
            if stem.endswith(".md"):
                stem = stem[:-3]
            t = titles[i]
            put((stem if t is None else t).lower(), i)
            put(stem.lower(), i)
        return names

    @classmethod
    def of_graph(cls, g: Any) -> _Suggester:
        """A suggester over the pages of ``g`` (its name index made on first use)."""
        return cls(None, g.ids, g)

    @property
    def names(self) -> dict[str, int]:
        if self._names is None:
            from .pages import frontmatter_title

            g = self._graph
            self._names = self.name_index(g.ids, [frontmatter_title(p.props) for p in g.pages])
        return self._names

    @staticmethod
    def _trigrams(s: str) -> set[str]:
        s = f"  {s} "
        return {s[i : i + 3] for i in range(len(s) - 2)}

    def _count(self, keys: Iterable[str], index: dict[str, list[str]]) -> dict[str, float]:
        """Names sharing ``keys``, scored by the keys' rarity (a shared rare word says more
        than a shared common one).  Keys on more than a twentieth of all names are skipped
        unless nothing else matches: they cost the most and discriminate least."""
        # keys in a fixed order: the scores are float sums, so their order must not depend on
        # string hashing (ties among the candidates would then differ from run to run)
        postings = sorted((index[k] for k in sorted(keys) if k in index), key=len)
        if not postings:
            return {}
        cap = max(50, len(self.names) // 20)
        use = [p for p in postings if len(p) <= cap] or postings[:1]
        counts: dict[str, float] = {}
        get = counts.get
        for names in use:
            w = 1.0 / len(names)
            for name in names:
                counts[name] = get(name, 0.0) + w
        return counts

    def take(self, found: dict[str, str | None]) -> None:
        """Suggestions found elsewhere (the same names give the same answers)."""
        self._cache.update(found)

    def word_index(self) -> dict[str, list[str]]:
        """Word -> the names containing it (made once, on first use)."""
        if self._words is None:
            words: dict[str, list[str]] = {}
            for name in self.names:
                for w in set(self._WORD.findall(name)):
                    words.setdefault(w, []).append(name)
            self._words = words
        return self._words

    def suggest(self, target: str) -> str | None:
        full = target.lower().strip()
        if full in self._cache:
            return self._cache[full]
        key = full.rstrip("/").rsplit("/", 1)[-1]  # folder/name: folders are not names
        counts = self._count(set(self._WORD.findall(key)), self.word_index())
        if not counts:
            if self._grams is None:
                grams: dict[str, list[str]] = {}
                for name in self.names:
                    for t in self._trigrams(name):
                        grams.setdefault(t, []).append(name)
                self._grams = grams
            counts = self._count(self._trigrams(key), self._grams)
        pool: Iterable[str] = counts
        if len(counts) > 12:
            # only names scoring at least the 12th best score can be among the 12 (found in C);
            # the order of the rest is kept, so ties resolve as over all of them
            floor = heapq.nlargest(12, counts.values())[-1]
            pool = [c for c, v in counts.items() if v >= floor]
        n = len(key)
        # difflib's ratio, quick_ratio and real_quick_ratio, the same numbers (see _Ratio)
        r = _Ratio(key)
        bounds = []
        # the dozen best by score, then by closeness in length, ties to the first in pool order
        # (what nlargest with a key gives, decorated here without a Python call per name)
        top = heapq.nlargest(12, [(counts[c], -abs(len(c) - n), -i, c) for i, c in enumerate(pool)])
        for *_, name in top:
            if 2.0 * min(len(name), n) / (len(name) + n) > 0.6:  # (ratio <= these bounds)
                bounds.append((-r.quick_ratio(name), name))
        # the best ratio above 0.6, ties to the first name in code-point order; each ratio is
        # at most its quick_ratio, so candidates go by that bound and stop once it is too low
        best, best_score = None, 0.6
        for neg, name in sorted(bounds):
            if -neg < best_score:
                break
            if -neg == best_score and (best is None or name > best):
                continue
            score = r.ratio(name)
            if score > best_score or (score == best_score and best is not None and name < best):
                best, best_score = name, score
        out = None if best is None else self.ids[self.names[best]]
        self._cache[full] = out
        return out


class _Ratio:
    """``difflib.SequenceMatcher(None, a, b).ratio()`` (and ``quick_ratio``) for many ``a``
    against one ``b``, computed the same way to the last bit but ~1.7x faster: without junk
    (none is asked for, and difflib's automatic junk applies only to a ``b`` of 200 or more
    items, which is then left to difflib itself), the longest-match search is difflib's own
    loop with its extension steps dropped (no-ops without junk), and the matching blocks are
    only summed, never built.  The suggestions spend most of their time here."""

    __slots__ = ("b", "n", "b2j", "counts")

    def __init__(self, b: str):
        self.b = b
        self.n = len(b)
        b2j: dict[str, list[int]] = {}
        for j, c in enumerate(b):
            b2j.setdefault(c, []).append(j)
        self.b2j = b2j
        self.counts = {c: len(js) for c, js in b2j.items()}

    def quick_ratio(self, a: str) -> float:
        """difflib's upper bound on :meth:`ratio`: the characters ``a`` and ``b`` share."""
        full = self.counts
        avail: dict[str, int] = {}
        matches = 0
        for c in a:
            k = avail[c] if c in avail else full.get(c, 0)
            avail[c] = k - 1
            if k > 0:
                matches += 1
        size = len(a) + self.n
        return 2.0 * matches / size if size else 1.0

    def ratio(self, a: str) -> float:
        la, lb = len(a), self.n
        if lb >= 200:  # difflib's autojunk changes the matching there: let it decide
            import difflib

            return difflib.SequenceMatcher(None, a, self.b).ratio()
        if not la + lb:
            return 1.0
        b2j = self.b2j
        nothing: list[int] = []
        total = 0
        todo = [(0, la, 0, lb)]
        while todo:  # (the order of the halves does not change the sum)
            alo, ahi, blo, bhi = todo.pop()
            besti, bestj, bestsize = alo, blo, 0
            j2len: dict[int, int] = {}
            for i in range(alo, ahi):
                get = j2len.get
                newj2len: dict[int, int] = {}
                for j in b2j.get(a[i], nothing):
                    if j < blo:
                        continue
                    if j >= bhi:
                        break
                    k = newj2len[j] = get(j - 1, 0) + 1
                    if k > bestsize:
                        besti, bestj, bestsize = i - k + 1, j - k + 1, k
                j2len = newj2len
            if bestsize:
                total += bestsize
                if alo < besti and blo < bestj:
                    todo.append((alo, besti, blo, bestj))
                if besti + bestsize < ahi and bestj + bestsize < bhi:
                    todo.append((besti + bestsize, ahi, bestj + bestsize, bhi))
        return 2.0 * total / (la + lb)


def _is_structural(target: str) -> bool:
    t = target.strip().lower()
    while t.startswith("./") or t.startswith("/"):
        t = t[2:] if t.startswith("./") else t[1:]
    return t in STRUCTURAL_TARGETS or t.startswith("raw/")


def _link_pairs(root: str, page_id: str) -> Any:
    """A page's links with their line numbers, as :func:`episteme.pages.parse_page` finds them,
    without parsing its frontmatter (only where the body starts matters here)."""
    from .pages import _frontmatter_bounds, read_bytes, scan_links

    data = read_bytes(os.path.join(root, page_id))
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    if data[:3] == b"---":
        b = _frontmatter_bounds(data)
        if b is not None and b[0] >= 0:
            return scan_links(data[b[2] :], 3 + data.count(b"\n", b[0], b[1])).pairs()
    return scan_links(data, 1).pairs()


def _line_numbered(g: Any, ids: list[int], targets: list[tuple[str, ...]]) -> tuple[list, list]:
    """Dangling and ambiguous links, with lines, of the pages ``ids`` (the lean graph's pages
    that have such links): one of each per page and target compared case-insensitively, the
    first occurrence, which is what the findings report.  The page is re-read and only those
    links are looked for (:func:`episteme.lint_rules.reported_link_lines`); a page where
    that is not sure is resolved in full from :func:`_link_pairs` (a page deleted since the
    scan has nothing to point at)."""
    from .graph import Ambiguity, Dangling
    from .lint_rules import reported_link_lines
    from .pages import read_bytes

    g._dangling, g._ambiguities, g.dangling_sources = [], [], []
    dangling, ambiguities, sources = g._dangling, g._ambiguities, g.dangling_sources
    code = g._codes
    by_text: dict[str, Any] = {}
    prefix = g.root + "/" if g.root and not g.root.endswith("/") else g.root
    get = code.__getitem__
    for i in ids:
        ts = targets[i]
        wanted = [j for j, c in enumerate(map(get, ts)) if c < 0]
        if len(wanted) > 1:  # the first link of each target, compared case-insensitively
            seen: set[str] = set()
            firsts = []
            for j in wanted:
                k = ts[j].lower()
                if k not in seen:
                    seen.add(k)
                    firsts.append(j)
            wanted = firsts
        pid = g.ids[i]
        try:
            data = read_bytes(prefix + pid)
        except OSError:
            continue
        if data[:3] == b"\xef\xbb\xbf":
            data = data[3:]
        lines = reported_link_lines(data, ts, wanted) if wanted else None
        if lines is None:
            g._resolve_links(i, _link_pairs(g.root, pid), by_text, True)
            continue
        folder = None
        for j, line in zip(wanted, lines, strict=True):
            t = ts[j]
            if code[t] == -1:
                dangling.append(Dangling(pid, t, line))
                sources.append(i)
                continue
            step, cands = g._lookup(t.lower())
            if folder is None:
                folder = g.pages[i].folder
            chosen = g._choose(cands, folder)
            ambiguities.append(Ambiguity(pid, t, line, step or "", g.ids[chosen], tuple(g.ids[c] for c in sorted(cands))))
    return dangling, ambiguities


def _line_numbers(g: Any, targets: list[tuple[str, ...]], on: frozenset[str]) -> Any:
    """Give the lean graph its line-numbered :attr:`dangling` / :attr:`ambiguities` and return
    the suggester for the dangling targets (``None`` when nothing needs one)."""
    if not on & {"link-dangling", "link-structural", "link-ambiguous"}:
        return None  # nothing needs the lines (made on first use if anything asks)
    count = g.ambiguity_count
    _line_numbered(g, g._reread, targets)
    g.ambiguity_count = count  # counted at the scan; the re-read only adds lines
    if "link-dangling" not in on or not g._dangling:
        return None
    return _Suggester.of_graph(g)


def _part_names(rows: list[tuple]) -> tuple[list[str | None], set[str], set[str]]:
    """What the suggestions need to know of a scan part: its pages' frontmatter titles (by
    page), their aliases and the part's link targets (aliases and targets lowercased)."""
    from .graph import _aliases_of
    from .pages import frontmatter_title

    titles = [frontmatter_title(r[0]) if r[0] else None for r in rows]
    aliases = {a.strip().lower() for r in rows if "aliases" in r[0] for a in _aliases_of(r[0])}
    texts: set[str] = set()
    for r in rows:
        texts.update(r[4])
    return titles, aliases, {t.lower().strip() for t in texts}


class _SuggestAhead:
    """The closest-page suggestions, found by the scan's second process while this one builds
    the graph, counts link lines and runs the other checks (the suggestions are the costliest
    part after the scan: ~0.1 s of difflib on a 10k-page wiki with 400 distinct dangling
    targets).

    As soon as its own part is scanned, this process sends the child that part's titles,
    aliases and unresolved targets (with more than two parts: once every part is read); the
    child adds its own, builds the same name index this process would, and suggests a page for
    every target that is no page's title, stem, path or alias.  That set can only be wider
    than the dangling targets (a target may still resolve in a way the child does not check);
    any dangling target the child did not answer (or all of them, if it failed) is suggested
    here, the same way, so the findings never depend on the split."""

    def __init__(self) -> None:
        from .pages import Followup

        self.fu = Followup(self._request, self._serve, self._prepare, early=True)
        self._first: tuple | None = None  # this process: its own part's names, made early
        self._own: tuple | None = None  # the child: its part's names and what it can make alone

    def early(self, rows: list[tuple]) -> None:
        """This process's part is scanned: note its names now, while the child may still be
        sending its rows (so the request is ready the moment they are in)."""
        if self.fu.used:
            self._first = _part_names(rows)

    def _prepare(self, index: int, part: list[str], rows: list[tuple]) -> None:
        """Child, while this process reads its rows: its own names and every page path."""
        ids: list[str] = self.fu.context["ids"]
        known = {pid[:-3].lower() if pid.endswith(".md") else pid.lower() for pid in ids}
        self._own = (_part_names(rows), known)

    @property
    def used(self) -> bool:
        return self.fu.used

    def _request(self, parts: list[list[str]], results: list[list[tuple]]) -> Any:
        titles: list[str | None] = []
        aliases: set[str] = set()
        texts: set[str] = set()
        for k, rows in enumerate(results[:-1]):  # (the last part is the child's own)
            t, a, x = self._first if k == 0 and self._first is not None else _part_names(rows)
            titles.extend(t)
            aliases |= a
            texts |= x
        return len(parts), titles, aliases, texts

    def _serve(self, request: Any, index: int, part: list[str], rows: list[tuple]) -> Any:
        n_parts, titles, aliases, texts = request
        if index != n_parts - 1:
            return None  # only the last part's process knows every part
        ids: list[str] = self.fu.context["ids"]
        if self._own is None:
            self._prepare(index, part, rows)
        (own_titles, own_aliases, own_texts), known = self._own  # type: ignore[misc]
        names = _Suggester.name_index(ids, titles + own_titles)
        known |= aliases
        known |= own_aliases
        sug = _Suggester(names, ids)
        out: dict[str, str | None] = {}
        texts |= own_texts
        texts -= names.keys()  # (most texts are a page's name: set differences in C first)
        texts -= known
        for k in sorted(texts):
            key = k[2:] if k.startswith("./") else k
            key = key.lstrip("/") if "/" in key else key
            if k in names or k in known or key in names or key in known or _is_structural(k):
                continue  # a page's title, stem, path or alias (or not a page link at all)
            out[k] = sug.suggest(k)
        return out

    def collect(self) -> dict[str, str | None]:
        """The child's suggestions (empty when it failed)."""
        answers = self.fu.answers()
        got = answers[-1] if answers else None
        return got if isinstance(got, dict) else {}

    def close(self) -> None:
        self.fu.close()


def _link_findings(g: Any, on: frozenset[str], prepared: dict | None = None) -> list[Finding]:
    """Dangling (with the closest page), structural and ambiguous links.  ``prepared``:
    ``{"suggester": ...}`` made by :func:`_line_numbers` (with what the second process found)."""
    out: list[Finding] = []
    if on & {"link-dangling", "link-structural"}:
        sug = (prepared or {}).get("suggester")
        for d in g.dangling:
            if _is_structural(d.target):
                if "link-structural" in on:
                    out.append(finding("link-structural", d.source, d.line,
                                       f"[[{d.target}]] points at a structural file, not a page", target=d.target))
            elif "link-dangling" in on:
                if sug is None:
                    sug = _Suggester.of_graph(g)
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
    from .graph import degrees
    from .pages import frontmatter_title
    from .schema import page_date

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
        for nodes in g._keys["title"].values():
            if type(nodes) is not list:
                continue
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


# ------------------------------------------------------------------------------ indexes


_MD_HEAD = re.compile(r"^##[ \t]+(sec_\d{3,})[ \t]*$", re.M)
_JSON_KEY = re.compile(r'"(sec_\d{3,})"[ \t]*:')


def _line_map(text: str, pattern: re.Pattern) -> tuple[dict[str, int], list[tuple[str, int]]]:
    first: dict[str, int] = {}
    repeats: list[tuple[str, int]] = []
    for m in pattern.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        if m[1] in first:
            repeats.append((m[1], line))
        else:
            first[m[1]] = line
    return first, repeats


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def check_indexes(root: str, sections: list[tuple[str, SectionInfo]], on: frozenset[str]) -> list[Finding]:
    """Sections found by the scan vs ``index.md`` / ``index.json`` (parsed by
    :mod:`episteme.wikiindex`, so lint agrees with the writer on both formats)."""
    out: list[Finding] = []
    expected: dict[str, tuple[str, SectionInfo]] = {}
    for pid, s in sections:
        prev = expected.get(s.id)
        if prev is not None:
            if "section-duplicate-id" in on:
                out.append(finding("section-duplicate-id", pid, s.line,
                                   f"{s.id} is also used on {prev[0]} line {prev[1].line}", section=s.id))
            continue
        expected[s.id] = (pid, s)
    md_text = _read(os.path.join(root, "index.md"))
    json_text = _read(os.path.join(root, "index.json"))
    if not expected and md_text is None and json_text is None:
        return out  # not an episteme wiki (or an empty one): nothing to compare
    from .errors import EpistemeError
    from .wikiindex import INDEX_JSON, INDEX_MD, IndexEntry, parse_index_json, parse_index_md
    from .wikiwrite import pending_write

    pending = pending_write(root)
    if pending is not None and "index-interrupted-write" in on:
        out.append(finding("index-interrupted-write", ".episteme/pending-write.json", None,
                           "a write did not finish; index.md / index.json may be stale"))
    md = parse_index_md(md_text) if md_text is not None else None
    md_lines, md_repeats = _line_map(md_text or "", _MD_HEAD)
    if "index-malformed" in on:
        for sid, line in md_repeats:
            out.append(finding("index-malformed", INDEX_MD, line, f"{sid} is listed twice in index.md", section=sid))
    ijson: dict[str, list[str]] | None = None
    json_lines: dict[str, int] = {}
    if json_text is not None:
        try:
            ijson = parse_index_json(json_text)
            json_lines, _ = _line_map(json_text, _JSON_KEY)
        except EpistemeError as e:
            if "index-malformed" in on:
                out.append(finding("index-malformed", INDEX_JSON, _first_line_number(e.message), e.message))
    for sid, (pid, s) in expected.items():
        want = IndexEntry(sid, " ".join(s.description.split()), pid, list(s.sources))
        missing = []
        if md is None or sid not in md.entries:
            missing.append("index.md" + (" (missing file)" if md is None else ""))
        elif md.entries[sid] != want and "index-out-of-date" in on:
            got = md.entries[sid]
            what = [k for k in ("description", "page", "sources") if getattr(got, k) != getattr(want, k)]
            out.append(finding("index-out-of-date", INDEX_MD, md_lines.get(sid),
                               f"{sid}: {', '.join(what)} {'differs' if len(what) == 1 else 'differ'} from {pid} line {s.line}", section=sid))
        if json_text is not None and ijson is None:
            pass  # unreadable: reported as index-malformed
        elif ijson is None or sid not in ijson:
            missing.append("index.json" + (" (missing file)" if ijson is None else ""))
        elif ijson[sid] != want.sources and "index-out-of-date" in on:
            out.append(finding("index-out-of-date", INDEX_JSON, json_lines.get(sid),
                               f"{sid}: index.json has sources {ijson[sid]}, {pid} has {want.sources}", section=sid))
        if missing and "section-not-in-index" in on:
            out.append(finding("section-not-in-index", pid, s.line, f"{sid} is not in {' nor '.join(missing)}", section=sid))
    if md is not None and "index-stale-entry" in on:
        for sid in md.entries:
            if sid not in expected:
                out.append(finding("index-stale-entry", INDEX_MD, md_lines.get(sid), f"{sid} is listed but no page has it",
                                   section=sid))
    if ijson is not None and "index-json-unknown-section" in on:
        for sid in ijson:
            if sid not in expected:
                out.append(finding("index-json-unknown-section", INDEX_JSON, json_lines.get(sid),
                                   f"{sid} is listed but no page has it", section=sid))
    return out


def _first_line_number(message: str) -> int | None:
    m = re.search(r"line (\d+)", message)
    return int(m[1]) if m else None


def _log_findings(root: str) -> list[Finding]:
    text = _read(os.path.join(root, "log.md"))
    if text is None:
        return []
    from .wikiindex import LOG_MD, parse_log

    _, problems = parse_log(text)
    out = []
    for p in problems:
        m = _LINE_IN_MESSAGE.search(p)
        msg = p.split(": ", 1)[1] if ": " in p else p
        out.append(finding("log-malformed", LOG_MD, int(m[1]) if m else None, msg))
    return out


# ------------------------------------------------------------------------------ fixes

INDEX_FIX_RULES = frozenset({"section-not-in-index", "index-stale-entry", "index-json-unknown-section",
                             "index-out-of-date", "index-malformed", "index-interrupted-write"})


def apply_fixes(wiki: str | os.PathLike, report: LintReport, *, settings: Any = None) -> list[dict[str, Any]]:
    """Apply the safe repairs for ``report``'s findings; returns one record per change.

    Safe means mechanical and loss-free: the indexes are regenerated from the pages (they are
    derived data), a date line of a page's frontmatter is rewritten in place (nothing else in
    the file changes, byte for byte), missing passage vectors are embedded again.  Nothing is
    deleted from a page.  Everything happens under the wiki lock with atomic writes."""
    from .fsutil import wiki_lock

    root = os.fspath(wiki)
    fixes: list[dict[str, Any]] = []
    dates = [f for f in report.findings if f.rule == "fm-date" and f.fixable]
    indexes = any(f.rule in INDEX_FIX_RULES for f in report.findings)
    vec = [f for f in report.findings if f.rule == "store-vector-count" and f.fixable]
    if not (dates or indexes or vec):
        return fixes  # nothing to do: do not even create the lock file in someone's vault
    with wiki_lock(root):
        fixes.extend(_fix_dates(root, dates))
        if indexes:
            fixes.extend(_fix_indexes(root))
        if vec:
            from .lint_stores import fix_vectors

            fixes.extend(fix_vectors(root, settings, vec))
    return fixes


def _fix_indexes(root: str) -> list[dict[str, Any]]:
    from .wikiwrite import rebuild_indexes

    res = rebuild_indexes(root)
    out = []
    for sid in res["added"]:
        out.append({"fix": "index-add", "file": "index.md, index.json", "section": sid,
                    "message": f"added {sid} to the indexes"})
    for sid in res["removed"]:
        out.append({"fix": "index-drop", "file": "index.md, index.json", "section": sid,
                    "message": f"dropped {sid} (no page has it)"})
    for sid in res["updated"]:
        out.append({"fix": "index-update", "file": "index.md, index.json", "section": sid,
                    "message": f"regenerated the entry of {sid} from its page"})
    if res["index_json_was_invalid"]:
        out.append({"fix": "index-rewrite", "file": "index.json", "message": "rewrote the unreadable index.json"})
    if res["interrupted_write"]:
        out.append({"fix": "interrupted-write", "file": ".episteme/pending-write.json",
                    "message": "cleared the interrupted-write marker after regenerating the indexes"})
    if not out and (res["index_json_changed"] or res["index_md_changed"]):
        changed = [n for n, c in (("index.md", res["index_md_changed"]), ("index.json", res["index_json_changed"])) if c]
        out.append({"fix": "index-rewrite", "file": ", ".join(changed), "message": "regenerated from the pages"})
    return out


_VALUE_LINE = re.compile(rb"^(?P<key>[^\s#:][^:\r\n]*?)(?P<sep>[ \t]*:[ \t]*)(?P<value>.*?)(?P<tail>[ \t]+#.*)?(?P<eol>\r?)$")


def _fix_dates(root: str, items: list[Finding]) -> list[dict[str, Any]]:
    """Rewrite each flagged date in place: only the value of that one line changes."""
    from .fsutil import atomic_write_bytes

    by_file: dict[str, list[Finding]] = {}
    for f in items:
        by_file.setdefault(f.file, []).append(f)
    out = []
    for rel, fs in sorted(by_file.items()):
        path = os.path.join(root, rel)
        with open(path, "rb") as fh:
            data = fh.read()
        lines = data.split(b"\n")
        changed = False
        for f in fs:
            i = (f.line or 0) - 1
            if not 0 < i < len(lines):
                continue
            m = _VALUE_LINE.match(lines[i])
            want_key = str(f.data.get("field", "")).encode("utf-8") if f.data else b""
            if not m or m["key"].strip() != want_key:
                continue
            old = m["value"].decode("utf-8", "replace")
            new = normalize_date_text(old)
            if new is None or new != f.data.get("fix_to"):
                continue  # the file changed since the scan, or the value spans lines
            lines[i] = m["key"] + m["sep"] + new.encode() + (m["tail"] or b"") + m["eol"]
            changed = True
            out.append({"fix": "date", "file": rel, "line": f.line, "field": f.data.get("field"),
                        "message": f"{f.data.get('field')}: {old.strip()} -> {new}"})
        if changed:
            atomic_write_bytes(path, b"\n".join(lines))
    return out
