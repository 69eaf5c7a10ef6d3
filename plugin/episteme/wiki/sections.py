"""Sections inside wiki pages: the unit every read and write of the wiki works on.

A page is YAML frontmatter, an optional preamble, then sections.  Each section starts with a
marker line, an HTML comment (invisible when rendered) that carries the stable id and the
metadata ``index.md``/``index.json`` are derived from, followed by a heading::

    <!-- section {"id": "sec_002", "description": "Multi-head attention ...", "sources": ["attention.pdf"]} -->
    ## Multi-Head Attention

    Body markdown with [[links]] ...

Because the description and the sources live in the page itself, ``index.md`` and
``index.json`` can always be rebuilt from the pages (``episteme lint --fix``), so a crash between
writing a page and writing the indexes loses nothing.  Standard library only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .frontmatter import NEVER_CLOSED, frontmatter_bounds

SECTION_ID_RE = re.compile(r"^sec_\d{3,}$")
MARKER_RE = re.compile(r"^<!-- section (\{.*\}) -->[ \t]*$")
# Anything that looks like a marker, even a broken one: bodies must not contain these.
LOOSE_MARKER_RE = re.compile(r"<!--\s*section\b", re.IGNORECASE)
HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


class SectionFormatError(ValueError):
    """A marker line whose JSON is unreadable or lacks a valid ``id`` (with its line number)."""

    def __init__(self, message: str, line: int):
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass
class WikiSection:
    """One section of a wiki page.  ``line`` is the 1-based line of its marker in the file."""

    id: str
    title: str = ""
    level: int = 2
    description: str = ""
    sources: list[str] = field(default_factory=list)
    body: str = ""
    line: int = 0
    extra: dict = field(default_factory=dict)

    def marker(self) -> str:
        meta = {"id": self.id, "description": self.description, "sources": list(self.sources)}
        meta.update(self.extra)
        text = json.dumps(meta, ensure_ascii=False)
        # Keep the comment well formed whatever the description says.
        text = text.replace("<", "\\u003c").replace(">", "\\u003e")
        return f"<!-- section {text} -->"

    def render(self) -> str:
        """Marker, heading, blank line, body (trailing newline normalised)."""
        head = f"{'#' * self.level} {self.title}".rstrip()
        body = self.body.strip("\n")
        return f"{self.marker()}\n{head}\n\n{body}\n" if body else f"{self.marker()}\n{head}\n"


@dataclass
class ParsedPage:
    """A page split into frontmatter text, preamble and sections (no YAML parsing here)."""

    frontmatter_text: str | None  # the YAML between the --- fences, or None
    preamble: str
    sections: list[WikiSection]
    body_start_line: int = 1  # 1-based line where the body (after frontmatter) starts

    def render(self) -> str:
        out = []
        if self.frontmatter_text is not None:
            out.append(f"---\n{self.frontmatter_text.rstrip()}\n---\n")
        pre = self.preamble.strip("\n")
        if pre:
            out.append(pre + "\n")
        for sec in self.sections:
            if out:
                out.append("\n")
            out.append(sec.render())
        return "".join(out)

    def get(self, section_id: str) -> WikiSection | None:
        return next((s for s in self.sections if s.id == section_id), None)


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """Return ``(yaml_text or None, body, body_start_line)`` for a page's text, with the
    block found by :func:`episteme.wiki.frontmatter.frontmatter_bounds` (the one reader: a
    block that never closes is no frontmatter here either, all of the text is body)."""
    if not text.startswith("---"):
        return None, text, 1
    data = text.encode("utf-8", "surrogatepass")
    b = frontmatter_bounds(data)
    if b is None or b is NEVER_CLOSED:
        return None, text, 1
    start, end, body = b
    yaml_text = data[start:end].decode("utf-8", "surrogatepass")
    return yaml_text, data[body:].decode("utf-8", "surrogatepass"), data.count(b"\n", 0, body) + 1


def parse_page(text: str, *, strict: bool = True) -> ParsedPage:
    """Parse a page's sections.  With ``strict``, a broken marker raises
    :class:`SectionFormatError`; otherwise it is left in the text and skipped."""
    fm, body, body_line = split_frontmatter(text)
    lines = body.split("\n")
    preamble: list[str] = []
    sections: list[WikiSection] = []
    current: WikiSection | None = None
    current_body: list[str] = []
    in_fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if in_fence:
            if stripped.startswith(in_fence):
                in_fence = None
        elif stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = stripped[:3]
        else:
            m = MARKER_RE.match(line)
            if m or (strict and line.startswith("<!-- section")):
                lineno = body_line + i
                meta = _parse_marker(m.group(1) if m else None, lineno, strict)
                if meta is not None:
                    if current is not None:
                        current.body = "\n".join(current_body).strip("\n")
                        sections.append(current)
                    current = WikiSection(
                        id=meta.pop("id"),
                        description=str(meta.pop("description", "") or ""),
                        sources=_as_list(meta.pop("sources", [])),
                        line=lineno,
                        extra=meta,
                    )
                    current_body = []
                    # The heading is the next non-blank line.
                    j = i + 1
                    while j < len(lines) and not lines[j].strip():
                        j += 1
                    h = HEADING_RE.match(lines[j]) if j < len(lines) else None
                    if h:
                        current.level = len(h.group(1))
                        current.title = h.group(2).strip()
                        i = j + 1
                    else:
                        i += 1
                    continue
        (current_body if current is not None else preamble).append(line)
        i += 1
    if current is not None:
        current.body = "\n".join(current_body).strip("\n")
        sections.append(current)
    return ParsedPage(fm, "\n".join(preamble).strip("\n"), sections, body_line)


def _parse_marker(raw: str | None, lineno: int, strict: bool) -> dict | None:
    try:
        if raw is None:
            raise ValueError("marker is not of the form <!-- section {json} -->")
        meta = json.loads(raw)
        if not isinstance(meta, dict):
            raise ValueError("marker JSON is not an object")
        if not SECTION_ID_RE.match(str(meta.get("id", ""))):
            raise ValueError(f"marker has no valid section id (got {meta.get('id')!r})")
        return meta
    except (ValueError, json.JSONDecodeError) as e:
        if strict:
            raise SectionFormatError(str(e), lineno) from None
        return None


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value]


def section_number(section_id: str) -> int:
    """``sec_042`` → 42."""
    return int(section_id.split("_", 1)[1])


def format_section_id(n: int) -> str:
    """42 → ``sec_042`` (at least three digits, more when needed)."""
    return f"sec_{n:03d}"


def max_section_number(ids) -> int:
    """The highest number among ``ids`` that are well-formed section ids (0 when none): what a
    new section's id is allocated above."""
    best = 0
    for sid in ids:
        if SECTION_ID_RE.match(sid):
            best = max(best, section_number(sid))
    return best
