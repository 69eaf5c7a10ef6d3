"""wiki-lint, part 1: the rule registry and the checks that need one page at a time.

Why split this way: a lint run must read every page exactly once (it is the hot path, the
same cost as a graph query).  The per-page checks below therefore run inside the scan, right
after :func:`episteme.pages.parse_page` and while the file's bytes are still in hand (in the
scan's worker processes on big wikis); only what the cross-page rules need (the
:class:`~episteme.pages.Page`, its sections, a few key lines) travels back to the caller.

Standard library + PyYAML only.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections import namedtuple
from json.encoder import encode_basestring as _json_str  # (C; what the encoder uses)

from .pages import (
    _LINK_HEAD,
    _LINK_TEXT,
    _NORMALIZED,
    NO_LINKS,
    Page,
    Record,
    _fenced_regions,
    _frontmatter_bounds,
    _normalize_raw,
    lean_page,
    map_pages,
    parse_page,
    read_bytes,
)
from .schema import TIERS

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing and dataclasses cost the command start-up time
    from typing import Any

SEVERITIES = ("error", "warning", "info")


Rule = namedtuple("Rule", ["severity", "summary", "fix"], defaults=[None])
Rule.__doc__ = "A rule's default severity, one-line summary and what ``--fix`` does about it (or ``None``)."


#: Every rule id with its default severity.  Ids are stable: CI configs and SCHEMA.md name them.
RULES: dict[str, Rule] = {
    # links and pages
    "link-dangling": Rule("error", "a [[link]] resolves to no page (closest page suggested)"),
    "link-ambiguous": Rule("warning", "a [[link]] matches several pages; a tie-break chose one"),
    "link-structural": Rule("warning", "a [[link]] points at index.md, log.md, SCHEMA.md or raw/"),
    "page-orphan": Rule("error", "a page with no links in and no links out"),
    "page-leaf": Rule("info", "a page with links in but none out (a dead end)"),
    "page-stale": Rule("info", "a page whose memory tier (SCHEMA.md memory_tiers) is archived or frozen"),
    "title-duplicate": Rule("warning", "two pages share a frontmatter title"),
    # frontmatter
    "fm-yaml": Rule("error", "frontmatter is not valid YAML or not a mapping"),
    "fm-missing-required": Rule("error", "a field SCHEMA.md marks required is missing or empty"),
    "fm-unknown-field": Rule("warning", "a field SCHEMA.md does not define"),
    "fm-type": Rule("error", "a field's value has the wrong type for SCHEMA.md"),
    "fm-value": Rule("error", "a field's value is not one of the values SCHEMA.md allows"),
    "fm-date": Rule("error", "a date field that is not a YYYY-MM-DD date",
                    "rewrites an unambiguous date (2025/3/1, '2025-03-01', 1 March 2025) as YYYY-MM-DD on that line only"),
    "fm-tier-override": Rule("error", "tier_override is not pin, active, archived or frozen"),
    "schema-invalid": Rule("error", "SCHEMA.md has an unreadable yaml block or setting"),
    # sections and indexes
    "section-marker-invalid": Rule("error", "a <!-- section ... --> marker line that does not parse"),
    "section-duplicate-id": Rule("error", "a section id used twice"),
    "section-not-in-index": Rule("error", "a section missing from index.md and/or index.json",
                                 "regenerates index.md and index.json from the pages"),
    "index-stale-entry": Rule("error", "an index.md entry for a section no page has",
                              "drops the entry (regenerates index.md from the pages)"),
    "index-json-unknown-section": Rule("error", "an index.json key for a section no page has",
                                       "drops the key (regenerates index.json from the pages)"),
    "index-out-of-date": Rule("error", "an index entry's description, page or sources differ from the page",
                              "regenerates the entry from the page"),
    "index-malformed": Rule("error", "index.json is not valid JSON, or index.md lists a section twice",
                            "regenerates both indexes from the pages"),
    "index-interrupted-write": Rule("warning", "a write did not finish (.episteme/pending-write.json)",
                                    "regenerates both indexes and clears the marker"),
    "section-no-sources": Rule("error", "a section whose marker lists no source papers"),
    "section-empty": Rule("warning", "a section with a heading but no body"),
    "log-malformed": Rule("warning", "a log.md entry heading not of the form ## [YYYY-MM-DD] op | subject"),
    # stores (--stores)
    "store-unavailable": Rule("error", "the SQLite store or Chroma cannot be opened"),
    "store-raw-missing": Rule("error", "a paper in SQLite whose raw/ file is gone"),
    "store-row-missing": Rule("error", "a raw/ file that SQLite does not know (not ingested)"),
    "store-sha-mismatch": Rule("error", "a raw/ file whose sha256 differs from the one ingested"),
    "store-vector-count": Rule("error", "a paper whose passage vectors in Chroma do not match SQLite",
                               "embeds and adds the passages that have no vector"),
    "store-model-mismatch": Rule("error", "vectors or papers recorded with another embedding model than configured"),
    "store-unknown-source": Rule("error", "an index.json source that is not a paper in SQLite"),
    # claims (--claims; episteme.lint_claims)
    "claim-contradicted": Rule("error", "a sentence of a section that its own source papers contradict"),
    "claim-unsupported": Rule("warning", "a sentence of a section that no passage of its source papers states"),
    "claim-misquoted": Rule("warning", "a quote not found verbatim in the section's sources"),
}

STORE_RULES = frozenset(r for r in RULES if r.startswith("store-"))
CLAIM_RULES = frozenset(r for r in RULES if r.startswith("claim-"))
TIER_VALUES = ("pin", *TIERS)
#: Date fields checked when the wiki has no SCHEMA.md field definitions.
DEFAULT_DATE_FIELDS = ("created", "updated", "ingested_at", "published_at")


class Finding(Record):
    """One problem.  ``file`` is relative to the wiki root (POSIX); ``line`` is 1-based, or
    ``None`` for files without lines (a PDF, a database).  ``data`` carries rule-specific
    details (a suggestion, what a fix would write)."""

    __slots__ = ("rule", "severity", "file", "line", "message", "data")

    def __init__(self, rule: str, severity: str, file: str, line: int | None, message: str,
                 data: dict[str, Any] | None = None):
        self.rule = rule
        self.severity = severity
        self.file = file
        self.line = line
        self.message = message
        self.data = data

    @property
    def fixable(self) -> bool:
        """Whether ``--fix`` repairs this finding (a rule may fix only some of its cases)."""
        rule = RULES.get(self.rule)
        if rule is None or rule.fix is None:
            return False
        if self.rule == "fm-date":
            return bool(self.data and self.data.get("fix_to"))
        if self.rule == "store-vector-count":
            return bool(self.data and self.data.get("_missing_ids"))
        return True

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "message": self.message,
            "fixable": self.fixable,
        }
        if self.data:
            d.update({k: v for k, v in self.data.items() if not k.startswith("_")})
        return d

    def to_json(self, encode: Any) -> str:
        """``encode(self.to_dict())`` for a ``json.JSONEncoder(ensure_ascii=False).encode``,
        written directly: a report of thousands of findings spent more time making dicts
        for the encoder than encoding them."""
        q = _json_str
        line = "null" if self.line is None else str(int(self.line))
        out = (f'{{"rule": {q(self.rule)}, "severity": {q(self.severity)}, "file": {q(self.file)}, '
               f'"line": {line}, "message": {q(self.message)}, "fixable": {"true" if self.fixable else "false"}')
        if self.data:
            for k, v in self.data.items():
                if k.startswith("_"):
                    continue
                val = q(v) if type(v) is str else "null" if v is None else encode(v)
                out += f", {q(k)}: {val}"
        return out + "}"


def finding(rule: str, file: str, line: int | None, message: str, **data: Any) -> Finding:
    return Finding(rule, RULES[rule].severity, file, line, message, data or None)


# ----------------------------------------------------------------------------------- dates

_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"], 1)}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_YMD = re.compile(r"(\d{4})([-/.])(\d{1,2})\2(\d{1,2})\Z")
_DMY_NAME = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]+)\.?,?\s+(\d{4})\Z")
_MDY_NAME = re.compile(r"([A-Za-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\Z")


def normalize_date_text(text: str) -> str | None:
    """``YYYY-MM-DD`` for a date written in an unambiguous other way, else ``None``.

    Accepted: ``2025-3-1``, ``2025/03/01``, ``2025.03.01``, ``1 March 2025``,
    ``March 1, 2025`` (month names or three-letter abbreviations), each optionally quoted.
    Never guessed: ``01/03/2025`` (day-first or month-first?) and anything with a time."""
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        s = s[1:-1].strip()
    y = mo = d = None
    m = _YMD.match(s)
    if m:
        y, mo, d = int(m[1]), int(m[3]), int(m[4])
    else:
        m = _DMY_NAME.match(s)
        if m and m[2].lower() in _MONTHS:
            y, mo, d = int(m[3]), _MONTHS[m[2].lower()], int(m[1])
        else:
            m = _MDY_NAME.match(s)
            if m and m[1].lower() in _MONTHS:
                y, mo, d = int(m[3]), _MONTHS[m[1].lower()], int(m[2])
    if y is None:
        return None
    try:
        return _dt.date(y, mo, d).isoformat()
    except ValueError:
        return None


def _readable_date(value: Any) -> bool:
    from .schema import page_date

    return page_date(value) is not None


# ------------------------------------------------------------------------ per-page context


class PageRules(Record):
    """What the per-page checks need to know."""

    __slots__ = ("enabled", "fields", "has_fields", "date_fields", "key_lines")

    def __init__(self, enabled: frozenset[str], fields: dict[str, dict[str, Any]] | None = None,
                 has_fields: bool = False, date_fields: tuple[str, ...] = DEFAULT_DATE_FIELDS,
                 key_lines: tuple[str, ...] = ("title",)):  # keys whose line the cross-page rules may cite
        self.enabled = enabled
        self.fields = {} if fields is None else fields
        self.has_fields = has_fields
        self.date_fields = date_fields
        self.key_lines = key_lines


class SectionInfo(Record):
    __slots__ = ("id", "line", "description", "sources")

    def __init__(self, id: str, line: int, description: str, sources: list[str]):  # noqa: A002
        self.id = id
        self.line = line
        self.description = description
        self.sources = sources


class PageResult(Record):
    __slots__ = ("page", "sections", "findings", "key_lines")

    def __init__(self, page: Page, sections: list[SectionInfo], findings: list[Finding], key_lines: dict[str, int]):
        self.page = page
        self.sections = sections
        self.findings = findings
        self.key_lines = key_lines


_KEY_RE = re.compile(rb"^([^\s#:'\"\-][^:\n]*?)[ \t]*:(?:[ \t]|$)", re.M)


def frontmatter_key_lines(data: bytes) -> dict[str, int]:
    """Top-level frontmatter keys -> 1-based file line (first occurrence)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.startswith(b"---"):
        return {}
    end = re.compile(rb"^---[ \t\r]*$", re.M).search(data, 3)
    block_end = end.start() if end else len(data)
    out: dict[str, int] = {}
    for m in _KEY_RE.finditer(data, 0, block_end):
        if m.start() == 0:
            continue  # the opening fence line
        key = m[1].decode("utf-8", "replace").strip()
        out.setdefault(key, data.count(b"\n", 0, m.start()) + 1)
    return out


_TYPE_CHECKS = {
    "string": lambda v: not isinstance(v, (list, dict)),
    "str": lambda v: not isinstance(v, (list, dict)),
    "text": lambda v: not isinstance(v, (list, dict)),
    "list": lambda v: isinstance(v, list),
    "array": lambda v: isinstance(v, list),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def _type_name(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, _dt.date):
        return "date"
    return {int: "number", float: "number", str: "string", list: "list", dict: "mapping"}.get(type(v), type(v).__name__)


def check_frontmatter(page: Page, rules: PageRules, lines: Any) -> list[Finding]:
    """fm-* rules for one page (``lines.get(key, default)`` = the key's line, see
    :func:`frontmatter_key_lines`)."""
    out: list[Finding] = []
    on = rules.enabled
    pid = page.id
    if page.fm_error:
        if "fm-yaml" in on:
            out.append(finding("fm-yaml", pid, page.fm_error_line or 1, page.fm_error))
        return out  # the properties are unknown: checking them would only add noise
    props = page.props

    def at(key: str) -> int:
        return lines.get(key, 1)

    if rules.has_fields:
        for name, spec in rules.fields.items():
            if spec.get("required") is True and "fm-missing-required" in on:
                v = props.get(name)
                if v is None or (isinstance(v, (str, list, dict)) and not v):
                    what = "is empty" if name in props else "is missing"
                    out.append(finding("fm-missing-required", pid, at(name) if name in props else 1,
                                       f"required field '{name}' {what}", field=name))
        if "fm-unknown-field" in on:
            for key in props:
                if key not in rules.fields:
                    out.append(finding("fm-unknown-field", pid, at(str(key)),
                                       f"field '{key}' is not defined in SCHEMA.md", field=str(key)))
        for key, v in props.items():
            spec = rules.fields.get(key)
            if spec is None or v is None or key == "tier_override":
                continue
            typ = str(spec.get("type", "")).strip().lower()
            if typ == "date":
                continue  # fm-date owns date fields
            check = _TYPE_CHECKS.get(typ)
            if check is not None and "fm-type" in on and not check(v):
                out.append(finding("fm-type", pid, at(key), f"'{key}' should be a {typ}, not a {_type_name(v)}",
                                   field=key, expected=typ))
                continue
            allowed = spec.get("values")
            if isinstance(allowed, list) and allowed and "fm-value" in on:
                items = v if isinstance(v, list) else [v]
                allowed_s = {str(a) for a in allowed}
                bad = [str(x) for x in items if str(x) not in allowed_s]
                if bad:
                    out.append(finding("fm-value", pid, at(key),
                                       f"'{key}' has {', '.join(repr(b) for b in bad)}; allowed: {', '.join(map(str, allowed))}",
                                       field=key))
    if "fm-date" in on:
        for key in rules.date_fields:
            if key in props:
                f = _check_date(pid, key, props[key], at, strict=rules.has_fields)
                if f is not None:
                    out.append(f)
    if "fm-tier-override" in on and "tier_override" in props:
        v = props["tier_override"]
        if v is not None and (not isinstance(v, str) or v.strip().lower() not in TIER_VALUES):
            out.append(finding("fm-tier-override", pid, at("tier_override"),
                               f"tier_override is {v!r}; use one of: {', '.join(TIER_VALUES)}"))
    return out


def _check_date(pid: str, key: str, v: Any, at: Any, *, strict: bool) -> Finding | None:
    """``strict`` (the schema declares the field a date): only real YAML dates pass; without a
    schema, anything :func:`episteme.schema.page_date` reads (epoch numbers, datetime text)
    passes and only unreadable or oddly written dates are reported.  ``at(key)`` gives the
    line, asked only when there is a finding (it costs a pass over the frontmatter)."""
    if v is None or isinstance(v, _dt.date):
        return None
    if isinstance(v, str):
        fixed = normalize_date_text(v)
        if fixed is not None:
            if fixed == v.strip():
                if not strict:
                    return None
                return finding("fm-date", pid, at(key), f"'{key}' is the text {v!r}, not a YAML date (--fix unquotes it)",
                               field=key, fix_to=fixed)
            return finding("fm-date", pid, at(key), f"'{key}: {v}' is not written as YYYY-MM-DD (--fix writes {fixed})",
                           field=key, fix_to=fixed)
        if not strict and _readable_date(v):
            return None
        return finding("fm-date", pid, at(key), f"'{key}: {v}' is not a date (write YYYY-MM-DD)", field=key)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not strict and _readable_date(v):
            return None
        return finding("fm-date", pid, at(key), f"'{key}: {v}' is a number, not a date (write YYYY-MM-DD)", field=key)
    return finding("fm-date", pid, at(key), f"'{key}' is a {_type_name(v)}, not a date", field=key)


def check_sections(page_id: str, data: bytes, enabled: frozenset[str]) -> tuple[list[SectionInfo], list[Finding]]:
    """Parse the section markers of one page (only pages that contain one pay for this)."""
    from .sections import SectionFormatError
    from .sections import parse_page as parse_sections

    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    out: list[Finding] = []
    try:
        parsed = parse_sections(text, strict=True)
    except SectionFormatError as e:
        if "section-marker-invalid" in enabled:
            out.append(finding("section-marker-invalid", page_id, e.line, f"broken section marker: {str(e).split(': ', 1)[-1]}"))
        parsed = parse_sections(text, strict=False)
    infos = []
    for s in parsed.sections:
        infos.append(SectionInfo(s.id, s.line, s.description, list(s.sources)))
        if not s.sources and "section-no-sources" in enabled:
            out.append(finding("section-no-sources", page_id, s.line, f"{s.id} lists no source papers", section=s.id))
        if not s.body.strip() and "section-empty" in enabled:
            out.append(finding("section-empty", page_id, s.line, f"{s.id} ({s.title or 'untitled'}) has no body", section=s.id))
    return infos, out


_FM_RULES = frozenset({"fm-yaml", "fm-missing-required", "fm-unknown-field", "fm-type", "fm-value", "fm-date",
                       "fm-tier-override"})


class _KeyLines:
    """Frontmatter key -> line, computed only when a finding needs a line (most pages have none)."""

    __slots__ = ("data", "_map")

    def __init__(self, data: bytes):
        self.data = data
        self._map: dict[str, int] | None = None

    def get(self, key: str, default: int = 1) -> int:
        if self._map is None:
            self._map = frontmatter_key_lines(self.data)
        return self._map.get(key, default)

    def __contains__(self, key: str) -> bool:
        if self._map is None:
            self._map = frontmatter_key_lines(self.data)
        return key in self._map


def _quick_key_line(data: bytes, key: str) -> int | None:
    """Line of ``key:`` at the start of a frontmatter line (cheap: one bounded ``find``)."""
    end = data.find(b"\n---", 3)
    pos = data.find(b"\n" + key.encode("utf-8") + b":", 0, end if end > 0 else len(data))
    return None if pos < 0 else data.count(b"\n", 0, pos) + 2


def lint_page(root: str, page_id: str, rules: PageRules) -> PageResult:
    """Read one page once and run every per-page check on it."""
    path = os.path.join(root, page_id)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        page = Page(page_id, path, {}, [], f"unreadable: {e.strerror}", None)
        return PageResult(page, [], [finding("fm-yaml", page_id, None, f"cannot read the page: {e.strerror}")], {})
    page = parse_page(page_id, path, data)
    findings: list[Finding] = []
    keep: dict[str, int] = {}
    if page.has_frontmatter:
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        if rules.enabled & _FM_RULES:
            findings = check_frontmatter(page, rules, _KeyLines(data))
        props = page.props
        for k in rules.key_lines:
            if k in props:
                line = _quick_key_line(data, k)
                if line is not None:
                    keep[k] = line
    sections: list[SectionInfo] = []
    if b"<!-- section" in data:
        sections, more = check_sections(page_id, data, rules.enabled)
        findings.extend(more)
    return PageResult(page, sections, findings, keep)


def lean_row(root: str, page_id: str, rules: PageRules, fm_on: bool) -> tuple:
    """One page, read once: its :func:`episteme.pages.lean_page` tuple (what the link graph
    needs: no line numbers) plus ``(sections, findings)`` of the per-page checks, or ``None``
    when it has neither (most pages).  Link lines are found later, and only for the links a
    finding reports (:func:`reported_link_lines`)."""
    try:
        data = read_bytes(f"{root}/{page_id}")
    except OSError as e:
        return ({}, f"unreadable: {e.strerror}", None, False, (),
                ([], [finding("fm-yaml", page_id, None, f"cannot read the page: {e.strerror}")]))
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    row = lean_page(data)
    findings: list[Finding] = []
    if fm_on and row[3] and (row[1] or rules.has_fields or _fm_suspect(row[0], rules.date_fields)):
        page = Page(page_id, f"{root}/{page_id}", row[0], NO_LINKS, row[1], row[2], True)
        findings = check_frontmatter(page, rules, _KeyLines(data))
    sections: list[SectionInfo] = []
    if b"<!-- section" in data:
        sections, more = check_sections(page_id, data, rules.enabled)
        findings.extend(more)
    return (*row, (sections, findings) if sections or findings else None)


_BLANK = bytes(10 if i == 10 else 32 for i in range(256))  # every byte to a space but newlines


def reported_link_lines(data: bytes, targets: tuple[str, ...], wanted: list[int]) -> list[int] | None:
    """The lines of links ``targets[j]`` for ``j`` in ``wanted`` (ascending), as
    :func:`episteme.pages.parse_page` counts them, in a page's bytes (``data``, no BOM), or
    ``None`` when this quick way cannot be sure (the caller then counts every line).

    ``targets`` is what the scan found in this page.  One ``findall`` gives every link's text,
    code or not; when the links that name a page are exactly as many as ``targets``, none is
    in code (the scan leaves those out) and they are ``targets`` in order (links in fenced code
    are blanked out first when that is why the counts differ).  Each wanted link is then
    found by its text (``find``, checked by a match there) after the previous one.  A page
    with a link in inline code, or that changed since the scan, goes the slow way."""
    start, first = 0, 1
    if data[:3] == b"---":
        b = _frontmatter_bounds(data)
        if b is not None and b[0] >= 0:
            start, first = b[2], 3 + data.count(b"\n", b[0], b[1])
    if start and data[start - 1] == 33:  # "!" right before the body: not an embed there
        data, start = data[start:], 0
    # the body is searched in place (from ``start``): no copy of it per page
    d = data.replace(b"![[", b"!\0[") if b"!" in data and b"![[" in data else data
    pat = _LINK_TEXT if d.find(b"\\", start) >= 0 else _LINK_HEAD
    get = _NORMALIZED.get
    find, count, match, findall = d.find, d.count, pat.match, pat.findall
    raws = findall(d, start)
    where = None  # raw index of each target, when some link text names no page ([[#h]], [[|x]])
    if len(raws) != len(targets):
        where = [r for r, raw in enumerate(raws) if (get(raw) if get(raw) is not None else _normalize_raw(raw))]
        if len(where) != len(targets) and (b"```" in d or b"~~~" in d):
            # links in fenced code: blank the fences (newlines kept, so lines stay) and look again
            parts, prev = [d[:start]], start
            for a, b in _fenced_regions(d[start:]):
                parts.append(d[prev : start + a])
                parts.append(d[start + a : start + b].translate(_BLANK))
                prev = start + b
            parts.append(d[prev:])
            d = b"".join(parts)
            find, count, match, findall = d.find, d.count, pat.match, pat.findall
            raws = findall(d, start)
            where = [r for r, raw in enumerate(raws) if (get(raw) if get(raw) is not None else _normalize_raw(raw))]
        if len(where) != len(targets):
            return None  # links in inline code, or the page changed since the scan
    out: list[int] = []
    pos, line, last = start, first, start  # where the next search starts; the line at ``last``
    for j in wanted:
        r = j if where is None else where[j]
        raw = raws[r]
        got = get(raw)
        if (got if got is not None else _normalize_raw(raw)) != targets[j]:
            return None  # the page changed since the scan
        needle = b"[[" + raw
        at = find(needle, pos)
        while at >= 0:
            m = match(d, at)
            if m is not None and m[1] == raw:
                break
            at = find(needle, at + 1)
        if at < 0:
            return None
        # no link before this one has this text (it would name the same page, and j is the
        # first link to it), and a match cannot start inside another (no "[" in link text):
        # the first match with this text after the last one found is the one wanted
        line += count(b"\n", last, at)
        last = at
        out.append(line)
        pos = m.end()  # type: ignore[union-attr]
    return out


def _fm_suspect(props: dict[str, Any], date_fields: tuple[str, ...]) -> bool:
    """Whether a page without a frontmatter error may have an fm-* finding when SCHEMA.md
    defines no fields: only a date field that is not already a date, or a ``tier_override``,
    can (a cheap test that spares most pages the full check)."""
    if "tier_override" in props:
        return True
    date = _dt.date
    for k in date_fields:
        v = props.get(k)
        if v is not None and type(v) is not date:
            return True
    return False


def page_key_line(root: str, page_id: str, key: str) -> int:
    """Line of the top-level frontmatter ``key`` (1 when not found): re-reads the page, so
    that the scan counts no lines for the many pages that are never cited."""
    from .pages import read_bytes

    try:
        data = read_bytes(os.path.join(root, page_id))
    except OSError:
        return 1
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    line = _quick_key_line(data, key)
    return 1 if line is None else line


def scan_lean(root: str, rules: PageRules, *, jobs: int | None = None, meanwhile: Any = None,
              followup: Any = None) -> tuple[list[str], list[tuple]]:
    """``(ids, rows)``: every page read once, with the per-page checks run while its bytes are
    in hand (see :func:`lean_row`); sorted by id.  The same files and process split as
    :func:`episteme.pages.scan_wiki_lean` (a forked second process on big wikis);
    ``meanwhile(first_ids, first_rows)`` as there.  ``followup``: a
    :class:`episteme.pages.Followup` for the second process, used only when one runs
    (``followup.used`` says so); its ``context`` gets ``ids`` before the fork."""
    fm_on = bool(rules.enabled & _FM_RULES)

    def work(root: str, part: list[str]) -> list[tuple]:
        return [lean_row(root, pid, rules, fm_on) for pid in part]

    return map_pages(root, work, jobs=jobs, meanwhile=meanwhile, followup=followup)
