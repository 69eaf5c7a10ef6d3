"""Highlight boxes for a quote: where on the PDF page its words are, from the page's own text.

``quote_boxes(pdf, page, quote)`` returns ``[{"page", "bbox": [x0, y0, x1, y1]}]`` (PDF points,
origin bottom-left), one box per line of the quote.  It is a function of (paper, page, quote)
only, so any caller -- the server's sources, a contradicted claim's evidence, ``episteme show``
-- gets the same boxes.  :func:`attach_boxes` prefers the boxes stored with each passage at
ingest (schema v3) and only reads the PDF when they are missing or the quote is not inside the
stored passage.

The algorithm, and why:

1. **Read the page's characters with PDFium** (``FPDFText``): their order is the content
   stream's reading order and each has a box.  The quote was extracted by pypdf and repaired
   (hyphens joined, ligatures expanded, spaces normalised), so the two texts differ in exactly
   those ways.
2. **Compare letters and digits only**, NFKC-normalised and case-folded: ``ﬁ`` = ``fi``, a
   line-break hyphen (PDFium's U+FFFE, a soft hyphen, or ``-`` before a line end) and all
   whitespace and punctuation vanish, so ``"repre- sentation"``, ``"repre\\ufffesentation"``
   and ``"representation"`` are the same string.  An exact match of that stream is the common
   case.
3. **Else align words**: the quote's word 3-grams vote for an offset into the page's words, and
   ``difflib`` aligns the quote against the best-voted window; at least
   :data:`MIN_WORD_COVER` of the quote's words must be found in order.  This survives a dropped
   math symbol, a different footnote marker or a word pypdf split differently.
4. **Search the quote's page and the next** as one stream (a passage is dated by the page it
   starts on; its quoted sentence may be on the next), then the neighbours.
5. **Merge character boxes into line boxes**: a new box starts when the next character is not
   on the same line (vertical overlap under half its height) or jumps back left or far right --
   which is what keeps a highlight in a two-column paper inside its column.
"""

from __future__ import annotations

import contextlib
import difflib
import threading
import unicodedata
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path

from .render import file_key, open_document

#: characters PDFium or pypdf put where a word was hyphenated across a line break
JOIN_CHARS = frozenset("\ufffe\u00ad\u0002")
#: fraction of the quote's words that must be found, in order, for a fuzzy match
MIN_WORD_COVER = 0.6
#: shortest normalised quote worth highlighting (a few letters match anywhere)
MIN_QUOTE_CHARS = 12
_PAGE_CACHE_SIZE = 64
_PAGE_CACHE: OrderedDict[tuple, PageText] = OrderedDict()
_CACHE_LOCK = threading.Lock()


@dataclass
class PageText:
    """One page's characters as PDFium reads them, and their letters-and-digits stream.

    ``norm[i]`` came from character ``src[i]`` of the page; ``words`` are ``(start, end)``
    ranges of ``norm`` (a word = a run of letters/digits, a line-break hyphen joining)."""

    page: int
    text: str
    norm: str
    src: list[int]
    words: list[tuple[int, int]]


def normalize(text: str) -> tuple[str, list[int], list[tuple[int, int]]]:
    """``(stream, src, words)``: the letters and digits of ``text`` (NFKC, case-folded), the
    index in ``text`` each came from, and the word ranges of the stream."""
    out: list[str] = []
    src: list[int] = []
    words: list[tuple[int, int]] = []
    start = None
    n = len(text)
    i = 0
    while i < n:
        ch = text[i]
        if ch in JOIN_CHARS:
            i += 1
            continue
        if ch == "-" and i + 1 < n and text[i + 1] in "\r\n" and start is not None:
            i += 1  # "repre-\nsentation": the hyphen and the break join the word
            while i < n and text[i] in "\r\n ":
                i += 1
            continue
        piece = unicodedata.normalize("NFKC", ch).casefold() if not ch.isascii() else ch.lower()
        alnum = [c for c in piece if c.isalnum()]
        if alnum:
            if start is None:
                start = len(out)
            for c in alnum:
                out.append(c)
                src.append(i)
        elif start is not None:
            words.append((start, len(out)))
            start = None
        i += 1
    if start is not None:
        words.append((start, len(out)))
    return "".join(out), src, words


_TEXTPAGES: OrderedDict[tuple, tuple] = OrderedDict()
_TEXTPAGES_SIZE = 12


def words_in_order(quote: str, under: str) -> float:
    """Fraction of ``quote``'s words (as :func:`normalize` folds them) found in order among the
    words of ``under`` — how well a set of highlight boxes covers a quote, given the text read
    inside them.  difflib's matching blocks, because PDFium's bounded text repeats a ligature's
    letters and may add a margin page number: insertions, not misses."""

    def ws(s: str) -> list[str]:
        n, _src, spans = normalize(s)
        return [n[a:b] for a, b in spans]

    q = ws(quote)
    sm = difflib.SequenceMatcher(None, q, ws(under), autojunk=False)
    return sum(b.size for b in sm.get_matching_blocks()) / max(1, len(q))


def _textpage(doc, page: int, key: tuple):
    """PDFium's text page of ``page`` (1-based), kept open in a small LRU: loading a page is
    the dearest step (~10-30 ms), and a quote needs it twice (its text, then its boxes).  The
    caller holds PDFIUM_LOCK (via ``open_document``); an entry is only reused for the same
    open document object."""
    ck = (key, page)
    hit = _TEXTPAGES.get(ck)
    if hit is not None and hit[0] is doc:
        _TEXTPAGES.move_to_end(ck)
        return hit[2]
    pg = doc[page - 1]
    tp = pg.get_textpage()
    _TEXTPAGES[ck] = (doc, pg, tp)
    while len(_TEXTPAGES) > _TEXTPAGES_SIZE:
        _k, (_d, old_pg, old_tp) = _TEXTPAGES.popitem(last=False)
        with contextlib.suppress(Exception):
            old_tp.close()
            old_pg.close()
    return tp


def page_text(doc, page: int, key: tuple) -> PageText:
    """The :class:`PageText` of page ``page`` (1-based), cached per file version."""
    ck = (key, page)
    with _CACHE_LOCK:
        hit = _PAGE_CACHE.get(ck)
        if hit is not None:
            _PAGE_CACHE.move_to_end(ck)
            return hit
    text = _textpage(doc, page, key).get_text_range()
    norm, src, words = normalize(text)
    pt = PageText(page, text, norm, src, words)
    with _CACHE_LOCK:
        _PAGE_CACHE[ck] = pt
        while len(_PAGE_CACHE) > _PAGE_CACHE_SIZE:
            _PAGE_CACHE.popitem(last=False)
    return pt


# ---------------------------------------------------------------------------------- matching


def _exact(stream: str, q: str) -> list[tuple[int, int]] | None:
    at = stream.find(q)
    return [(at, at + len(q))] if at >= 0 else None


def _fuzzy(stream: str, swords: list[tuple[int, int]], q: str,
           qwords: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """Align the quote's words against the page's: 3-gram votes pick the offset, difflib the
    words in order.  The ``(start, end)`` ranges of ``stream`` of the matched runs of words
    (so a margin page number inside the quote's stretch is not highlighted), or None below
    MIN_WORD_COVER."""
    pw = [stream[a:b] for a, b in swords]
    qw = [q[a:b] for a, b in qwords]
    if len(qw) < 3 or not pw:
        return None
    grams: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(pw) - 2):
        grams.setdefault(tuple(pw[i:i + 3]), []).append(i)
    votes: Counter[int] = Counter()
    for j in range(len(qw) - 2):
        for i in grams.get(tuple(qw[j:j + 3]), ()):
            votes[(i - j) // 4] += 1  # offsets within 4 words vote together
    if not votes:  # no shared 3-gram: fall back to single rare-ish words
        index: dict[str, list[int]] = {}
        for i, w in enumerate(pw):
            if len(w) >= 5:
                index.setdefault(w, []).append(i)
        for j, w in enumerate(qw):
            for i in index.get(w, ())[:20]:
                votes[(i - j) // 4] += 1
    if not votes:
        return None
    best_score, best_span = 0, None
    for bucket, _n in votes.most_common(3):
        lo = max(0, bucket * 4 - 8)
        hi = min(len(pw), bucket * 4 + len(qw) + 12)
        sm = difflib.SequenceMatcher(None, pw[lo:hi], qw, autojunk=False)
        blocks = [b for b in sm.get_matching_blocks() if b.size]
        matched = sum(b.size for b in blocks)
        if matched > best_score and blocks:
            best_score = matched
            best_span = [(swords[lo + b.a][0], swords[lo + b.a + b.size - 1][1]) for b in blocks]
    if best_span is None or best_score < MIN_WORD_COVER * len(qw):
        return None
    return best_span


def find_quote(pages: list[PageText], quote: str) -> list[tuple[int, list[int]]]:
    """Where ``quote`` is in the joined stream of ``pages``: ``[(page, [char indices])]`` (the
    indices into each page's PDFium text of the quote's letters), one entry per page it
    covers; [] if it is not there."""
    q, _src, qwords = normalize(quote)
    if len(q) < MIN_QUOTE_CHARS:
        return []
    stream = "".join(p.norm for p in pages)
    owner: list[int] = []  # stream position -> index into pages
    starts = [0]
    for k, p in enumerate(pages):
        owner.extend([k] * len(p.norm))
        starts.append(starts[-1] + len(p.norm))
    spans = _exact(stream, q)
    if spans is None:
        swords = [(a + starts[k], b + starts[k]) for k, p in enumerate(pages) for a, b in p.words]
        spans = _fuzzy(stream, swords, q, qwords)
    if not spans:
        return []
    chars: dict[int, set[int]] = {}
    for a, b in spans:
        for pos in range(a, b):
            k = owner[pos]
            chars.setdefault(k, set()).add(pages[k].src[pos - starts[k]])
    return [(pages[k].page, sorted(chars[k])) for k in sorted(chars)]


# ------------------------------------------------------------------------------------ boxes


def line_boxes(charboxes: list[tuple[float, float, float, float]]) -> list[list[float]]:
    """Merge character boxes (in reading order) into one box per run on a line.

    A new box starts when a character does not overlap the current line vertically by half of
    the smaller height, or sits left of the current box's right edge by more than a character
    (a new line or column), or right of it by more than three line heights (across a gutter)."""
    boxes: list[list[float]] = []
    cur: list[float] | None = None
    for x0, y0, x1, y1 in charboxes:
        if x1 - x0 <= 0 and y1 - y0 <= 0:
            continue
        if cur is None:
            cur = [x0, y0, x1, y1]
            continue
        h = min(y1 - y0, cur[3] - cur[1]) or 1.0
        overlap = min(y1, cur[3]) - max(y0, cur[1])
        lh = max(cur[3] - cur[1], y1 - y0, 1.0)
        same_line = overlap >= 0.5 * h and x0 >= cur[2] - max(2.0, 0.6 * lh) and x0 - cur[2] <= 3 * lh
        if same_line:
            cur = [min(cur[0], x0), min(cur[1], y0), max(cur[2], x1), max(cur[3], y1)]
        else:
            boxes.append(cur)
            cur = [x0, y0, x1, y1]
    if cur is not None:
        boxes.append(cur)
    return boxes


def _char_boxes(doc, page: int, indices: list[int], key: tuple) -> list[tuple]:
    tp = _textpage(doc, page, key)
    return [tp.get_charbox(i, loose=False) for i in indices]


def quote_boxes(pdf: str | Path, page: int | None, quote: str, *,
                neighbours: int = 1) -> list[dict]:
    """``[{"page", "bbox"}]``: the line boxes of ``quote`` in ``pdf``, looked for on ``page`` and
    the page after it (one stream), then up to ``neighbours`` pages either side; every page when
    ``page`` is None.  [] when the quote is not on those pages (or too short to place)."""
    pdf = Path(pdf)
    if not quote or not quote.strip():
        return []
    key = file_key(pdf)
    with open_document(pdf) as doc:
        n = len(doc)
        if page is None:
            tries = [list(range(1, n + 1))]
        else:
            p = min(max(1, int(page)), n)
            tries = [[x for x in (p, p + 1) if x <= n]]
            for d in range(1, neighbours + 1):
                for x in (p - d, p + 1 + d):
                    if 1 <= x <= n:
                        tries.append([x])
        found: list[tuple[int, list[int]]] = []
        for group in tries:
            found = find_quote([page_text(doc, x, key) for x in group], quote)
            if found:
                break
        out: list[dict] = []
        for pg_no, indices in found:
            for b in line_boxes(_char_boxes(doc, pg_no, indices, key)):
                out.append({"page": pg_no, "bbox": [round(v, 2) for v in b]})
    return out


def text_in_box(pdf: str | Path, page: int, bbox: list[float], pad: float = 1.0) -> str:
    """The page's own text inside ``bbox`` grown by ``pad`` points (the margin the viewer and
    the PNGs draw around a box; PDFium's bounded extraction drops a glyph that pokes out of
    the rectangle): what a test reads to check that a highlight covers the quoted words."""
    with open_document(Path(pdf)) as doc:
        pg = doc[page - 1]
        try:
            tp = pg.get_textpage()
            try:
                x0, y0, x1, y1 = bbox
                return tp.get_text_bounded(left=x0 - pad, bottom=y0 - pad, right=x1 + pad,
                                           top=y1 + pad)
            finally:
                tp.close()
        finally:
            pg.close()


# ------------------------------------------------------------------------- result decoration


def stored_quote_boxes(boxes: list[dict], passage: str, quote: str | None) -> list[dict]:
    """The stored line boxes of a passage (``[{page, bbox, start, end}]``, see schema v3)
    that ``quote`` covers: all of them without a quote, [] when the quote is not in the passage
    text (whitespace folded), so the caller falls back to finding it in the PDF."""
    if not boxes:
        return []
    if not quote:
        return [{"page": b["page"], "bbox": b["bbox"]} for b in boxes]
    at, end = _find_folded(passage or "", quote)
    if at < 0:
        return []
    return [{"page": b["page"], "bbox": b["bbox"]} for b in boxes
            if int(b.get("start", 0)) < end and int(b.get("end", at + 1)) > at]


def _find_folded(text: str, quote: str) -> tuple[int, int]:
    """(start, end) of ``quote`` in ``text`` with runs of whitespace matching any whitespace;
    (-1, -1) when absent."""
    at = text.find(quote)
    if at >= 0:
        return at, at + len(quote)
    import re

    words = quote.split()
    if not words:
        return -1, -1
    m = re.search(r"\s+".join(re.escape(w) for w in words), text)
    return (m.start(), m.end()) if m else (-1, -1)


def attach_boxes(wiki: Path, result: dict, stored=None) -> dict:
    """Give every source and claim passage of a chat/trace ``result`` its ``boxes`` (from the
    boxes stored with its passage at ingest when ``stored`` -- a function ``passage ids ->
    {id: boxes}``, e.g. ``functools.partial(stores.sqlite.passage_boxes, settings)`` -- has
    them and the quote is inside the passage; else found from ``quote``, else the passage text,
    in the PDF; boxes an item already carries are kept), and a contradicted claim the boxes of
    its evidence.
    Never fails the answer: a paper missing from raw/ or an unreadable page gives ``[]``."""
    memo: dict[tuple, list[dict]] = {}
    saved: dict[str, list[dict]] = {}
    if stored is not None:
        ids = [s.get("passage_id") for s in result.get("sources") or [] if isinstance(s, dict)]
        for c in result.get("claims") or []:
            if isinstance(c, dict):
                for key in ("evidence", "passages"):
                    items = c.get(key)
                    items = [items] if isinstance(items, dict) else items or []
                    ids += [i.get("passage_id") for i in items if isinstance(i, dict)]
        try:
            saved = stored([i for i in ids if i]) or {}
        except Exception:  # the store is an optimisation here; the PDF still answers
            saved = {}

    def boxes_for(item: dict) -> list[dict]:
        if isinstance(item.get("boxes"), list) and item["boxes"]:
            return item["boxes"]  # boxes the item already carries win
        pid = item.get("passage_id")
        if pid in saved:
            got = stored_quote_boxes(saved[pid], item.get("passage") or item.get("text") or "",
                                     item.get("quote"))
            if got:
                return got
        paper = item.get("paper")
        text = item.get("quote") or item.get("passage") or item.get("text") or ""
        if not paper or not text:
            return []
        k = (paper, item.get("page"), text)
        if k not in memo:
            memo[k] = _safe_boxes(wiki, paper, item.get("page"), text)
        return memo[k]

    for s in result.get("sources") or []:
        if isinstance(s, dict):
            s["boxes"] = boxes_for(s)
    for c in result.get("claims") or []:
        if not isinstance(c, dict):
            continue
        first: list[dict] = []
        for key in ("evidence", "passages"):
            items = c.get(key)
            if isinstance(items, dict):
                items = [items]
            for item in items or []:
                if isinstance(item, dict) and item.get("paper"):
                    item["boxes"] = boxes_for(item)
                    if not first and item["boxes"]:
                        first = item["boxes"]
        if c.get("verdict") == "contradicted":
            c["boxes"] = first
    return result


def _safe_boxes(wiki: Path, paper: str, page, text: str) -> list[dict]:
    from ..errors import EpistemeError
    from .render import paper_pdf

    try:
        pdf = paper_pdf(wiki, paper)
        pg = int(page) if page not in (None, "") else None
        return quote_boxes(pdf, pg, text)
    except (EpistemeError, ValueError, OSError):
        return []
    except Exception as e:  # a PDFium failure on one page must not lose the answer
        import sys

        print(f"episteme: highlight boxes for {paper} failed: {e}", file=sys.stderr)
        return []
