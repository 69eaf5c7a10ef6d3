"""A page's text as a writer changes it: the frontmatter read and written as YAML, and one
section spliced in, replaced or removed with every other line kept byte for byte, then read
back to prove it.

Why its own module: this is the text transformation of a write, with no file access; the
write protocol (:mod:`episteme.wiki.edit`) and the batch (:mod:`episteme.wiki.batch`) both run
it, and the round-trip check is what lets them trust it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from ..errors import EpistemeError, UsageError
from .frontmatter import yaml_frontmatter
from .sections import ParsedPage, SectionFormatError, WikiSection, parse_page, split_frontmatter


def load_frontmatter(yaml_text: str | None, page: str = "page") -> dict[str, Any]:
    """Parse a page's frontmatter YAML into a dict (empty when absent) with the reader graph
    and lint use; refuse to continue on YAML we cannot read rather than overwrite what a
    person wrote."""
    if yaml_text is None or not yaml_text.strip():
        return {}
    data, error, _ = yaml_frontmatter(yaml_text)
    if error:
        raise EpistemeError(f"{page}: frontmatter is not valid YAML ({error}); fix it by hand first")
    return data


class _NoAliasDumper(yaml.SafeDumper):
    """SafeDumper that never writes ``&id001``/``*id001`` (``created`` and ``updated`` are often
    the same date object; anchors would confuse people and simple frontmatter readers)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_frontmatter(data: Mapping[str, Any]) -> str:
    """YAML in the order given, block style, dates as YYYY-MM-DD, unicode kept (PyYAML's
    ``safe_dump`` settings with ``sort_keys=False``, minus aliases)."""
    return yaml.dump(
        dict(data), Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True,
        default_flow_style=False, width=1000,
    ).rstrip("\n")


def _as_str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None and str(v) != ""]
    return [str(value)] if str(value) else []


def union_values(existing: Any, new: Iterable[str]) -> list[str]:
    """``existing`` (a frontmatter list, or one value) with each of ``new`` appended once."""
    out = _as_str_list(existing)
    for v in new:
        if v not in out:
            out.append(v)
    return out


def humanize_slug(rel: str) -> str:
    stem = rel.rsplit("/", 1)[-1][:-3]
    words = stem.replace("_", "-").split("-")
    text = " ".join(w for w in words if w)
    return text[:1].upper() + text[1:] if text else "Untitled"


def splice_page(
    text: str,
    parsed: ParsedPage,
    fm: Mapping[str, Any],
    *,
    replace: WikiSection | None = None,
    insert: WikiSection | None = None,
    after: str | None = None,
    preamble: str | None = None,
    remove: str | None = None,
) -> str:
    """The page text with new frontmatter and one change, every other line kept byte for byte:
    ``replace`` swaps the lines of the section with that id, ``insert`` adds a section after
    ``after`` (default: at the end), ``preamble`` replaces the text before the first section,
    ``remove`` drops the section with that id.  Only one of them per call."""
    _, body, body_line = split_frontmatter(text)
    lines = body.split("\n")
    starts = [s.line - body_line for s in parsed.sections]
    if replace is not None:
        i = next(k for k, s in enumerate(parsed.sections) if s.id == replace.id)
        lines = _put(lines, starts[i], starts[i + 1] if i + 1 < len(starts) else len(lines), replace.render())
    if remove is not None:
        i = next(k for k, s in enumerate(parsed.sections) if s.id == remove)
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        head, tail = lines[: starts[i]], lines[end:]
        while head and not head[-1].strip():
            head.pop()
        lines = [*head, *([""] if head and tail else []), *tail]
    if insert is not None:
        if after is not None:
            i = next(k for k, s in enumerate(parsed.sections) if s.id == after)
            pos = starts[i + 1] if i + 1 < len(starts) else len(lines)
        else:
            pos = len(lines)
        lines = _put(lines, pos, pos, insert.render())
    if preamble is not None:
        first = starts[0] if starts else len(lines)
        lines = _put(lines, 0, first, preamble.strip("\n") + "\n")
    new_body = "\n".join(lines).strip("\n") + "\n"
    return f"---\n{dump_frontmatter(fm)}\n---\n{new_body}"


def _put(lines: list[str], start: int, end: int, chunk: str) -> list[str]:
    """Replace ``lines[start:end]`` with ``chunk``, one blank line on either side of it."""
    head = lines[:start]
    while head and not head[-1].strip():
        head.pop()
    tail = lines[end:]
    while tail and not tail[0].strip():
        tail.pop(0)
    middle = chunk.strip("\n").split("\n")
    return [*head, *([""] if head else []), *middle, *([""] if tail else []), *tail]


def clean_fields(fields: Mapping[str, Any] | None) -> dict[str, Any]:
    """Caller-supplied frontmatter fields: string keys, YAML-safe values, ISO strings for dates."""
    out: dict[str, Any] = {}
    for k, v in (fields or {}).items():
        if not isinstance(k, str) or not re.match(r"^[A-Za-z_][\w-]*$", k):
            raise UsageError(f"invalid frontmatter field name {k!r}")
        if isinstance(v, str) and re.match(r"^\d{4}-\d{2}-\d{2}$", v):
            with contextlib.suppress(ValueError):
                v = _dt.date.fromisoformat(v)
        try:
            yaml.safe_dump(v)
        except yaml.YAMLError:
            raise UsageError(f"frontmatter field {k!r} has a value YAML cannot hold") from None
        out[k] = v
    return out


def _key(sec: WikiSection) -> tuple:
    return (sec.id, sec.title, sec.level, sec.description, sec.sources, sec.body.strip("\n"), sec.extra)


def verify_round_trip(rel: str, text: str, before: ParsedPage, sec: WikiSection | None) -> None:
    """Re-parse the page about to be written: every other section reads back exactly as before
    and the written one exactly as intended.  Catches anything validation missed (an unclosed
    fence swallowing the next marker, a heading that would not survive) before it hits disk."""
    try:
        again = parse_page(text, strict=True)
    except SectionFormatError as e:
        raise EpistemeError(f"refusing to write {rel}: the result would not parse ({e})") from None
    expected = {s.id: _key(s) for s in before.sections}
    if sec is not None:
        expected[sec.id] = _key(sec)
    got = {s.id: _key(s) for s in again.sections}
    if len(got) != len(again.sections) or got != expected:
        bad = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
        raise EpistemeError(f"refusing to write {rel}: section(s) {', '.join(bad)} would not read back unchanged")
    fm, _, _ = split_frontmatter(text)
    load_frontmatter(fm, rel)

