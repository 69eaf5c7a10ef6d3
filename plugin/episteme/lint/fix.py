"""``lint --fix``: the safe, mechanical repairs.

Safe means mechanical and loss-free: the indexes are regenerated from the pages (they are
derived data), a date line of a page's frontmatter is rewritten in place (nothing else in the
file changes, byte for byte), missing passage vectors are embedded again.  Nothing is deleted
from a page, nothing is written through or over a symlink, and the indexes are not rebuilt
while two pages claim one section id (that would hand one page's sources to the other).
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..wiki.files import read_bytes
from .core import LintReport
from .rules import Finding, normalize_date_text

INDEX_FIX_RULES = frozenset({"section-not-in-index", "index-stale-entry", "index-json-unknown-section",
                             "index-out-of-date", "index-malformed", "index-interrupted-write",
                             "stale-temp-file"})


def apply_fixes(wiki: str | os.PathLike, report: LintReport, *, settings: Any = None) -> list[dict[str, Any]]:
    """Apply the safe repairs for ``report``'s findings; returns one record per change.

    See the module docstring for what is safe.  A repair that is not made for safety's sake
    is recorded too, with ``"fix": "skip"`` and the reason.  Everything happens under the wiki
    lock with atomic writes."""
    from ..fsutil import wiki_lock

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
            dup = sorted({f.data["section"] for f in report.findings if f.rule == "section-duplicate-id" and f.data})
            linked = [n for n in ("index.md", "index.json") if os.path.islink(os.path.join(root, n))]
            if dup:
                fixes.append(_skip("index.md, index.json", f"indexes not rebuilt: {', '.join(dup)} used on two "
                                   "pages; give one of them a new id first (a rebuild would pick one page's sources)"))
            elif linked:
                fixes.append(_skip(", ".join(linked), "indexes not rebuilt: a symlink is never written through"))
            else:
                fixes.extend(_fix_indexes(root))
        if vec:
            from .stores import fix_vectors

            fixes.extend(fix_vectors(root, settings, vec))
    return fixes


def _skip(file: str, message: str) -> dict[str, Any]:
    return {"fix": "skip", "file": file, "message": message}


def _fix_indexes(root: str) -> list[dict[str, Any]]:
    from ..wiki.edit import rebuild_indexes

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
    for rel in res["removed_temp_files"]:
        out.append({"fix": "temp-remove", "file": rel, "message": "removed a temp file a killed write left"})
    if not out and (res["index_json_changed"] or res["index_md_changed"]):
        changed = [n for n, c in (("index.md", res["index_md_changed"]), ("index.json", res["index_json_changed"])) if c]
        out.append({"fix": "index-rewrite", "file": ", ".join(changed), "message": "regenerated from the pages"})
    return out


_VALUE_LINE = re.compile(rb"^(?P<key>[^\s#:][^:\r\n]*?)(?P<sep>[ \t]*:[ \t]*)(?P<value>.*?)(?P<tail>[ \t]+#.*)?(?P<eol>\r?)$")


def _fix_dates(root: str, items: list[Finding]) -> list[dict[str, Any]]:
    """Rewrite each flagged date in place: only the value of that one line changes."""
    from ..fsutil import atomic_write_bytes

    by_file: dict[str, list[Finding]] = {}
    for f in items:
        by_file.setdefault(f.file, []).append(f)
    out = []
    for rel, fs in sorted(by_file.items()):
        path = os.path.join(root, rel)
        if os.path.islink(path):
            out.append(_skip(rel, "date not rewritten: the page is a symlink (never written through or over)"))
            continue
        data = read_bytes(path)
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
