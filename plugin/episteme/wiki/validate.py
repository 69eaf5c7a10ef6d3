"""What a wiki write accepts: page names, titles, descriptions, bodies, sources and tags, each
checked and normalised before anything is written.

Why its own module: every writer (the agent's ``write_section``, the batch, the compiled
writer) must refuse the same inputs with the same messages; the checks are pure functions of
their arguments (plus, for a page name, whether the file exists), so they live apart from the
write protocol in :mod:`episteme.wiki.edit`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from ..errors import UsageError
from ..fsutil import safe_join, sanitize_filename, slugify
from .files import is_structural
from .sections import LOOSE_MARKER_RE

DEFAULT_PAGE_TYPE = "concept"
MAX_TITLE_CHARS = 200
MAX_DESCRIPTION_CHARS = 1000
MAX_BODY_CHARS = 200_000

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)")
_HEADING_LINE_RE = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")

SourceCheck = Callable[[str], bool] | Collection[str] | None


def resolve_page(wiki: str | os.PathLike, page: str) -> tuple[str, Path]:
    """Turn ``--page`` (``bert``, ``bert.md``, ``concepts/bert``) into ``(relative path, Path)``.

    Refuses path escapes, hidden parts, ``raw/`` and the structural files.  A page that does
    not exist yet must be ``<slug>.md`` or ``<folder>/<slug>.md`` with lowercase-hyphen slugs;
    existing pages with other names (hand-made vaults) may be updated as they are.
    """
    p = (page or "").strip().replace("\\", "/")
    if not p or "\x00" in p or "\n" in p:
        raise UsageError(f"invalid page name: {page!r}")
    stem = p[:-3] if p.lower().endswith(".md") else p
    parts = stem.split("/")
    if any(part in ("", ".", "..") for part in parts) or stem.startswith("/"):
        raise UsageError(f"page path escapes or is malformed: {page!r}")
    if any(part.startswith(".") for part in parts):
        raise UsageError(f"page may not be in a hidden folder or be a hidden file: {page!r}")
    rel = stem + ".md"
    if parts[0].lower() == "raw":
        raise UsageError(f"raw/ holds source papers, not wiki pages: {page!r}")
    if len(parts) == 1 and is_structural(rel):
        raise UsageError(f"{rel} is a structural wiki file, not a page")
    path = safe_join(wiki, rel)
    if not path.exists() or _CASE_BLIND_DISKS:  # on Linux an existing exact name is itself
        _refuse_case_twin(wiki, rel)
    if path.exists() and not path.is_file():
        raise UsageError(f"page path is not a file: {rel}")
    if not path.exists() and (len(parts) > 2 or not all(SLUG_RE.match(part) for part in parts)):
        suggestion = "/".join(slugify(x) for x in parts[-2:])
        raise UsageError(
            f"new page must be <slug>.md or <folder>/<slug>.md with lowercase letters, digits "
            f"and hyphens (got {page!r}; try {suggestion!r})"
        )
    return rel, path


# macOS and Windows disks ignore letter case by default: there an existing name may be a twin
_CASE_BLIND_DISKS = sys.platform in ("darwin", "win32")


def _refuse_case_twin(wiki: str | os.PathLike, rel: str) -> None:
    """Refuse ``rel`` when a file or folder on its path differs from it only in letter case
    (``concepts/x.md`` beside ``Concepts/``, ``bert.md`` beside ``Bert.md``): on macOS and
    Windows disks the two names are one file, so a "new" page would overwrite the other."""
    folder = Path(wiki)
    parts = rel.split("/")
    for i, part in enumerate(parts):
        try:
            names = os.listdir(folder)
        except OSError:
            return  # the folder does not exist yet: nothing below it to collide with
        if part not in names:
            twin = next((n for n in names if n.casefold() == part.casefold()), None)
            if twin is not None:
                existing = "/".join([*parts[:i], twin])
                raise UsageError(f"{rel} differs only in letter case from the existing {existing} "
                                 "(one file on macOS and Windows disks); use that name")
        folder = folder / part


def validate_title(title: str, what: str = "title") -> str:
    """Non-empty, one line, short, and something a heading can hold unchanged."""
    if not isinstance(title, str) or not title.strip():
        raise UsageError(f"{what} must not be empty")
    if "\n" in title.strip() or "\r" in title:
        raise UsageError(f"{what} must be a single line")
    t = " ".join(title.split())
    if len(t) > MAX_TITLE_CHARS:
        raise UsageError(f"{what} is longer than {MAX_TITLE_CHARS} characters")
    if t.endswith("#") or t.startswith("#"):
        raise UsageError(f"{what} may not start or end with '#'")
    if LOOSE_MARKER_RE.search(t) or "-->" in t:
        raise UsageError(f"{what} may not contain HTML comment markers")
    return t


def validate_description(description: str) -> str:
    """Non-empty single line; it becomes one ``index.md`` line, so it must not look like the
    ``Page:``/``Source:`` lines or an entry heading."""
    if not isinstance(description, str) or not description.strip():
        raise UsageError("description must not be empty")
    if "\n" in description.strip() or "\r" in description:
        raise UsageError("description must be a single line")
    d = " ".join(description.split())
    if len(d) > MAX_DESCRIPTION_CHARS:
        raise UsageError(f"description is longer than {MAX_DESCRIPTION_CHARS} characters")
    if re.match(r"^(Page|Sources?):", d) or d.startswith("#"):
        raise UsageError("description may not start with 'Page:', 'Source:' or '#'")
    return d


def validate_body(body: str, title: str | None = None) -> str:
    """Clean and check a section body.

    Refused: section markers (even broken ones), a leading ``---`` frontmatter fence, an
    unclosed code fence (it would swallow the markers of the sections after it), NUL bytes,
    oversize bodies, empty bodies.  A first line repeating the section's own heading is
    dropped (models often echo it).
    """
    if not isinstance(body, str):
        raise UsageError("body must be text")
    text = body.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        raise UsageError("body contains NUL bytes")
    if len(text) > MAX_BODY_CHARS:
        raise UsageError(f"body is longer than {MAX_BODY_CHARS} characters")
    text = text.strip("\n")
    lines = [ln.rstrip() for ln in text.split("\n")]
    if title is not None and lines:
        m = _HEADING_LINE_RE.match(lines[0])
        if m and m.group(1).strip().lower() == title.strip().lower():
            lines = lines[1:]
    text = "\n".join(lines).strip("\n")
    if not text.strip():
        raise UsageError("body must not be empty")
    if LOOSE_MARKER_RE.search(text):
        raise UsageError("body contains a section marker ('<!-- section'); markers are written by episteme")
    if text.lstrip().split("\n", 1)[0].strip() == "---":
        raise UsageError("body starts with a '---' frontmatter fence; frontmatter is written by episteme")
    fence: str | None = None
    for ln in text.split("\n"):
        m = _FENCE_RE.match(ln)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
    if fence is not None:
        raise UsageError(f"body has an unclosed {fence} code fence")
    return text


def validate_sources(sources: Iterable[str], known: SourceCheck = None, *, required: bool = True) -> list[str]:
    """Source file names: plain safe base names (as stored in ``raw/``), de-duplicated, and —
    when ``known`` is given — each one a source the stores know."""
    out: list[str] = []
    for s in sources:
        name = str(s).strip()
        if not name:
            continue
        if name != sanitize_filename(name, default="") or "," in name:
            raise UsageError(f"source must be a plain file name as stored in raw/ (got {s!r})")
        if name not in out:
            out.append(name)
    if required and not out:
        raise UsageError("at least one --source is required")
    if known is not None:
        check = known if callable(known) else known.__contains__
        unknown = [s for s in out if not check(s)]
        if unknown:
            raise UsageError(
                f"unknown source(s): {', '.join(unknown)} (not ingested in this wiki; "
                f"names must match files in raw/)"
            )
    return out


def validate_tags(tags: Iterable[str]) -> list[str]:
    out: list[str] = []
    for t in tags:
        tag = str(t).strip().lstrip("#")
        if not tag:
            continue
        if not re.match(r"^[\w][\w/-]*$", tag):
            raise UsageError(f"invalid tag {t!r} (letters, digits, '-', '_', '/' for nesting)")
        if tag not in out:
            out.append(tag)
    return out


def raw_sources(wiki: str | os.PathLike) -> set[str]:
    """The source files present in ``<wiki>/raw/`` (what ``write_section.py`` accepts)."""
    raw = Path(wiki) / "raw"
    if not raw.is_dir():
        return set()
    return {p.name for p in raw.iterdir() if p.is_file() and not p.name.startswith(".")}

