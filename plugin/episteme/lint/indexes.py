"""lint: the sections found in the pages against ``index.md`` / ``index.json`` (parsed by
:mod:`episteme.wiki.index`, so lint agrees with the writer on both formats), and ``log.md``."""

from __future__ import annotations

import os
import re

from .rules import Finding, SectionInfo, finding

_LINE_IN_MESSAGE = re.compile(r"line (\d+)")
# A temp file untouched this long has no live writer (an atomic write holds one for
# milliseconds; a batch's carry its pid and count only once that process is gone).
TEMP_SETTLED_S = 600.0


_MD_HEAD = re.compile(r"^##[ \t]+(sec_\d{3,})[ \t]*$", re.M)
JSON_KEY = re.compile(r'"(sec_\d{3,})"[ \t]*:')


def line_map(text: str, pattern: re.Pattern) -> tuple[dict[str, int], list[tuple[str, int]]]:
    first: dict[str, int] = {}
    repeats: list[tuple[str, int]] = []
    for m in pattern.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        if m[1] in first:
            repeats.append((m[1], line))
        else:
            first[m[1]] = line
    return first, repeats


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def check_indexes(root: str, sections: list[tuple[str, SectionInfo]], on: frozenset[str]) -> list[Finding]:
    """Sections found by the scan vs ``index.md`` / ``index.json`` (parsed by
    :mod:`episteme.wiki.index`, so lint agrees with the writer on both formats)."""
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
    md_text = read_text(os.path.join(root, "index.md"))
    json_text = read_text(os.path.join(root, "index.json"))
    if not expected and md_text is None and json_text is None:
        return out  # not an episteme wiki (or an empty one): nothing to compare
    from ..errors import EpistemeError
    from ..wiki.index import (
        INDEX_JSON,
        INDEX_MD,
        IndexEntry,
        parse_index_json,
        parse_index_md,
        pending_write,
    )

    pending = pending_write(root)
    if pending is not None and "index-interrupted-write" in on:
        out.append(finding("index-interrupted-write", ".episteme/pending-write.json", None,
                           "a write did not finish; index.md / index.json may be stale"))
    if "stale-temp-file" in on:
        from ..wiki.upkeep import stale_temp_files

        for rel in stale_temp_files(root, settled=TEMP_SETTLED_S):
            out.append(finding("stale-temp-file", rel, None,
                               "a temp file a killed or failed write left behind"))
    md = parse_index_md(md_text) if md_text is not None else None
    md_lines, md_repeats = line_map(md_text or "", _MD_HEAD)
    if "index-malformed" in on:
        for sid, line in md_repeats:
            out.append(finding("index-malformed", INDEX_MD, line, f"{sid} is listed twice in index.md", section=sid))
    ijson: dict[str, list[str]] | None = None
    json_lines: dict[str, int] = {}
    if json_text is not None:
        try:
            ijson = parse_index_json(json_text)
            json_lines, _ = line_map(json_text, JSON_KEY)
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


def log_findings(root: str) -> list[Finding]:
    text = read_text(os.path.join(root, "log.md"))
    if text is None:
        return []
    from ..wiki.index import LOG_MD, parse_log

    _, problems = parse_log(text)
    out = []
    for p in problems:
        m = _LINE_IN_MESSAGE.search(p)
        msg = p.split(": ", 1)[1] if ": " in p else p
        out.append(finding("log-malformed", LOG_MD, int(m[1]) if m else None, msg))
    return out


