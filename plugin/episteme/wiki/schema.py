"""``SCHEMA.md``: field definitions, memory-tier settings and lint configuration.

API (stable; graph, lint and the writer build on it):

- ``load_schema(root) -> Schema``: reads ``<root>/SCHEMA.md`` (absent = defaults: no fields,
  tiers disabled, no lint settings).  Malformed yaml blocks are reported in ``Schema.errors``,
  never raised: a broken schema must not stop a graph query.
- ``parse_schema(text) -> Schema``: the same from text.
- ``Schema.fields`` (name -> spec dict), ``Schema.tiers`` (:class:`TierConfig`),
  ``Schema.lint`` (the ``lint:`` mapping), ``Schema.data`` (all yaml blocks merged).
- ``compute_tier(props, tiers, today) -> "active" | "archived" | "frozen"``.
- ``page_date(value) -> datetime.date | None``: the date a frontmatter value stands for.

The schema is prose for people and agents plus fenced ```yaml blocks for tools; every such
block is parsed and their top-level keys merged (later blocks win), so the prose can be edited
freely around them.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections import namedtuple
from typing import Any

TIERS = ("active", "archived", "frozen")
#: page ``type`` values episteme writes (the starter SCHEMA.md lists the same): ``result``,
#: ``setup`` and ``dataset`` are pages about one paper's own experiments, under its page
PAGE_TYPES = ("paper", "concept", "method", "entity", "comparison", "synthesis", "note",
              "result", "setup", "dataset")
SCHEMA_FILE = "SCHEMA.md"

_YAML_BLOCK = re.compile(r"^ {0,3}(```|~~~)[ \t]*ya?ml[ \t]*\r?\n(.*?)^ {0,3}\1[ \t]*\r?$", re.M | re.S)


# A named tuple and a plain class rather than dataclasses: importing ``dataclasses`` (with
# ``inspect``) costs every graph/lint command ~10 ms of start-up.
TierConfig = namedtuple(
    "TierConfig", ["enabled", "driving_field", "active_days", "archived_days"], defaults=[False, "updated", 180, 730]
)
TierConfig.__doc__ = """``memory_tiers`` settings (immutable).  Thresholds are inclusive ages in days:
a page whose date is at most ``active_days`` old is active, at most ``archived_days`` old
archived, else frozen.  ``enabled`` is true whenever a ``memory_tiers`` block exists, unless it
says ``enabled: false``."""


class Schema:
    """The parsed ``SCHEMA.md`` (see the module docstring)."""

    __slots__ = ("fields", "tiers", "lint", "data", "errors", "path")

    def __init__(
        self,
        fields: dict[str, dict[str, Any]] | None = None,
        tiers: TierConfig | None = None,
        lint: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        errors: list[str] | None = None,
        path: str | None = None,
    ):
        self.fields = {} if fields is None else fields
        self.tiers = TierConfig() if tiers is None else tiers
        self.lint = {} if lint is None else lint
        self.data = {} if data is None else data
        self.errors = [] if errors is None else errors
        self.path = path

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Schema:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Schema(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__slots__) + ")"


def _as_bool(v: Any, default: bool) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("false", "no", "off", "0"):
            return False
        if s in ("true", "yes", "on", "1"):
            return True
    if isinstance(v, int):
        return bool(v)
    return default


def _as_days(v: Any, default: int, errors: list[str], name: str) -> int:
    if v is None:
        return default
    try:
        n = int(v)
    except (TypeError, ValueError):
        errors.append(f"memory_tiers.{name} is not a number of days: {v!r}")
        return default
    if n < 0:
        errors.append(f"memory_tiers.{name} is negative: {n}")
        return default
    return n


def tier_config(block: Any, errors: list[str] | None = None) -> TierConfig:
    """Build a :class:`TierConfig` from the ``memory_tiers`` value (``None`` = disabled)."""
    errors = [] if errors is None else errors
    if block is None:
        return TierConfig(enabled=False)
    if not isinstance(block, dict):
        errors.append("memory_tiers is not a mapping; tiers disabled")
        return TierConfig(enabled=False)
    d = TierConfig()
    active = _as_days(block.get("active_days"), d.active_days, errors, "active_days")
    archived = _as_days(block.get("archived_days"), d.archived_days, errors, "archived_days")
    if archived < active:
        errors.append(f"memory_tiers.archived_days ({archived}) < active_days ({active}); using {active}")
        archived = active
    drv = block.get("driving_field")
    return TierConfig(
        enabled=_as_bool(block.get("enabled", True), True),
        driving_field=str(drv).strip() if drv not in (None, "") else d.driving_field,
        active_days=active,
        archived_days=archived,
    )


def parse_schema(text: str, path: str | None = None) -> Schema:
    """Parse the yaml blocks of a ``SCHEMA.md`` text."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    schema = Schema(path=path)
    for m in _YAML_BLOCK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        try:
            block = yaml.load(m.group(2), Loader=loader)  # noqa: S506 - a safe loader
        except yaml.YAMLError as e:
            schema.errors.append(f"SCHEMA.md line {line}: invalid yaml block: {str(e).splitlines()[0]}")
            continue
        if block is None:
            continue
        if not isinstance(block, dict):
            schema.errors.append(f"SCHEMA.md line {line}: yaml block is not a mapping")
            continue
        schema.data.update(block)
    fields = schema.data.get("fields")
    if isinstance(fields, dict):
        schema.fields = {str(k): (v if isinstance(v, dict) else {}) for k, v in fields.items()}
    elif fields is not None:
        schema.errors.append("SCHEMA.md: 'fields' is not a mapping")
    schema.tiers = tier_config(schema.data.get("memory_tiers"), schema.errors)
    lint = schema.data.get("lint")
    if isinstance(lint, dict):
        schema.lint = lint
    elif lint is not None:
        schema.errors.append("SCHEMA.md: 'lint' is not a mapping")
    return schema


def load_schema(root: str | os.PathLike) -> Schema:
    """The schema of the wiki at ``root`` (defaults when it has no ``SCHEMA.md``)."""
    path = os.path.join(os.fspath(root), SCHEMA_FILE)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return Schema()
    return parse_schema(text, path)


_ISO_DATE = re.compile(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})")


def page_date(value: Any) -> _dt.date | None:
    """The calendar date a frontmatter value stands for, or ``None``.

    Accepts dates, datetimes, ISO strings (``2025-03-01``, ``2025-03-01T10:00``) and epoch
    numbers (milliseconds when ≥ 10^11, as Dendron writes them, else seconds)."""
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        secs = value / 1000.0 if abs(value) >= 1e11 else float(value)
        try:
            return _dt.datetime.fromtimestamp(secs, tz=_dt.timezone.utc).date()
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        m = _ISO_DATE.match(value)
        if m:
            try:
                return _dt.date(int(m[1]), int(m[2]), int(m[3]))
            except ValueError:
                return None
    return None


def compute_tier(props: dict[str, Any], tiers: TierConfig, today: _dt.date | None = None) -> str:
    """The memory tier of a page.

    ``tier_override`` wins: ``pin`` means active, a tier name means that tier.  Otherwise,
    with tiers enabled, the age in days of ``driving_field`` (falling back to ``ingested_at``,
    then ``updated``) decides; a page with no usable date, and every page when tiers are
    disabled, is active."""
    if not tiers.enabled:
        return "active"
    ov = props.get("tier_override")
    if isinstance(ov, str):
        o = ov.strip().lower()
        if o == "pin":
            return "active"
        if o in TIERS:
            return o
    d = None
    for name in (tiers.driving_field, "ingested_at", "updated"):
        d = page_date(props.get(name))
        if d is not None:
            break
    if d is None:
        return "active"
    age = ((today or _dt.date.today()) - d).days
    if age <= tiers.active_days:
        return "active"
    if age <= tiers.archived_days:
        return "archived"
    return "frozen"
