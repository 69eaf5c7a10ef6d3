"""The project's own minimal PDF writer, for test fixtures and the example paper.

It writes raw PDF objects by hand — standard Type1 fonts (Times and Helvetica, regular and
bold, WinAnsi encoding), absolutely positioned text lines, one or two columns — so the tests
control exactly what a splitter sees: numbered headings, running headers and footers, page
numbers, words hyphenated at line ends, arXiv's rotated margin stamp.  pypdf is used only for
what is tedious to hand-write: adding an outline (bookmarks) and encrypting a copy.

Widths are estimated (an average glyph width per font), which is plenty for line breaking:
text extraction does not care whether a line is typographically perfect.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass, field
from pathlib import Path

PAGE_W, PAGE_H = 612.0, 792.0  # US Letter

FONTS = {
    "F1": "Times-Roman",
    "F2": "Times-Bold",
    "F3": "Helvetica",
    "F4": "Helvetica-Bold",
    "F5": "Times-Italic",
}
_AVG_WIDTH = {"Times-Roman": 0.47, "Times-Bold": 0.51, "Helvetica": 0.53,
              "Helvetica-Bold": 0.58, "Times-Italic": 0.46}


@dataclass
class Section:
    """One heading and its paragraphs; ``number`` may be "" for an unnumbered heading."""

    number: str
    title: str
    paragraphs: list[str] = field(default_factory=list)
    level: int = 1


@dataclass
class Paper:
    title: str
    authors: list[str]
    affiliations: list[str]
    abstract: str
    sections: list[Section]
    references: list[str] = field(default_factory=list)
    appendix: list[Section] = field(default_factory=list)


@dataclass
class Layout:
    """Typesetting options; every combination is meant to be split correctly."""

    columns: int = 1
    family: str = "Times"  # or "Helvetica"
    body_size: float = 10.0
    running_header: str | None = None
    page_numbers: bool = True
    stamp: str | None = None  # rotated text in the left margin of page 1 (arXiv style)
    hyphenate: bool = True
    outline: bool = False
    outline_numbers: bool = True  # whether outline titles keep "3.2" (some tools drop it)
    interleave: bool = False  # write two-column text row by row (left, right, left, ...)
    outline_title: bool = False  # start the outline with the paper's title (some tools do)
    ligatures: bool = True  # print "fi"/"fl" with ligature glyphs
    ieee: bool = False  # "II. CAPITALS" sections in the body font, italic "A. Title" subsections
    line_numbers: bool = False  # Word/bioRxiv continuous line numbers in the left margin
    word_headings: bool = False  # no numbers: level 1 large regular type, level 2 underlined
    bold_headings: bool = False  # no numbers: every heading bold at body size (Nature, bioRxiv)


# Codes 1 and 2 are re-mapped to the fonts' "fi"/"fl" ligature glyphs (as TeX output uses
# them), so extraction yields U+FB01/U+FB02 and the splitter's NFKC repair is exercised.
LIGATURES = {"fi": "\x01", "fl": "\x02"}


def pdf_string(text: str, *, ligatures: bool = False) -> bytes:
    """A PDF literal string in WinAnsi (cp1252), with ( ) \\ escaped."""
    if ligatures:
        for pair, code in LIGATURES.items():
            text = text.replace(pair, code)
    raw = text.encode("cp1252", errors="replace")
    out = bytearray(b"(")
    for b in raw:
        if b in b"()\\":
            out += b"\\" + bytes([b])
        elif b < 32 or b > 126:
            out += b"\\%03o" % b
        else:
            out.append(b)
    out += b")"
    return bytes(out)


def write_pdf(pages: list[bytes], *, compress: bool = True, info_title: str | None = None,
              media: tuple[float, float] = (PAGE_W, PAGE_H)) -> bytes:
    """Serialise pages (content streams) into a complete PDF with an xref table."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font_ids = {}
    for key, base in FONTS.items():
        font_ids[key] = add(
            b"<< /Type /Font /Subtype /Type1 /BaseFont /" + base.encode()
            + b" /Encoding << /Type /Encoding /BaseEncoding /WinAnsiEncoding"
            b" /Differences [1 /fi /fl] >> >>"
        )
    font_res = b" ".join(b"/%s %d 0 R" % (k.encode(), v) for k, v in font_ids.items())
    pages_id = len(objects) + 1 + 2 * len(pages)  # reserved below
    page_ids = []
    for content in pages:
        data = zlib.compress(content) if compress else content
        filt = b" /Filter /FlateDecode" if compress else b""
        cid = add(b"<< /Length %d%s >>\nstream\n" % (len(data), filt) + data + b"\nendstream")
        page_ids.append(add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %g %g] /Contents %d 0 R "
            b"/Resources << /Font << %s >> >> >>" % (pages_id, media[0], media[1], cid, font_res)
        ))
    kids = b" ".join(b"%d 0 R" % i for i in page_ids)
    assert add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(pages))) == pages_id
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    info = add(b"<< /Title " + pdf_string(info_title) + b" /Producer (episteme pdfgen) >>") \
        if info_title else None

    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % n + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info:
        trailer += b" /Info %d 0 R" % info
    out.write(b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


class _Typesetter:
    """Places lines on pages and columns; records where each heading lands (for the outline)."""

    def __init__(self, layout: Layout):
        self.lay = layout
        self.pages: list[list[tuple[float, float, bytes]]] = []  # (y, x, operators)
        self.heading_pages: list[tuple[str, str, int, int]] = []  # number, title, level, page
        self.margin = 72.0 if layout.columns == 1 else 54.0
        self.gutter = 18.0
        self.top = PAGE_H - 72.0
        self.bottom = 72.0
        self.col = 0
        self.col_top = self.top
        self.line_no = 0
        self.new_page()

    # fonts ------------------------------------------------------------------------------
    def font(self, bold: bool = False, italic: bool = False) -> tuple[str, str]:
        if self.lay.family == "Helvetica":
            return ("F4", "Helvetica-Bold") if bold else ("F3", "Helvetica")
        if italic:
            return "F5", "Times-Italic"
        return ("F2", "Times-Bold") if bold else ("F1", "Times-Roman")

    @staticmethod
    def width(text: str, base: str, size: float) -> float:
        return len(text) * _AVG_WIDTH[base] * size

    # geometry ----------------------------------------------------------------------------
    @property
    def col_width(self) -> float:
        if self.lay.columns == 1:
            return PAGE_W - 2 * self.margin
        return (PAGE_W - 2 * self.margin - self.gutter) / 2

    @property
    def x0(self) -> float:
        return self.margin + self.col * (self.col_width + self.gutter)

    def new_page(self) -> None:
        self.pages.append([])
        self.col = 0
        self.col_top = self.top
        self.y = self.top

    def next_column(self) -> None:
        if self.col + 1 < self.lay.columns:
            self.col += 1
            self.y = self.col_top
        else:
            self.new_page()

    def need(self, height: float) -> None:
        if self.y - height < self.bottom:
            self.next_column()

    def emit(self, text: str, x: float, y: float, key: str, size: float) -> None:
        ops = b""
        if self.lay.line_numbers:
            # as word processors print them: the number first, in the margin, on the line's
            # baseline (so text extraction meets it at the start of the line)
            self.line_no += 1
            ops += (b"BT /F1 7 Tf %.2f %.2f Td " % (self.margin - 30, y)
                    + pdf_string(str(self.line_no)) + b" Tj ET ")
        self.pages[-1].append((y, x, ops
            + b"BT /%s %g Tf %.2f %.2f Td " % (key.encode(), size, x, y)
            + pdf_string(text, ligatures=self.lay.ligatures)
            + b" Tj ET"
        ))

    def rule(self, x0: float, x1: float, y: float) -> None:
        """A drawn horizontal rule (an underline), 0.6 pt thick."""
        self.pages[-1].append((y, x0, b"0.6 w %.2f %.2f m %.2f %.2f l S" % (x0, y, x1, y)))

    # content -----------------------------------------------------------------------------
    def line(self, text: str, size: float, *, bold: bool = False, italic: bool = False,
             indent: float = 0.0, center: bool = False, full_width: bool = False) -> None:
        key, base = self.font(bold, italic)
        lead = size * 1.2
        self.need(lead)
        self.y -= lead
        width = PAGE_W - 2 * self.margin if full_width else self.col_width
        x = (self.margin if full_width else self.x0) + indent
        if center:
            x = (self.margin if full_width else self.x0) + max(
                0.0, (width - self.width(text, base, size)) / 2
            )
        self.emit(text, x, self.y, key, size)

    def wrap(self, text: str, size: float, width: float, base: str) -> list[str]:
        words = text.split()
        lines: list[str] = []
        cur = ""
        for w in words:
            cand = f"{cur} {w}" if cur else w
            if self.width(cand, base, size) <= width:
                cur = cand
                continue
            if self.lay.hyphenate and len(w) >= 9 and w.isalpha():
                # break the word TeX-style: at least 4 letters on the first line
                room = int((width - self.width(cur + " ", base, size)) / (_AVG_WIDTH[base] * size))
                cut = min(max(room - 1, 0), len(w) - 4)
                if cut >= 4:
                    lines.append(f"{cur} {w[:cut]}-" if cur else f"{w[:cut]}-")
                    cur = w[cut:]
                    continue
            if cur:
                lines.append(cur)
            cur = w
        if cur:
            lines.append(cur)
        return lines

    def wrap_plain(self, text: str, size: float, width: float, base: str) -> list[str]:
        """Word wrap without hyphenation (headings are never hyphenated)."""
        lines: list[str] = []
        for w in text.split():
            if lines and self.width(f"{lines[-1]} {w}", base, size) <= width:
                lines[-1] = f"{lines[-1]} {w}"
            else:
                lines.append(w)
        return lines

    def paragraph(self, text: str, *, size: float | None = None, full_width: bool = False,
                  first_indent: float = 12.0) -> None:
        size = size or self.lay.body_size
        _, base = self.font()
        width = (PAGE_W - 2 * self.margin) if full_width else self.col_width
        for i, ln in enumerate(self.wrap(text, size, width - first_indent, base)):
            self.line(ln, size, indent=first_indent if i == 0 else 0.0, full_width=full_width)
        self.y -= size * 0.4

    def heading(self, number: str, title: str, level: int) -> None:
        size = {1: self.lay.body_size + 2, 2: self.lay.body_size + 1}.get(level,
                                                                           self.lay.body_size)
        self.y -= size * 0.8
        self.need(size * 1.2 + self.lay.body_size * 3.6)  # keep with the next lines
        text = f"{number} {title}" if number else title
        if self.lay.bold_headings:
            self.line(title, self.lay.body_size, bold=True)
        elif self.lay.word_headings:
            # a word processor's styles: "Heading 1" large and regular, "Heading 2" at body
            # size, regular and underlined, neither numbered
            if level == 1:
                self.line(title, self.lay.body_size + 8)
            else:
                self.line(title, self.lay.body_size)
                _, base = self.font()
                x0 = self.x0
                self.rule(x0, x0 + self.width(title, base, self.lay.body_size), self.y - 2)
        elif self.lay.ieee and number and number[0].isdigit():
            parts = number.split(".")
            if level == 1:
                self.line(f"{to_roman(int(parts[0]))}. {title.upper()}", self.lay.body_size)
            else:
                self.line(f"{chr(64 + int(parts[-1]))}. {title}", self.lay.body_size,
                          italic=True)
        elif self.lay.ieee and not number:
            self.line(title.upper(), self.lay.body_size)
        else:
            # long headings wrap, with the continuation aligned after the number
            _, base = self.font(bold=True)
            hang = self.width(f"{number} ", base, size) if number else 0.0
            for k, part in enumerate(self.wrap_plain(text, size, self.col_width - hang, base)):
                self.line(part, size, bold=True, indent=hang if k else 0.0)
        self.heading_pages.append((number, title, level, len(self.pages) - 1))
        self.y -= size * 0.3


def to_roman(n: int) -> str:
    out = ""
    for value, sym in ((10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out += sym
            n -= value
    return out


def typeset(paper: Paper, layout: Layout | None = None, *,
            after_paragraph=None) -> tuple[bytes, list]:
    """Typeset ``paper``; returns (PDF bytes without outline, heading page list).

    ``after_paragraph(ts, section_index, paragraph_index)``, when given, is called after each
    body paragraph with the typesetter, so a caller can place more (a table) in the flow."""
    lay = layout or Layout()
    ts = _Typesetter(lay)
    ts.line(paper.title, lay.body_size + 7, bold=True, center=True, full_width=True)
    ts.y -= 6
    ts.line(", ".join(paper.authors), lay.body_size + 1, center=True, full_width=True)
    for aff in paper.affiliations:
        ts.line(aff, lay.body_size - 1, center=True, full_width=True)
    ts.y -= 10
    ts.line("Abstract", lay.body_size + 2, bold=True, center=True, full_width=True)
    ts.heading_pages.append(("", "Abstract", 1, 0))
    ts.paragraph(paper.abstract, full_width=True, first_indent=0)
    ts.col_top = ts.y - 6
    ts.y = ts.col_top
    for i, sec in enumerate(paper.sections):
        ts.heading(sec.number, sec.title, sec.level)
        for j, p in enumerate(sec.paragraphs):
            ts.paragraph(p)
            if after_paragraph is not None:
                after_paragraph(ts, i, j)
    if paper.references:
        ts.heading("", "References", 1)
        for i, ref in enumerate(paper.references, start=1):
            _, base = ts.font()
            size = lay.body_size - 1
            lines = ts.wrap(f"[{i}] {ref}", size, ts.col_width - 10, base)
            for j, ln in enumerate(lines):
                ts.line(ln, size, indent=0 if j == 0 else 10)
            ts.y -= 2
    for sec in paper.appendix:
        ts.heading(sec.number, sec.title, sec.level)
        for p in sec.paragraphs:
            ts.paragraph(p)

    n = len(ts.pages)
    streams = []
    for i, placed in enumerate(ts.pages):
        if lay.interleave:
            # what some word processors do: emit text row by row across both columns
            placed = sorted(placed, key=lambda t: (-round(t[0]), t[1]))
        ops = [op for _, _, op in placed]
        extra = []
        key, _ = ts.font()
        if lay.running_header and i > 0:
            extra.append(b"BT /%s 8 Tf 72 %.2f Td " % (key.encode(), PAGE_H - 40)
                         + pdf_string(lay.running_header) + b" Tj ET")
        if lay.page_numbers:
            extra.append(b"BT /%s 9 Tf %.2f 40 Td " % (key.encode(), PAGE_W / 2 - 4)
                         + pdf_string(str(i + 1)) + b" Tj ET")
        if lay.stamp and i == 0:
            # rotated 90 degrees, bottom to top, in the left margin (like arXiv's stamp)
            extra.append(b"BT /F1 20 Tf 0 1 -1 0 32 220 Tm " + pdf_string(lay.stamp)
                         + b" Tj ET")
        streams.append(b"\n".join(extra + ops))
    assert n == len(streams)
    return write_pdf(streams, info_title=paper.title), ts.heading_pages


def add_outline(pdf: bytes, headings: list[tuple[str, str, int, int]], *,
                numbers: bool = True) -> bytes:
    """Add bookmarks for numbered/unnumbered headings (Abstract and References left out,
    as LaTeX's hyperref does)."""
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(pdf))
    writer = pypdf.PdfWriter(clone_from=reader)
    parents: dict[int, object] = {}
    for number, title, level, page in headings:
        if title in ("Abstract", "References"):
            continue
        label = f"{number} {title}" if (number and numbers) else title
        parent = parents.get(level - 1) if level > 1 else None
        item = writer.add_outline_item(title=label, page_number=page, parent=parent)
        parents[level] = item
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def make_paper_pdf(path: str | Path, paper: Paper, layout: Layout | None = None) -> Path:
    """Typeset ``paper`` into ``path`` (with an outline when ``layout.outline``)."""
    lay = layout or Layout()
    data, heads = typeset(paper, lay)
    if lay.outline:
        if lay.outline_title:
            heads = [("", paper.title, 1, 0), *heads]
        data = add_outline(data, heads, numbers=lay.outline_numbers)
    path = Path(path)
    path.write_bytes(data)
    return path


def encrypt_pdf(src: str | Path, dst: str | Path, *, user_password: str,
                owner_password: str = "owner", algorithm: str = "RC4-128") -> Path:
    """An encrypted copy (RC4-128, or e.g. "AES-256" which needs the cryptography package)."""
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(str(src)))
    writer.encrypt(user_password=user_password, owner_password=owner_password,
                   algorithm=algorithm)
    with open(dst, "wb") as fh:
        writer.write(fh)
    return Path(dst)


def make_no_text_pdf(path: str | Path, pages: int = 2) -> Path:
    """Pages with only vector drawings (what a scan without OCR looks like to a splitter)."""
    streams = []
    for i in range(pages):
        ops = [b"0.2 0.2 0.2 rg"]
        for k in range(30):
            ops.append(b"%d %d %d %d re f" % (72 + (k * 37 + i * 11) % 400, 100 + k * 20,
                                               50 + k % 7 * 20, 8))
        streams.append(b"\n".join(ops))
    Path(path).write_bytes(write_pdf(streams))
    return Path(path)


def sample_paper() -> Paper:
    """A small original paper for the tests (not the examples/ demo paper)."""
    lorem = (
        "Tide gauges record the height of the sea surface every few minutes, and the record of a "
        "single harbour can span more than a century of continuous observation. "
        "We study how such long records can be cleaned, aligned and compared, e.g. when two "
        "neighbouring stations disagree by 3.5 cm after an instrument change (Fig. 2). "
        "Smith et al. reported a similar drift at coastal sites, and our estimates agree. "
    )
    return Paper(
        title="Harbour Tides and Their Long Records",
        authors=["Mira Okafor", "Tomás Lindqvist"],
        affiliations=["Institute for Coastal Measurement, Harbour Road 12, Portsmouth"],
        abstract="We describe a procedure for cleaning and aligning century-long tide gauge "
        "records. " + lorem,
        sections=[
            Section("1", "Introduction", [lorem * 3, lorem * 2]),
            Section("2", "Measuring the Sea Surface", [lorem * 2]),
            Section("2.1", "Float Gauges and Stilling Wells", [lorem * 3], 2),
            Section("2.2", "Pressure Sensors", [lorem * 2, "Instrumentation changes are the "
                    "largest source of error in the combined record. " + lorem], 2),
            Section("3", "Aligning Neighbouring Stations", [lorem * 4]),
            Section("3.1", "Datum Corrections", [lorem * 2], 2),
            Section("3.1.1", "Benchmark Levelling", [lorem * 2], 3),
            Section("4", "Conclusion", [lorem * 2]),
        ],
        references=[
            "A. Author and B. Writer. Sea level from tide gauges. Journal of Coastal Records, "
            "12(3):45-67, 1999.",
            "C. Person. 2 Decades of Harbour Data. In Proceedings of the Tide Workshop, 2004.",
            "D. Researcher et al. Instrument drift in pressure gauges. Ocean Letters, 2011.",
        ],
        appendix=[
            Section("A", "Station List", [lorem]),
            Section("A.1", "Station Metadata", [lorem], 2),
        ],
    )


# ----------------------------------------------------------------- hostile and varied inputs

_WORDS = ("signal", "model", "layer", "record", "estimate", "sample", "window", "graph", "error",
          "measure", "station", "vector", "channel", "source", "filter", "kernel", "bound",
          "series", "label", "corpus", "index", "query", "token", "budget", "margin", "drift")


def varied_paper(seed: int, title: str | None = None) -> Paper:
    """A small paper whose words depend on ``seed``: distinct seeds give distinct bytes and
    distinct text (for tests that ingest several different papers)."""
    import random

    rng = random.Random(seed)

    def sentence() -> str:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(9, 16))]
        return " ".join(words).capitalize() + f" in trial {rng.randint(2, 999)}. "

    def para(n: int) -> str:
        return "".join(sentence() for _ in range(n))

    return Paper(
        title=title or f"On the {rng.choice(_WORDS).title()} of {rng.choice(_WORDS).title()} Data",
        authors=[f"Ana {rng.choice(_WORDS).title()}"],
        affiliations=["Department of Measurement"],
        abstract=para(3),
        sections=[Section("1", "Introduction", [para(6)]),
                  Section("2", f"The {rng.choice(_WORDS).title()} Method", [para(8)]),
                  Section("3", "Conclusion", [para(5)])],
    )


def make_lines_pdf(path: str | Path, lines: list[str], *, info_title: str | None = None,
                   size: float = 10.0, per_page: int = 60) -> Path:
    """Pages of plain lines in ONE font and size (no heading can stand out), each line exactly
    as given -- control characters, ``<!-- section`` markers and all."""
    pages = []
    for start in range(0, max(len(lines), 1), per_page):
        ops = [b"BT /F1 %g Tf" % size]
        y = PAGE_H - 72
        for line in lines[start:start + per_page]:
            ops.append(b"1 0 0 1 72 %g Tm %s Tj" % (y, pdf_string(line)))
            y -= size * 1.2
        ops.append(b"ET")
        pages.append(b"\n".join(ops))
    Path(path).write_bytes(write_pdf(pages, info_title=info_title))
    return Path(path)


def make_huge_text_pdf(path: str | Path, chars: int, *, pages: int = 1) -> Path:
    """A tiny file with a huge text layer: each page repeats one short word-run until it holds
    ``chars // pages`` characters, all drawn at one spot (compresses to almost nothing)."""
    run = b"(" + b"lorem ipsum dolor sit amet " * 40 + b") Tj\n"
    per = max(1, chars // pages // (len(run) - 7))
    streams = [b"BT /F1 10 Tf 72 700 Td\n" + run * per + b"ET" for _ in range(pages)]
    Path(path).write_bytes(write_pdf(streams))
    return Path(path)
