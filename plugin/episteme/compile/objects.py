"""Tables, figures and algorithms in the wiki sections the offline writer compiles.

The splitter takes captions and table cells out of section bodies and stores them as objects
(``objects`` table: label, page, caption, the section they are printed in).  A wiki section
written from a paper section should still say which tables and figures that section has, so a
reader (and the tracer) can go to "Table 2 (p. 8)".  This module lists them; the extractive
writer appends the paragraph.  Captions are quoted verbatim (their first sentence): they are
paper text, embedded as passages of their own, so a quoted caption traces back to its object.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .decisions import escape_html

#: object kinds a wiki section mentions (footnotes stay with the paper)
QUOTED_KINDS = ("table", "figure", "algorithm")
#: at most this many objects per wiki section (a results section can hold a dozen figures)
MAX_OBJECTS = 4
_LABEL_LEAD = re.compile(r"^\s*(?:table|figure|fig\.|algorithm)\s*[\w.]{1,6}\s*[:.|]\s*", re.I)


def paper_objects(settings, paper_id: str) -> list[dict]:
    """The paper's stored tables, figures and algorithms in page order ([] for a store that
    has none, e.g. a paper ingested before objects existed)."""
    from ..stores.sqlite import open_store

    with open_store(settings, readonly=True) as store:
        return [o for o in store.objects(paper_id) if o["kind"] in QUOTED_KINDS]


def section_objects(objects: list[dict], number: str | None, title: str) -> list[dict]:
    """The objects printed in the paper section ``number title`` (the splitter records each
    object's section as ``"<number> <title>"``)."""
    key = f"{number or ''} {title}".strip().casefold()
    # case and HTML escapes folded: a loaded paper's headings are in title case and escaped
    # (:func:`episteme.compile.inputs.load_paper`), the store keeps them as printed
    return [o for o in objects if escape_html((o.get("section") or "").strip()).casefold() == key]


def caption_sentence(caption: str, limit: int = 240) -> str:
    """A caption's first sentence without its label ("Table 2: The Transformer achieves ..."
    -> "The Transformer achieves ..."), one line, wiki-link brackets removed, capped."""
    text = " ".join(_LABEL_LEAD.sub("", caption or "").split())
    text = text.replace("[[", "[").replace("]]", "]")
    m = re.search(r"(?<=[a-z0-9)\]])[.!?](?=\s+[A-Z(])", text)
    if m and m.end() >= 20:
        text = text[: m.end()]
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return text


def caption_text(caption: str, limit: int = 300) -> str:
    """A caption without its label, whole when it fits in ``limit`` characters, else cut after
    its last sentence that does (its first sentence at least, capped): a caption's second
    sentence often says what the numbers are ("The reported numbers are the mean ...")."""
    text = " ".join(_LABEL_LEAD.sub("", caption or "").split())
    text = text.replace("[[", "[").replace("]]", "]")
    if len(text) <= limit:
        return text
    ends = [m.end() for m in re.finditer(r"(?<=[a-z0-9)\]])[.!?](?=\s+[A-Z(])", text) if 20 <= m.end() <= limit]
    return text[: ends[-1]] if ends else caption_sentence(caption, limit)


def _cell_text(text: str, limit: int) -> str:
    """A table line made safe to list: one line, no wiki-link brackets or pipes, capped."""
    t = " ".join(text.replace("[[", "[").replace("]]", "]").replace("|", "/").split())
    return t if len(t) <= limit else t[: limit - 1].rsplit(" ", 1)[0] + "…"


def objects_paragraph(objects: list[dict], limit: int = MAX_OBJECTS,
                      rows: Callable[[str], tuple[list[str], list[str]]] | None = None) -> str:
    """Markdown listing ``objects`` as "p. 8, **Table 2**: “caption”" lines ("" when none);
    past ``limit`` the rest are counted, not listed.  ``rows``: for a table, its text ->
    ``(header lines, key rows)`` (:func:`episteme.compile.roles.key_rows`); the key rows are
    listed under the caption as printed (cells space-separated) in a one-column markdown table
    headed by the table's header line, so the numbers a caption speaks of stand beside it (and
    ``lint --claims`` reads them as a table, not as sentences to verify)."""
    if not objects:
        return ""
    lines = []
    for o in objects[:limit]:
        cap = caption_text(o.get("caption", ""))
        # "p. 8, **Table 2**: “caption”": the label reads as the paper prints it before its
        # caption, and what is left beside the quote is a lead-in (ends with ":"), not a claim
        lines.append(f"- p. {o['page']}, **{o['label']}**" + (f": “{cap}”" if cap else ""))
        if rows is not None and o.get("kind") == "table":
            header, picked = rows(o.get("text") or "")
            if picked:  # a one-column markdown table: its header line, then the rows as printed
                head = _cell_text(" ".join(header), 160) if header else "key rows"
                lines += ["", f"  | {head} |", "  |---|", *(f"  | {_cell_text(r, 200)} |" for r in picked), ""]
    more = len(objects) - limit
    if more > 0:
        lines.append(f"- and {more} more in this section of the paper")
    return "Tables and figures in this section:\n\n" + "\n".join(lines).replace("\n\n\n", "\n\n").strip("\n")
