"""``index.json`` and ``index.md`` held as text during a write and changed entry by entry
(:class:`IndexFiles`).

Why its own module: splicing one entry into each file, instead of parsing and re-rendering
thousands, is what keeps writes fast on big wikis; it must stay byte-identical to the full
renderers of :mod:`episteme.wiki.index`, and that contract is easier to keep in view here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import EpistemeError
from .index import (
    INDEX_JSON,
    INDEX_MD,
    IndexEntry,
    IndexMd,
    index_json_row,
    join_index_json,
    parse_index_json,
    parse_index_md,
    read_text_or_none,
    render_index_json,
    section_sort_key,
)
from .sections import max_section_number

_JSON_ID_RE = re.compile(r'^  "(sec_\d{3,})": ', re.M)
_MD_ID_RE = re.compile(r"^## (sec_\d{3,})[ \t]*$", re.M)


def _last_md_id(text: str) -> str | None:
    """The id of the last ``## sec_NNN`` entry heading of ``index.md`` text (``None`` if none),
    searched backwards from the end (where a new entry goes)."""
    end = len(text)
    while end > 0:
        pos = text.rfind("\n## ", 0, end)
        start = pos + 1 if pos >= 0 else 0
        eol = text.find("\n", start)
        m = _MD_ID_RE.match(text, start, eol if eol >= 0 else len(text))
        if m:
            return m.group(1)
        if pos < 0:
            return None
        end = pos
    return None


class IndexFiles:
    """``index.json`` and ``index.md`` as text during a batch, changed entry by entry.

    A write splices one entry into each file (replace its line/block, or append a new id after
    the last one) instead of parsing and re-rendering thousands of entries, so writes stay fast
    on big wikis.  The result is byte-identical to the full renderers of
    :mod:`episteme.wiki.index` for files in their canonical form; for anything else (a
    hand-edited index) it falls back to one full parse and canonical re-render, after which
    splicing resumes.  :class:`WikiWriter` holds one per batch (``set`` / ``delete`` per write,
    then ``render_json`` / ``render_md`` written atomically).
    """

    def __init__(self, wiki: Path):
        self.wiki = wiki
        text = read_text_or_none(wiki / INDEX_JSON) or ""
        self.json_text = text if text.strip() else "{}\n"
        if not isinstance(json.loads(self.json_text), dict):  # garbled: the caller rebuilds it
            raise EpistemeError("index.json is not a JSON object")
        md = read_text_or_none(wiki / INDEX_MD)
        self.md_text = md if md is not None else IndexMd().render()

    def max_number(self) -> int:
        ids = _JSON_ID_RE.findall(self.json_text) + _MD_ID_RE.findall(self.md_text)
        if not ids and self.json_text.strip() != "{}":  # not our layout: read it properly
            return max_section_number(parse_index_json(self.json_text))
        return max_section_number(ids)

    # -- index.json --------------------------------------------------------------------------

    def _json_full(self, change) -> None:
        mapping = parse_index_json(self.json_text)
        change(mapping)
        self.json_text = render_index_json(mapping)

    def _json_set(self, sid: str, sources: list[str]) -> None:
        row, text = index_json_row(sid, sources), self.json_text
        pos = text.find(f'\n  "{sid}": ')
        if pos >= 0:
            eol = text.find("\n", pos + 1)
            comma = "," if text[pos + 1 : eol].endswith(",") else ""
            self.json_text = text[: pos + 1] + row + comma + text[eol:]
            return
        if text == "{}\n":
            self.json_text = join_index_json([row])
            return
        if text.endswith("\n}\n"):
            last = _JSON_ID_RE.findall(text[text.rfind("\n", 0, len(text) - 3) + 1 :])
            if last and section_sort_key(last[0]) < section_sort_key(sid):
                self.json_text = text[:-3] + ",\n" + row + "\n}\n"
                return
        self._json_full(lambda m: m.__setitem__(sid, list(sources)))

    def _json_delete(self, sid: str) -> None:
        self._json_full(lambda m: m.pop(sid, None))

    # -- index.md ----------------------------------------------------------------------------

    def _md_full(self, change) -> None:
        idx = parse_index_md(self.md_text)
        change(idx.entries)
        self.md_text = idx.render()

    def _md_set(self, entry: IndexEntry) -> None:
        block, text = entry.render(), self.md_text
        pos = text.find(f"\n## {entry.id}\n")
        if pos >= 0 and text.find(f"\n## {entry.id}\n", pos + 1) < 0:  # listed exactly once
            nxt = text.find("\n## ", pos + 1)
            if nxt < 0:  # the last entry
                self.md_text = text[: pos + 1] + block
                return
            if text[nxt - 1 : nxt + 1] == "\n\n":  # one blank line before the next entry
                self.md_text = text[: pos + 1] + block + text[nxt:]
                return
        elif pos < 0 and text.endswith("\n"):
            last = _last_md_id(text)  # from the end: not a scan of every entry per write
            if last is None:
                self.md_text = text.rstrip("\n") + "\n\n" + block
                return
            if section_sort_key(last) < section_sort_key(entry.id):  # a new id: goes last
                self.md_text = text + "\n" + block
                return
        self._md_full(lambda entries: entries.__setitem__(entry.id, entry))

    def _md_delete(self, sid: str) -> None:
        self._md_full(lambda entries: entries.pop(sid, None))

    # -- both --------------------------------------------------------------------------------

    def set(self, entry: IndexEntry) -> None:
        self._json_set(entry.id, list(entry.sources))
        self._md_set(entry)

    def delete(self, section_id: str) -> None:
        self._json_delete(section_id)
        self._md_delete(section_id)

    def render_json(self) -> str:
        return self.json_text

    def render_md(self) -> str:
        return self.md_text
