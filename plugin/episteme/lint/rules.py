"""wiki-lint, part 1: the rule registry and the checks that need one page at a time.

Why split this way: a lint run must read every page exactly once (it is the hot path, the
same cost as a graph query).  The per-page checks below therefore run inside the scan, right
after :func:`episteme.wiki.page.parse_page` and while the file's bytes are still in hand (in the
scan's worker processes on big wikis); only what the cross-page rules need (the
:class:`~episteme.wiki.page.Page`, its sections, a few key lines) travels back to the caller.

Standard library + PyYAML only.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections import namedtuple
from json.encoder import encode_basestring as _json_str  # (C; what the encoder uses)
from typing import Any

from ..wiki.frontmatter import NEVER_CLOSED, frontmatter_bounds
from ..wiki.page import Page
from ..wiki.schema import TIERS

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
    "page-unreadable": Rule("error", "a .md entry not read: not a regular file, a symlink leading outside the wiki, "
                                     "or larger than the page size cap"),
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
    "section-duplicate": Rule("error", "a page holds the same section twice (same heading and sources)"),
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
    "stale-temp-file": Rule("warning", "a temp file a killed or failed write left (.<name>.*.tmp)",
                            "removes it"),
    "section-no-sources": Rule("error", "a section whose marker lists no source papers"),
    "section-empty": Rule("warning", "a section with a heading but no body"),
    "log-malformed": Rule("warning", "a log.md entry heading not of the form ## [YYYY-MM-DD] op | subject"),
    # stores (--stores)
    "store-unavailable": Rule("error", "the SQLite store or Chroma cannot be opened"),
    "store-read-only": Rule("info", "the stores are read-only: Chroma was checked through a temporary copy"),
    "store-raw-missing": Rule("error", "a paper in SQLite whose raw/ file is gone"),
    "store-row-missing": Rule("error", "a raw/ file that SQLite does not know (not ingested)"),
    "store-sha-mismatch": Rule("error", "a raw/ file whose sha256 differs from the one ingested"),
    "store-vector-count": Rule("error", "a paper whose passage vectors in Chroma do not match SQLite",
                               "embeds and adds the passages that have no vector"),
    "store-model-mismatch": Rule("error", "vectors or papers recorded with another embedding model than configured"),
    "store-unknown-source": Rule("error", "an index.json source that is not a paper in SQLite"),
    # claims (--claims; episteme.lint.claims_run)
    "claim-contradicted": Rule("error", "a sentence of a section that its own source papers contradict"),
    "claim-check": Rule("warning", "a sentence its source papers may contradict, where the rules could not "
                                   "align the two with confidence: check it (never an error)"),
    "claim-unsupported": Rule("warning", "a sentence of a section that no passage of its source papers states"),
    "claim-misquoted": Rule("warning", "a quote not found verbatim in the section's sources"),
}

STORE_RULES = frozenset(r for r in RULES if r.startswith("store-"))
CLAIM_RULES = frozenset(r for r in RULES if r.startswith("claim-"))
TIER_VALUES = ("pin", *TIERS)
#: Date fields checked when the wiki has no SCHEMA.md field definitions.
DEFAULT_DATE_FIELDS = ("created", "updated", "ingested_at", "published_at")


class Finding:
    """One problem.  ``file`` is relative to the wiki root (POSIX); ``line`` is 1-based, or
    ``None`` for files without lines (a PDF, a database).  ``data`` carries rule-specific
    details (a suggestion, what a fix would write).

    A plain slotted class, like this module's other records, not a dataclass: ``dataclasses``
    imports ``inspect``, about 8 ms of every lint run's start (see
    :class:`episteme.wiki.page.Page`)."""

    __slots__ = ("rule", "severity", "file", "line", "message", "data")

    def __init__(self, rule: str, severity: str, file: str, line: int | None, message: str,
                 data: dict[str, Any] | None = None):
        self.rule, self.severity, self.file = rule, severity, file
        self.line, self.message, self.data = line, message, data

    def _key(self) -> tuple:
        return (self.rule, self.severity, self.file, self.line, self.message, self.data)

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, Finding) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  (mutable)

    def __repr__(self) -> str:
        return ("Finding(rule={!r}, severity={!r}, file={!r}, line={!r}, message={!r}, data={!r})"
                .format(*self._key()))

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
    from ..wiki.schema import page_date

    return page_date(value) is not None


# ------------------------------------------------------------------------ per-page context


class PageRules:
    """What the per-page checks need to know: the enabled rules, SCHEMA.md's field
    definitions (``has_fields``: it defines any), the date fields."""

    __slots__ = ("enabled", "fields", "has_fields", "date_fields")

    def __init__(self, enabled: frozenset[str], fields: dict[str, dict[str, Any]] | None = None,
                 has_fields: bool = False, date_fields: tuple[str, ...] = DEFAULT_DATE_FIELDS):
        self.enabled = enabled
        self.fields = {} if fields is None else fields
        self.has_fields = has_fields
        self.date_fields = date_fields


SectionInfo = namedtuple("SectionInfo", ["id", "line", "description", "sources", "title"], defaults=[""])
SectionInfo.__doc__ = """A section marker as the index checks need it: id, 1-based line,
description, sources, and its heading (``title``)."""


_KEY_RE = re.compile(rb"^([^\s#:'\"\-][^:\n]*?)[ \t]*:(?:[ \t]|$)", re.M)


def frontmatter_key_lines(data: bytes) -> dict[str, int]:
    """Top-level frontmatter keys -> 1-based file line (first occurrence) in a page's bytes
    (without BOM)."""
    if not data.startswith(b"---"):
        return {}
    b = frontmatter_bounds(data)
    if b is None:
        return {}
    block_end = len(data) if b is NEVER_CLOSED else b[1]
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
    schema, anything :func:`episteme.wiki.schema.page_date` reads (epoch numbers, datetime text)
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
    from ..wiki.sections import SectionFormatError
    from ..wiki.sections import parse_page as parse_sections

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
    seen: dict[tuple[str, tuple[str, ...]], str] = {}  # (heading, sources) -> first section id
    for s in parsed.sections:
        infos.append(SectionInfo(s.id, s.line, s.description, list(s.sources), s.title))
        key = (" ".join(s.title.split()).casefold(), tuple(s.sources))
        first = seen.setdefault(key, s.id)
        if first != s.id and key[0] and "section-duplicate" in enabled:
            # what a write repeated after a crash leaves: the same section under a new id
            out.append(finding("section-duplicate", page_id, s.line,
                               f"{s.id} repeats {first}: same heading {s.title!r} and sources", section=s.id,
                               other=first))
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
    b = frontmatter_bounds(data) if data[:3] == b"---" else None
    if b is None:
        return None
    end = len(data) if b is NEVER_CLOSED else b[1]
    pos = data.find(b"\n" + key.encode("utf-8") + b":", 0, end)
    return None if pos < 0 else data.count(b"\n", 0, pos) + 2


class PageChecker:
    """The per-page checks, run by the scan on each page while its bytes are in hand
    (``WikiGraph.build(..., visit=checker.visit)``): a lint run reads every page once.
    Collects :attr:`findings` and the :attr:`sections` (``(page id, SectionInfo)``) the index
    checks compare."""

    def __init__(self, rules: PageRules):
        self.rules = rules
        self.fm_on = bool(rules.enabled & _FM_RULES)
        self.findings: list[Finding] = []
        self.sections: list[tuple[str, SectionInfo]] = []

    def visit(self, page: Page, data: bytes | None) -> None:
        rules = self.rules
        if data is None:
            if "page-unreadable" in rules.enabled:
                self.findings.append(finding("page-unreadable", page.id, None, f"not read: {page.fm_error}"))
            return
        if self.fm_on and page.has_frontmatter and (
            page.fm_error or rules.has_fields or _fm_suspect(page.props, rules.date_fields)
        ):
            self.findings.extend(check_frontmatter(page, rules, _KeyLines(data)))
        # a one-byte probe first (a bare memchr: most pages hold no "<" at all), then the
        # marker (``find``: ``bytes in bytes`` first tries the needle as an integer)
        if 60 in data and data.find(b"<!-- section") >= 0:
            infos, more = check_sections(page.id, data, rules.enabled)
            self.sections.extend((page.id, s) for s in infos)
            self.findings.extend(more)


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
    from ..wiki.files import read_bytes
    from ..wiki.frontmatter import strip_bom

    try:
        data = strip_bom(read_bytes(os.path.join(root, page_id)))
    except OSError:
        return 1
    line = _quick_key_line(data, key)
    return 1 if line is None else line
