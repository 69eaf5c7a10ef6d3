"""PDF → logical sections: the deterministic first half of ingest (pypdf opens, validates and
decrypts; PDFium reads the characters when pypdfium2 is installed, see :mod:`episteme.pdf.text`).

``split_pdf`` validates the file, extracts repaired lines (:mod:`episteme.pdf.text`), finds the
headings — from the PDF outline when there is one, checked against and completed by the printed
text (:mod:`episteme.pdf.headings`) — and cuts the text into :class:`PaperSection` objects that
keep their page span and per-page character offsets, so a passage can be traced to its page.
References and appendices are their own, flagged sections so an answer is never traced to a
bibliography entry by accident.

Why one module: validation, reconciling the outline with the printed headings and cutting the
text into sections are one pass over one open document (:func:`split_pdf`), and the title/author
guesses read the same first-page lines; reading lines and the heading rules are already apart
(:mod:`episteme.pdf.text`, :mod:`episteme.pdf.headings`).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EpistemeError
from ..paper import PaperSection
from .headings import (
    APPENDIX_NUMBERED,
    KNOWN,
    NUMBERED,
    Heading,
    detect_headings,
    number_parts,
)
from .objects import PdfObject, find_objects, line_bbox
from .pdfium_text import char_engine, mark_underlined, pdfium_page_lines, pdfium_rules
from .text import (
    MAX_PAGE_CONTENT_BYTES,
    Line,
    PageTooLarge,
    content_bytes,
    drop_furniture,
    drop_line_numbers,
    fix_column_order,
    join_lines,
    normalize_text,
    page_lines,
    vocabulary,
)

DEFAULT_MAX_BYTES = 200 * 1024 * 1024


class PdfError(EpistemeError):
    """A PDF that cannot be split; ``kind`` says why (not_pdf, corrupt, encrypted, no_text,
    empty, too_large) so callers can map it to a status without parsing the message."""

    def __init__(self, kind: str, message: str):
        super().__init__(message, details={"kind": kind})
        self.kind = kind


@dataclass
class SplitResult:
    title: str
    authors: list[str]
    pages: int
    sections: list[PaperSection]
    used_outline: bool
    warnings: list[str] = field(default_factory=list)
    objects: list[PdfObject] = field(default_factory=list)
    meta: dict = field(default_factory=dict)  # year, venue, arxiv_id, doi (pdfmeta)


def check_pdf_bytes(data: bytes, max_bytes: int | None = DEFAULT_MAX_BYTES) -> None:
    """Validate by content before anything is stored: header, end marker, size."""
    if not data:
        raise PdfError("empty", "the file is empty")
    if max_bytes is not None and len(data) > max_bytes:
        raise PdfError(
            "too_large", f"the file is {len(data)} bytes, over the limit of {max_bytes} bytes"
        )
    if b"%PDF-" not in data[:1024]:
        raise PdfError("not_pdf", "not a PDF: no %PDF- header in the first 1024 bytes")
    if b"%%EOF" not in data[-4096:]:
        raise PdfError("corrupt", "the PDF is truncated or corrupt: no %%EOF marker at the end")


def open_pdf(data: bytes, max_pages: int | None = None):
    """A ``pypdf.PdfReader`` over ``data`` (checked by :func:`check_pdf_bytes` first), or a
    :class:`PdfError` saying why not: encrypted, corrupt, empty, or over ``max_pages``.  The
    splitter and the server's upfront check open PDFs the same way, so they refuse the same."""
    import io
    import logging

    import pypdf

    # pypdf logs every repaired xref entry; a damaged file is reported by PdfError or not at all
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception as e:  # unsupported algorithm, missing crypto backend
                raise PdfError("encrypted", f"the PDF is encrypted and cannot be opened ({e})") from e
            if not ok:
                raise PdfError(
                    "encrypted", "the PDF is encrypted with a password; decrypt it first"
                )
        n = len(reader.pages)
    except PdfError:
        raise
    except Exception as e:
        raise PdfError("corrupt", f"the PDF is corrupt and cannot be read ({type(e).__name__})") from e
    if n == 0:
        raise PdfError("empty", "the PDF has no pages")
    if max_pages and n > max_pages:
        raise PdfError("too_large", f"the PDF has {n} pages, over the limit of {max_pages}")
    return reader


def _outline(reader) -> list[tuple[str, int, int]]:
    """Flatten the outline to (title, level, page) entries; broken entries are skipped."""
    out: list[tuple[str, int, int]] = []

    def walk(items, level: int) -> None:
        for it in items:
            if isinstance(it, list):
                walk(it, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(it) + 1
                title = normalize_text(str(it.title or "")).strip()
            except Exception:
                continue
            if title and page >= 1:
                out.append((title, level, page))

    try:
        walk(reader.outline, 1)
    except Exception:
        return []
    return out


@functools.lru_cache(maxsize=65536)
def norm_title(s: str) -> str:
    """Case, numbering and punctuation folded away, for matching titles (cached: the outline
    locator compares every line of a page with every entry on it)."""
    s = normalize_text(s).lower()
    s = re.sub(r"^\s*(appendix\s+)?([a-h]|\d{1,2})((\.\d{1,2})*)\.?\s+", "", s)
    return re.sub(r"[^a-z0-9]+", "", s)


def _find_printed(
    want: str, page: int, lines: list[Line], by_page: dict[int, list[int]], after: int,
    detected: set[int],
) -> int | None:
    """The line that prints outline title ``want`` on or near ``page``.

    Candidates are lines whose text (or run-in lead) matches the title, possibly wrapped onto
    the next line.  A line the text detector already took for a heading wins; then a line with
    heading typography; then the first match in reading order after the previous entry.
    """
    best: tuple[int, int] | None = None
    for rank_page, p in enumerate((page, page + 1, page - 1)):
        for i in by_page.get(p, []):
            ln = lines[i]
            got = norm_title(ln.text)
            joined = got + (norm_title(lines[i + 1].text) if i + 1 < len(lines) else "")
            match = got == want or (
                len(got) >= 4 and want.startswith(got) and joined.startswith(want)
            )
            if not match and not (ln.lead and norm_title(ln.lead) == want):
                continue
            score = 0
            if i in detected:
                score -= 100
            if ln.bold or ln.text.strip().isupper():
                score -= 10
            if i <= after:
                score += 5
            score += rank_page * 20 + (0 if match else 3)
            if best is None or score < best[0]:
                best = (score, i)
    return None if best is None else best[1]


def _locate_outline(
    entries: list[tuple[str, int, int]], lines: list[Line], warnings: list[str],
    detected: set[int],
) -> list[Heading]:
    """Find each outline entry's printed heading line; restore its printed numbering."""
    by_page: dict[int, list[int]] = {}
    for i, ln in enumerate(lines):
        by_page.setdefault(ln.page, []).append(i)
    heads: list[Heading] = []
    last = -1
    for title, level, page in entries:
        want = norm_title(title)
        if not want:
            continue
        found = _find_printed(want, page, lines, by_page, last, detected)
        if found is None:
            warnings.append(f"outline entry {title!r} (page {page}) not found in the text")
            continue
        ln = lines[found]
        printed = ln.text.strip()
        span = 1
        run_rest = ""
        if ln.lead and norm_title(ln.lead) == want and ln.lead != printed:
            printed, run_rest = ln.lead, printed[len(ln.lead):].strip()  # run-in heading
        elif (norm_title(printed) != want and found + 1 < len(lines)
              and want.startswith(norm_title(printed))):
            span = 2  # wrapped over two lines
            printed = f"{printed} {lines[found + 1].text.strip()}"
        pm = APPENDIX_NUMBERED.match(printed) or NUMBERED.match(printed)
        om = APPENDIX_NUMBERED.match(title) or NUMBERED.match(title)
        if pm and norm_title(pm.group("title")) == want:
            number, shown = pm.group("num"), pm.group("title")
        elif om:
            number, shown = om.group("num"), om.group("title")
        else:
            number, shown = "", (printed if norm_title(printed) == want else title)
        lvl = len(number_parts(number)) if number else level
        heads.append(Heading(found, span, number, shown.strip().rstrip("."), lvl, run_rest,
                             source="outline"))
        last = found
    return heads


def _merge(outline: list[Heading], text: list[Heading]) -> list[Heading]:
    """Outline headings first; printed headings the outline lacks are added."""
    taken = {h.index for h in outline}
    numbers = {h.number for h in outline if h.number}
    titles = {(norm_title(h.title), h.number) for h in outline}
    out = list(outline)
    for h in text:
        if h.index in taken or (h.number and h.number in numbers):
            continue
        if (norm_title(h.title), h.number) in titles:
            continue
        out.append(h)
    return sorted(out, key=lambda h: h.index)


_REFS = re.compile(r"^(references|bibliography|literature cited|works cited)$", re.I)


def _kinds(heads: list[Heading]) -> list[str]:
    kinds = []
    state = "body"
    for h in heads:
        t = h.title.lower().strip()
        if _REFS.match(t):
            state = "references"
            kinds.append("references")
            continue
        if (
            t.startswith(("appendix", "appendices", "supplementary"))
            or re.match(r"^[A-H](\.\d+)*$", h.number)
            or state == "references"
        ):
            state = "appendix"
        if t == "abstract" and state == "body":
            kinds.append("abstract")
            continue
        kinds.append(state if state != "references" else "appendix")
    return kinds


def _info(reader) -> dict[str, str]:
    """The document information dictionary as plain strings ({} when unreadable)."""
    try:
        meta = reader.metadata or {}
        return {str(k): normalize_text(str(v)) for k, v in meta.items() if v is not None}
    except Exception:
        return {}


_TITLE_ENDS = re.compile(r"^(?i:(?:an? )?(?:thesis|dissertation|report)\b|submitted\b)|"
                         r"^[Bb]y\s+[A-Z][a-z]")


def _guess_title(reader, lines: list[Line]) -> str:
    meta = None
    try:
        meta = reader.metadata
    except Exception:
        meta = None
    t = str((meta.title or meta.get("/Title") if meta else "") or "").strip()
    # a template's placeholder ("Title", "Manuscript") or a LaTeX length left in ("0.6cm")
    t = re.sub(r"\s+-?\d+(?:\.\d+)?(?:cm|mm|pt|in|em|ex)$", "", t)
    if len(t) > 3 and not re.search(r"\.(dvi|pdf|tex|docx?)$|^untitled|^microsoft word|"
                                    r"^(?:title|paper|manuscript|document|article|slide \d+)$",
                                    t, re.I):
        return normalize_text(t)
    first = [ln for ln in lines if ln.page == 1][:40]
    # the largest type on page 1 that reads like a title (logos and drop caps are short)
    wordy = [ln for ln in first if len(ln.text.split()) >= 3] or first
    if not wordy:
        return ""
    big = max(ln.size for ln in wordy)
    picked = []
    for ln in first:
        if picked and _TITLE_ENDS.match(ln.text.strip()):
            break  # "A THESIS SUBMITTED TO ...", "by Ann Author": set as large as the title
        if abs(ln.size - big) < 0.5:
            picked.append(ln.text.strip())
        elif picked:
            break
    # a stray mark between the title's lines (". Database Maintenance") is no part of it
    return re.sub(r"(?<=\w)\s+[.·•,;]\s+(?=\w)", " ", " ".join(picked))[:300]


_AFFIL = re.compile(
    r"universit|institut|department|school|college|laborator|\blab\b|research|google|microsoft|"
    r"\binc\b|corporation|academy|centre|center|brain|deepmind|openai|facebook|meta\b|allen",
    re.I,
)
_NAME = re.compile(r"^(?=[^\W\d_])[\w'’.\-]+(?:\s+(?=[^\W\d_])[\w'’.\-]+){1,4}$")
#: lower-case particles of family names ("Ivo H. M. van Stokkum", "Elio A. de la Cruz")
_PARTICLES = {"van", "von", "de", "da", "del", "der", "den", "la", "le", "di", "du", "dos",
              "das", "bin", "al", "ter", "ten", "y"}
#: words that name an organisation, a series or a publisher, never a person ("NiuTrans Co.",
#: "Samaya AI", "Contemporary Mathematics", "IEEE")
_NOT_PERSON = re.compile(
    r"\b(?:co|inc|ltd|llc|gmbh|corp|plc|s\.?a|ieee|acm|mathematics|physics|journal|letters|"
    r"proceedings|transactions|review|press|society|association|conference|series|volume|"
    r"technologies|systems|labs?|group|team|foundation|preprint|manuscript|draft|report|board|"
    r"bank|reserve|council|agency|ministry|office|bureau|committee|fund|thesis|note|author|"
    r"administrator|user|owner|studies|degree|master|science|rights|reserved|fulfil+ment|"
    r"requirements|university|department|copyright|of|the|for|licen[cs]e|attribution)\b\.?",
    re.I)
#: footnote and correspondence marks printed after a name ("Alec Radford*", "Meera Nanjundan ⇑",
#: "Kayla Thomason1☯")
_NAME_MARKS = "∗*†‡§¶⇑☯✉✝♯♮#"


def _pair_names(part: str) -> list[str]:
    """'Jacob Devlin Ming-Wei Chang Kenton Lee' (names set apart only by space) → pairs.

    Only when every word is capitalised, none is an initial and the count is even and above
    three; anything else is returned as one name and judged by the name pattern."""
    words = part.split()
    if (
        len(words) >= 4
        and len(words) % 2 == 0
        and all(w[0].isupper() and not w.endswith(".") and len(w) > 1 for w in words)
    ):
        return [f"{a} {b}" for a, b in zip(words[::2], words[1::2], strict=True)]
    return [part]


def _guess_authors(reader, front: list[Line], title: str) -> list[str]:
    try:
        meta = reader.metadata
        # the /Author entry as stored when pypdf's accessor declines its type
        a = str((meta.author or meta.get("/Author") if meta else "") or "").strip()
    except Exception:
        a = ""
    meta_names: list[str] = []
    if a and len(a) > 2:
        parts = re.split(r"\s*(?:,|;|\band\b|&)\s*", normalize_text(a))
        meta_names = [clean_name(p) for p in parts if clean_name(p)]
        meta_names = [n for n in meta_names
                      if _NAME.match(n) and _person_like(n) and not _AFFIL.search(n)]
    names = _printed_authors(front, title)
    if meta_names:
        # the printed names when they are the same people (they keep middle initials the
        # metadata drops: "Daniel S. Weld"), all of them when the metadata names only the
        # first few (a submitting author); else the metadata, which the author typed
        last = [n.split()[-1].lower() for n in meta_names]
        if [n.split()[-1].lower() for n in names[: len(last)]] == last:
            return names if len(names) <= 3 * len(last) + 8 else names[: len(last)]
        printed_last = {n.split()[-1].lower() for n in names}
        firsts = [n.split()[0].lower() for n in meta_names]
        if len(names) <= 3 * len(last) + 8 and (all(n in printed_last for n in last)
                                                 or all(n in printed_last for n in firsts)):
            # the metadata names some of the printed authors (a corresponding one), or
            # writes them family name first ("Shahu Sneha" for "Sneha Shahu")
            return names
        return meta_names
    return names


def _person_like(name: str) -> bool:
    """Not an organisation's or a series' name: no company or publication word, and no short
    all-capital word beside ordinary capitalised ones ("Samaya AI"; "DANIEL LITT", all in
    capitals, and "Weinan E", one letter, are people)."""
    if _NOT_PERSON.search(name):
        return False
    words = name.replace(".", " ").split()
    acronym = [w for w in words if len(w) in (2, 3) and w.isupper() and w.isalpha()]
    return not (acronym and any(not w.isupper() for w in words))


def clean_name(name: str) -> str:
    """A name without the footnote or correspondence marks printed after it, an ORCID in
    brackets, an e-mail note glued to it ("François de SoyresEmail: ...") or degrees and
    titles ("Masaya Misaki Ph.D.", "Dr. Saeed Murtaza")."""
    name = re.sub(r"\[\d{4}-\d{4}-\d{4}-\d{3}[\dX]\]", "", name)
    name = re.sub(r"^(?:(?:dr|prof|professor|mr|mrs|ms)\.?\s+)+", "", name.strip(), flags=re.I)
    name = re.sub(r"(?:[\s,]+(?:ph\.?\s?d|m\.?\s?d|m\.?\s?sc|b\.?\s?sc|m\.?\s?phil|mbbs|"
                  r"m\.?p\.?h|d\.?\s?phil|frs)\.?)+$", "", name, flags=re.I)
    name = re.sub(r"(?:e-?mail|email)\b.*$", "", name, flags=re.I)
    return re.sub(rf"[{_NAME_MARKS}\d,]+$", "", re.sub(r"\s+", " ", name).strip()).strip()


def _marks_apart(ln: Line) -> str:
    """The line's text with its superscript runs (affiliation letters and numbers, set smaller:
    "Xiao Fan^a,b,1") read as separators, so they are not glued to the names."""
    if len(ln.runs) < 2:
        return ln.text.strip()
    parts = []
    for r in ln.runs:
        small = (r.size < 0.8 * ln.size and len(r.text.strip()) <= 8 and r.y is not None
                 and ln.y is not None and r.y - ln.y > 0.15 * ln.size)  # raised, not caps
        parts.append(" , " if small else r.text)
    return re.sub(r"\s+", " ", normalize_text("".join(parts))).strip()


def _printed_authors(front: list[Line], title: str) -> list[str]:
    """Names on the lines under the title.  Once a line has given names, only lines set in its
    type size give more: a paper sets its authors in one style and its affiliations in another
    (smaller), where place names read like people ("Ann Arbor", "École Polytechnique")."""
    names: list[str] = []
    style: float | None = None
    carry = ""
    # the names come after the title: a journal's header above it ("Molecular Biology") is not
    # an author, and would set the wrong type size for the names
    key = norm_title(title)
    hits = [bool(key and norm_title(ln.text) and norm_title(ln.text) in key) for ln in front[:40]]
    start = 0
    if any(hits):  # after the title's own lines (its first block of lines, not a later label)
        start = hits.index(True)
        while start < len(hits) and hits[start]:
            start += 1
    for ln in front[start:40]:
        t = ln.text.strip()
        if norm_title(t) and norm_title(t) in norm_title(title):
            continue
        if _AFFIL.search(t) or "@" in t or re.search(r"\d{2,}", t):
            continue
        t = _marks_apart(ln)
        if style is not None and abs(ln.size - style) > 0.6:
            continue
        before = len(names)
        if carry:  # a name broken at the line end: "..., Scott" / "Shenker, Howard Sturgis"
            t = f"{carry} {t}"
            carry = ""
        # footnote marks separate names as well as commas and "and" do
        parts = re.split(rf"\s*(?:,|;|\band\b|&|[{_NAME_MARKS}\d]+)\s*", t)
        if len(parts) > 1 and re.fullmatch(r"[A-Z][a-z]+", parts[-1].strip()):
            carry = parts.pop().strip()
        for part in parts:
            part = re.sub(r"\s+", " ", part).strip()
            for name in _pair_names(clean_name(part)):
                first = name.split()[0] if name else ""
                if first.isupper() and len(first) <= 3:  # "QC H3C 3J7", "CA 94043": addresses
                    continue
                if (_NAME.match(name)
                        and all(w[0].isupper() or w in _PARTICLES for w in name.split())
                        and name.split()[0][0].isupper() and name.split()[-1][0].isupper()
                        and not _AFFIL.search(name) and _person_like(name)
                        and name not in names):
                    names.append(name)
        if style is None and len(names) > before:
            style = ln.size
    return names[:30]


def _pdfium_document(data: bytes):
    """PDFium's view of the same bytes, or None when PDFium cannot open what pypdf could (then
    the pypdf visitor reads the characters)."""
    import pypdfium2 as pdfium

    from .render import PDFIUM_LOCK

    try:
        with PDFIUM_LOCK:  # PDFium is not thread-safe, opening and closing included
            return pdfium.PdfDocument(data)
    except Exception:
        return None


def _close_pdfium(pdfdoc) -> None:
    from .render import PDFIUM_LOCK

    if pdfdoc is not None:
        with PDFIUM_LOCK, contextlib.suppress(Exception):
            pdfdoc.close()


def _read_page(page, no: int, pdfdoc, rotated: list[str] | None,
               rules: list | None = None) -> list[Line]:
    """One page's lines: from PDFium's characters when a PDFium document is open, else from
    pypdf's visitor.  The content-stream cap is checked first either way (a page over it is
    never parsed)."""
    if pdfdoc is None:
        return page_lines(page, no, rotated)
    size = content_bytes(page)
    if size > MAX_PAGE_CONTENT_BYTES:
        raise PageTooLarge(no, size)
    from .render import PDFIUM_LOCK

    with PDFIUM_LOCK:  # PDFium is not thread-safe; the server renders pages concurrently
        pg = pdfdoc[no - 1]
        tp = pg.get_textpage()
        try:
            lines = pdfium_page_lines(tp, no, rotated)
            if rules is not None:
                rules.append(pdfium_rules(pg))
            return lines
        finally:
            tp.close()
            pg.close()


def _read_pages(reader, pdfdoc, pages: list, heights: list, warnings: list, rotated: list,
                oversized: list, rules: list | None = None) -> None:
    """Every page's lines (with its height) into ``pages``/``heights``; a page that cannot be
    read becomes an empty page and a warning (one over the content cap is also recorded in
    ``oversized``); ``rules`` gets each page's drawn rules (PDFium only, [] otherwise)."""
    for no, page in enumerate(reader.pages, start=1):
        found: list = []
        try:
            box = page.mediabox
            got = _read_page(page, no, pdfdoc, rotated if no == 1 else None, found)
            pages.append(fix_column_order(got, float(box.width)))
            heights.append(float(box.height))
        except PageTooLarge as e:
            oversized.append(e)
            warnings.append(f"page {no}: not read: its content stream is {e.size / 1048576:.1f} MB, "
                            f"over the {MAX_PAGE_CONTENT_BYTES >> 20} MB limit per page")
            pages.append([])
            heights.append(792.0)
        except Exception as e:
            warnings.append(f"page {no}: text extraction failed ({type(e).__name__})")
            pages.append([])
            heights.append(792.0)
        if rules is not None:
            rules.append(found[0] if found else [])


def split_pdf(
    path: str | Path,
    *,
    use_outline: bool = True,
    max_pages: int | None = None,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
) -> SplitResult:
    """Split the PDF at ``path`` into logical sections (see module docstring)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise PdfError("not_pdf", f"cannot read {path}: {e.strerror or e}") from e
    check_pdf_bytes(data, max_bytes)
    reader = open_pdf(data, max_pages)
    n_pages = len(reader.pages)
    pages: list[list[Line]] = []
    heights: list[float] = []
    warnings: list[str] = []
    rotated: list[str] = []
    oversized: list[PageTooLarge] = []
    rules: list[list[tuple[float, float, float]]] = []
    pdfdoc = _pdfium_document(data) if char_engine() == "pdfium" else None
    if pdfdoc is not None and len(pdfdoc) != n_pages:  # the two read a damaged file apart
        _close_pdfium(pdfdoc)
        pdfdoc = None
    try:
        _read_pages(reader, pdfdoc, pages, heights, warnings, rotated, oversized, rules)
    finally:
        _close_pdfium(pdfdoc)
    # a page of prose holds thousands of letters; a scan with a one-line stamp or cover note
    # per page still has no usable text layer
    letters = sum(sum(c.isalnum() for c in ln.text) for p in pages for ln in p)
    if letters < 60 * n_pages and oversized:
        which = ", ".join(str(e.page_no) for e in oversized[:10]) + (", ..." if len(oversized) > 10 else "")
        raise PdfError(
            "too_large",
            f"the PDF's text was not read: page(s) {which} have a content stream over the "
            f"{MAX_PAGE_CONTENT_BYTES >> 20} MB limit per page (largest "
            f"{max(e.size for e in oversized) / 1048576:.1f} MB) and were skipped, and the other "
            "pages hold too little text")
    if letters < 60 * n_pages:
        raise PdfError("no_text", "the PDF has no text layer (scanned?); run OCR first")
    pages = drop_line_numbers(pages)
    for page_lines_, page_rules in zip(pages, rules, strict=False):
        mark_underlined(page_lines_, page_rules)  # on the lines without their margin numbers
    first_pages = [ln.text for p in pages[:2] for ln in p]  # running heads still in
    pages = drop_furniture(pages, heights)
    lines = [ln for p in pages for ln in p]

    text_heads = detect_headings(lines)
    title = _guess_title(reader, lines)
    used_outline = False
    heads = text_heads
    if use_outline:
        entries = _outline(reader)
        if entries:
            # an outline entry that repeats the paper's title is not a section
            entries = [e for e in entries if norm_title(e[0]) != norm_title(title)]
            located = _locate_outline(
                entries, lines, warnings, {h.index for h in text_heads}
            )
            if located:
                used_outline = True
                heads = _merge(located, text_heads)
    kinds = _kinds(heads) if heads else []
    at = next((j for j, k in enumerate(kinds) if k == "references"), None)
    refs = range(0)
    if at is not None:
        refs = range(heads[at].index, heads[at + 1].index if at + 1 < len(heads) else len(lines))
    head_lines = {k for h in heads for k in range(h.index, h.index + max(h.span, 1))}
    objects = find_objects(lines, dict(enumerate(heights, start=1)), refs=refs,
                           headings=head_lines)
    skip = {k for o in objects for k in o.lines}
    sections = _build_sections(lines, heads, skip)
    _assign_sections(objects, heads, sections)
    front = lines[: heads[0].index] if heads else lines[:30]
    if len(front) < 3:  # a heading read at the top of page 1 ("RESEARCH ARTICLE |", a box)
        front = [ln for ln in lines if ln.page == 1][:40]
    from .meta import extract_meta

    return SplitResult(
        title=title,
        authors=_guess_authors(reader, front, title),
        meta=extract_meta(_info(reader), first_pages, rotated),
        pages=n_pages,
        sections=sections,
        used_outline=used_outline,
        warnings=warnings,
        objects=objects,
    )


def _assign_sections(objects: list[PdfObject], heads: list[Heading],
                     sections: list[PaperSection]) -> None:
    """Each object belongs to the section it is printed in (by its first line's position)."""
    if not heads:
        return
    offset = 1 if len(sections) > len(heads) else 0  # a front-matter section comes first
    starts = [h.index for h in heads]
    for o in objects:
        j = bisect.bisect_right(starts, o.anchor) - 1
        sec = sections[j + offset] if j >= 0 else sections[0]
        o.section = f"{sec.number} {sec.title}".strip() if sec.title else "front matter"


def _section(lines: list[Line], vocab: set[str], number: str, title: str, level: int, kind: str,
             first_text: str, start: int, end: int, page: int,
             skip: set[int] | frozenset = frozenset(),
             first_box: list[float] | None = None) -> PaperSection:
    kept = [ln for k, ln in enumerate(lines[start:end], start=start) if k not in skip]
    texts = ([first_text] if first_text else []) + [ln.text for ln in kept]
    pages_of = ([page] if first_text else []) + [ln.page for ln in kept]
    boxes = ([first_box or [0.0, 0.0, 0.0, 0.0]] if first_text else []) + [
        line_bbox(ln) for ln in kept]
    text, offsets = join_lines(texts, vocab)
    breaks: list[tuple[int, int]] = []
    spans: list[tuple[int, int, int, list[float]]] = []
    for k, (off, p) in enumerate(zip(offsets, pages_of, strict=True)):
        if not breaks or breaks[-1][1] != p:
            breaks.append((off, p))
        nxt = offsets[k + 1] if k + 1 < len(offsets) else len(text)
        spans.append((off, max(off + 1, nxt), p, boxes[k]))
    if not breaks:
        breaks = [(0, page)]
    return PaperSection(number, title, level, kind, breaks[0][1], breaks[-1][1], text, breaks,
                        line_boxes=spans)


def _build_sections(lines: list[Line], heads: list[Heading],
                    skip: set[int] | frozenset = frozenset()) -> list[PaperSection]:
    """Cut ``lines`` at the headings; lines in ``skip`` (captions, table cells, figure labels,
    footnotes) are left out, so a paragraph interrupted by a float reads on across it."""
    vocab = vocabulary(lines)
    out: list[PaperSection] = []
    if not heads:
        return [_section(lines, vocab, "", "", 1, "body", "", 0, len(lines), lines[0].page,
                         skip)]
    if heads[0].index > 0:
        out.append(_section(lines, vocab, "", "", 1, "front", "", 0, heads[0].index,
                            lines[0].page, skip))
    kinds = _kinds(heads)
    for j, h in enumerate(heads):
        end = heads[j + 1].index if j + 1 < len(heads) else len(lines)
        start = min(h.index + h.span, end)
        page = lines[h.index].page
        sec = _section(lines, vocab, h.number, h.title, h.level, kinds[j], h.rest, start, end,
                       page, skip, first_box=line_bbox(lines[h.index]) if h.rest else None)
        sec.page_start = min(sec.page_start, page)
        if sec.page_breaks and sec.page_breaks[0][1] != page and not sec.text:
            sec.page_breaks = [(0, page)]
        out.append(sec)
    return out


def locate_quote(path: str | Path, page: int, quote: str) -> list[dict]:
    """Where ``quote`` is printed on ``page`` (1-based) of the PDF at ``path``, and on the next
    page when it runs over: ``[{page, bbox}]`` in PDF points, one box per printed line (what the
    evidence viewer highlights).  ``[]`` when it is not found there."""
    from .objects import quote_boxes

    data = Path(path).read_bytes()
    reader = open_pdf(data)
    pdfdoc = _pdfium_document(data) if char_engine() == "pdfium" else None
    lines: list[Line] = []
    try:
        for no in (page, page + 1):
            if 1 <= no <= len(reader.pages):
                pg = reader.pages[no - 1]
                with contextlib.suppress(PageTooLarge):  # its text was never read: nothing to find
                    lines += fix_column_order(_read_page(pg, no, pdfdoc, None),
                                              float(pg.mediabox.width))
    finally:
        _close_pdfium(pdfdoc)
    return quote_boxes(lines, quote)


__all__ = [
    "PaperSection",
    "PdfError",
    "SplitResult",
    "check_pdf_bytes",
    "locate_quote",
    "open_pdf",
    "split_pdf",
    "KNOWN",
]
