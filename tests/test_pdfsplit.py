"""The section splitter on the project's own generated PDFs: layouts, outlines, bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pdfgen
import pytest
from episteme.commands.split import main as split_main
from episteme.pdf.headings import detect_headings, toc_lines
from episteme.pdf.split import PdfError, check_pdf_bytes, split_pdf
from episteme.pdf.text import Line, Run

REPO = Path(__file__).resolve().parent.parent
STAMP = "arXiv:2611.01234v1 [physics.ao-ph] 3 Nov 2026"
HEADER = "Harbour Tides - preprint under review"


def _paper() -> pdfgen.Paper:
    p = pdfgen.sample_paper()
    # a body line that starts with a number and a capital: must not become a heading
    p.sections[2].paragraphs.append("5 Stations were levelled twice in the same week.")
    # printed with fi/fl ligature glyphs: extraction gives U+FB01/U+FB02, repaired by NFKC
    p.sections[1].paragraphs.append("The first field campaign flagged five floats.")
    # a heading long enough to wrap in two columns
    p.sections[5].title = "Datum Corrections Between Neighbouring Harbours over a Century"
    return p


EXPECTED = [
    ("", "Abstract", 1, "abstract"),
    ("1", "Introduction", 1, "body"),
    ("2", "Measuring the Sea Surface", 1, "body"),
    ("2.1", "Float Gauges and Stilling Wells", 2, "body"),
    ("2.2", "Pressure Sensors", 2, "body"),
    ("3", "Aligning Neighbouring Stations", 1, "body"),
    ("3.1", "Datum Corrections Between Neighbouring Harbours over a Century", 2, "body"),
    ("3.1.1", "Benchmark Levelling", 3, "body"),
    ("4", "Conclusion", 1, "body"),
    ("", "References", 1, "references"),
    ("A", "Station List", 1, "appendix"),
    ("A.1", "Station Metadata", 2, "appendix"),
]

LAYOUTS = {
    "one_column": pdfgen.Layout(columns=1),
    "one_column_outline": pdfgen.Layout(columns=1, outline=True, outline_title=True),
    "two_column": pdfgen.Layout(columns=2, running_header=HEADER, stamp=STAMP),
    "two_column_outline_unnumbered": pdfgen.Layout(
        columns=2, outline=True, outline_numbers=False, running_header=HEADER, stamp=STAMP
    ),
    "helvetica_no_hyphenation": pdfgen.Layout(family="Helvetica", hyphenate=False,
                                              page_numbers=False),
    # rows of both columns written alternately (some word processors): reading order restored
    "two_column_interleaved": pdfgen.Layout(columns=2, interleave=True, running_header=HEADER),
    # continuous line numbers in the margin (Word, bioRxiv): never part of headings or text
    "line_numbers": pdfgen.Layout(columns=1, line_numbers=True),
    "line_numbers_two_column": pdfgen.Layout(columns=2, line_numbers=True, running_header=HEADER,
                                             stamp=STAMP),
    "everything_at_once": pdfgen.Layout(
        columns=2, family="Helvetica", interleave=True, outline=True, outline_numbers=False,
        outline_title=True, running_header=HEADER, stamp=STAMP, body_size=9.0,
    ),
}


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("genpdf")
    return {name: pdfgen.make_paper_pdf(d / f"{name}.pdf", _paper(), lay)
            for name, lay in LAYOUTS.items()}


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_headings_levels_and_kinds(generated, name):
    res = split_pdf(generated[name])
    got = [(s.number, s.title, s.level, s.kind) for s in res.sections if s.kind != "front"]
    assert got == EXPECTED
    assert res.sections[0].kind == "front"
    assert res.title == "Harbour Tides and Their Long Records"
    assert res.authors == ["Mira Okafor", "Tomás Lindqvist"]
    assert res.used_outline == LAYOUTS[name].outline
    assert res.pages >= 3


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_section_text_is_the_typeset_prose(generated, name):
    """Hyphenated breaks re-joined, headers/footers/page numbers/stamp gone, columns in order:
    the section text is exactly the paragraphs that were typeset."""
    paper = _paper()
    res = split_pdf(generated[name])
    by_title = {s.title: s for s in res.sections}
    for sec in paper.sections + paper.appendix:
        assert _norm(by_title[sec.title].text) == _norm(" ".join(sec.paragraphs)), sec.title
    assert _norm(by_title["Abstract"].text) == _norm(paper.abstract)
    everything = " ".join(s.text for s in res.sections)
    assert "arXiv:2611" not in everything
    assert "preprint under review" not in everything


def test_hyphenated_words_rejoined_and_compounds_kept(generated):
    text = " ".join(s.text for s in split_pdf(generated["two_column"]).sections)
    # the generator breaks long words at line ends ("neighbour-" / "ing"); all are re-joined
    assert not re.search(r"\b(neighbou|continu|observa|instrumen)[a-z]*- ?[a-z]", text)
    assert "century-long" in text  # a real compound keeps its hyphen


def test_ligatures_folded_and_wrapped_heading_joined(generated):
    import pypdf

    raw = "".join(pg.extract_text() for pg in pypdf.PdfReader(generated["two_column"]).pages)
    assert "\ufb01rst \ufb01eld" in raw  # what pypdf extracts
    res = split_pdf(generated["two_column"])
    sec = next(s for s in res.sections if s.title == "Measuring the Sea Surface")
    assert "The first field campaign flagged five floats." in sec.text
    assert not any("\ufb01" in s.text or "\ufb02" in s.text for s in res.sections)
    wrapped = next(s for s in res.sections if s.number == "3.1")
    assert wrapped.title == "Datum Corrections Between Neighbouring Harbours over a Century"
    assert not wrapped.text.startswith(("over", "a Century", "Century"))
    # the heading really was printed on two lines in this layout
    assert "Century" not in [ln for ln in raw.splitlines() if "Datum Corrections" in ln][0]


def test_page_spans_and_offsets(generated):
    res = split_pdf(generated["two_column"])
    last_page = 1
    for s in res.sections:
        assert 1 <= s.page_start <= s.page_end <= res.pages
        assert s.page_start >= last_page - 0
        last_page = s.page_start
        assert s.page_breaks[0][0] == 0
        offs = [o for o, _ in s.page_breaks]
        assert offs == sorted(offs)
        assert s.page_at(0) == s.page_breaks[0][1]
        assert s.page_at(len(s.text)) == s.page_end
    spanning = [s for s in res.sections if s.page_end > s.page_start]
    assert spanning, "the sample paper has sections that cross a page"
    s = spanning[0]
    off, page = s.page_breaks[1]
    assert s.page_at(off - 1) == page - 1 and s.page_at(off) == page


def test_reference_entries_are_not_headings(generated):
    res = split_pdf(generated["one_column"])
    titles = [s.title for s in res.sections]
    assert not any("Decades" in t or "Stations were" in t for t in titles)
    refs = [s for s in res.sections if s.kind == "references"]
    assert len(refs) == 1 and "[2] C. Person" in refs[0].text


def test_outline_can_be_ignored(generated):
    res = split_pdf(generated["one_column_outline"], use_outline=False)
    assert not res.used_outline
    assert [s.title for s in res.sections if s.kind != "front"] == [e[1] for e in EXPECTED]


# -- bad input --------------------------------------------------------------------------------

def _kind(path, **kw) -> str:
    with pytest.raises(PdfError) as ei:
        split_pdf(path, **kw)
    return ei.value.kind


def test_not_a_pdf_by_content(tmp_path):
    f = tmp_path / "paper.pdf"
    f.write_text("this is a text file with a .pdf name\n" * 50)
    assert _kind(f) == "not_pdf"


def test_empty_file(tmp_path):
    f = tmp_path / "empty.pdf"
    f.write_bytes(b"")
    assert _kind(f) == "empty"


def test_zero_pages(tmp_path):
    f = tmp_path / "zero.pdf"
    f.write_bytes(pdfgen.write_pdf([]))
    assert _kind(f) == "empty"


def test_truncated(tmp_path, generated):
    data = generated["one_column"].read_bytes()
    f = tmp_path / "truncated.pdf"
    f.write_bytes(data[: len(data) // 2])
    assert _kind(f) == "corrupt"


def test_garbage_between_header_and_eof(tmp_path):
    f = tmp_path / "garbage.pdf"
    f.write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 20 + b"\n%%EOF\n")
    assert _kind(f) == "corrupt"


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_encrypted_with_password(tmp_path, generated, algorithm):
    f = pdfgen.encrypt_pdf(generated["one_column"], tmp_path / "locked.pdf",
                           user_password="s3cret", algorithm=algorithm)
    with pytest.raises(PdfError) as ei:
        split_pdf(f)
    assert ei.value.kind == "encrypted" and "password" in str(ei.value)


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_encrypted_with_empty_user_password_opens(tmp_path, generated, algorithm):
    f = pdfgen.encrypt_pdf(generated["one_column"], tmp_path / "owner-only.pdf",
                           user_password="", algorithm=algorithm)
    res = split_pdf(f)
    assert [s.title for s in res.sections if s.kind != "front"] == [e[1] for e in EXPECTED]


def test_no_text_layer(tmp_path):
    f = pdfgen.make_no_text_pdf(tmp_path / "scan.pdf")
    with pytest.raises(PdfError) as ei:
        split_pdf(f)
    assert ei.value.kind == "no_text" and "OCR" in str(ei.value)


def test_scan_with_only_a_stamp_per_page_has_no_text_layer(tmp_path):
    """A scanned paper whose pages carry just a one-line download note is still 'no text'."""
    stamp = b"BT /F1 8 Tf 72 30 Td " + pdfgen.pdf_string("Downloaded from the archive") + b" Tj ET"
    drawing = b"0.5 g 72 100 468 600 re f"
    f = tmp_path / "scan-with-stamp.pdf"
    f.write_bytes(pdfgen.write_pdf([drawing + b"\n" + stamp] * 6))
    assert _kind(f) == "no_text"


def test_size_and_page_limits(generated):
    assert _kind(generated["one_column"], max_bytes=1000) == "too_large"
    assert _kind(generated["one_column"], max_pages=1) == "too_large"


def test_check_pdf_bytes_by_content():
    check_pdf_bytes(b"junk" * 100 + b"%PDF-1.7\n" + b"x" * 5000 + b"%%EOF\n", 10**6)
    for data, limit, kind in [
        (b"", 10**6, "empty"),
        (b" " * 1100 + b"%PDF-1.7\n%%EOF", 10**6, "not_pdf"),
        (b"%PDF-1.7\n" + b"x" * 10000, 10**6, "corrupt"),
        (b"%PDF-1.7\n%%EOF" + b"x" * 100, 50, "too_large"),
    ]:
        with pytest.raises(PdfError) as ei:
            check_pdf_bytes(data, limit)
        assert ei.value.kind == kind


# -- command line ----------------------------------------------------------------------------

def test_split_command_json(generated, tmp_path, capsys):
    odd = tmp_path / "my paper – ü ß.pdf"
    odd.write_bytes(generated["one_column_outline"].read_bytes())
    assert split_main([str(odd)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["paper"] == "my paper – ü ß.pdf"
    assert out["used_outline"] is True and out["pages"] >= 3
    assert [s["title"] for s in out["sections"]][1:] == [e[1] for e in EXPECTED]
    assert all("text" not in s and s["chars"] > 0 for s in out["sections"])
    assert split_main([str(odd), "--no-outline", "--text"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["used_outline"] is False
    assert all(len(s["text"]) == s["chars"] for s in out["sections"])


def test_split_command_error_is_one_line_json(tmp_path, capsys):
    f = tmp_path / "notes.pdf"
    f.write_text("hello")
    assert split_main([str(f)]) == 1
    cap = capsys.readouterr()
    assert json.loads(cap.out)["details"]["kind"] == "not_pdf"
    assert cap.err.strip().startswith("error: not a PDF")


def test_split_command_missing_file_and_folder(tmp_path, capsys):
    assert split_main([str(tmp_path / "nope.pdf")]) == 1
    assert "no such file" in json.loads(capsys.readouterr().out)["error"]
    assert split_main([str(tmp_path)]) == 2
    assert "folder" in json.loads(capsys.readouterr().out)["error"]


def test_split_script_runs(generated):
    proc = subprocess.run(
        [sys.executable, str(REPO / "plugin" / "scripts" / "split_pdf.py"),
         str(generated["two_column"])],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sections"][2]["title"] == "Introduction"


def test_example_paper_splits_into_its_sections():
    """The README demo's paper (examples/sample-paper.pdf, typeset by make_sample_paper.py)."""
    res = split_pdf(REPO / "examples" / "sample-paper.pdf")
    assert res.used_outline and 4 <= res.pages <= 6
    numbered = [s.number for s in res.sections if s.number]
    assert numbered == ["1", "2", "2.1", "2.2", "3", "3.1", "3.2", "3.3", "4", "4.1", "4.2",
                        "5", "5.1", "5.2", "6", "7", "A", "A.1"]
    kinds = [s.kind for s in res.sections]
    assert kinds[:2] == ["front", "abstract"] and kinds.count("references") == 1
    assert res.authors == ["Ada Quill", "Bram Osei"]
    assert all(s.text for s in res.sections)


def test_ieee_roman_sections_and_italic_lettered_subsections(tmp_path):
    paper = _paper()
    paper.sections = [s for s in paper.sections if s.level < 3]
    paper.appendix = paper.appendix[:1]
    f = pdfgen.make_paper_pdf(tmp_path / "ieee.pdf", paper, pdfgen.Layout(columns=2, ieee=True))
    got = [(s.number, s.title, s.level, s.kind) for s in split_pdf(f).sections[1:]]
    assert got == [
        ("", "Abstract", 1, "abstract"),
        ("I", "INTRODUCTION", 1, "body"),
        ("II", "MEASURING THE SEA SURFACE", 1, "body"),
        ("II.A", "Float Gauges and Stilling Wells", 2, "body"),
        ("II.B", "Pressure Sensors", 2, "body"),
        ("III", "ALIGNING NEIGHBOURING STATIONS", 1, "body"),
        ("III.A", "Datum Corrections Between Neighbouring Harbours over a Century", 2, "body"),
        ("IV", "CONCLUSION", 1, "body"),
        ("", "REFERENCES", 1, "references"),
        ("A", "Station List", 1, "appendix"),
    ]


def test_title_plausibility_rules():
    from episteme.pdf.headings import plausible_title

    assert plausible_title("Scaled Dot-Product Attention", numbered=True)
    assert plausible_title("[D1] Discover Relevant Citations", numbered=True)
    for bad in [
        "Introduction . . . . . . . . . . 3",  # table of contents
        "layers are stacked on top of each other",  # sentence continuing after a number
        "0.5 12.3 45.1 88.0",  # table row
        "Smith, J., Doe, A. and Roe, B. Learning things. In Proc. of the Conference, 2019.",
        "Department of Computer Science, University of Somewhere,",
        "Figure 3: Attention weights",
    ]:
        assert not plausible_title(bad, numbered=True), bad


def _line(text: str, y: float, *, x: float = 72.0, size: float = 10.0, page: int = 1):
    from episteme.pdf.text import Line, Run

    return Line(text, page, x, y, size, "Times-Roman", False,
                runs=[Run(text, "Times-Roman", size, x, y)])


def test_stacked_tables_keep_their_own_rows_when_captions_sit_below():
    """Two tables stacked in one column, each captioned below its rows (rows, caption, rows,
    caption): the rows between the captions are the second table's.  Looking below a table's
    caption first gave the first table the second one's rows and left its own in the prose."""
    from episteme.pdf.objects import find_objects

    prose = "This is a sentence of running text that fills a whole line of the column here."
    lines = [_line(prose, 700), _line(prose, 688),
             _line("method top-1 top-5", 660, x=120, size=9), _line("plain-34 28.54 10.02", 649, x=120, size=9),
             _line("ResNet-34 25.03 7.76", 638, x=120, size=9),
             _line("Table 1. Error rates on the validation set.", 620, size=9),
             _line("metric mAP@.5 mAP@[.5, .95]", 600, x=120, size=9), _line("VGG-16 41.5 21.2", 589, x=120, size=9),
             _line("Table 2. Detection results on the test set.", 570, size=9),
             _line(prose, 540), _line(prose, 528), _line(prose, 516), _line(prose, 504), _line(prose, 492)]
    objs = {o.label: o for o in find_objects(lines, {1: 792.0})}
    assert "plain-34" in objs["Table 1"].text and "ResNet-34" in objs["Table 1"].text
    assert "mAP" not in objs["Table 1"].text
    assert "VGG-16 41.5" in objs["Table 2"].text


def test_tables_captioned_above_still_take_the_rows_below():
    """The default side, when the paper's captions sit above their rows."""
    from episteme.pdf.objects import find_objects

    prose = "This is a sentence of running text that fills a whole line of the column here."
    lines = [_line(prose, 700), _line(prose, 688),
             _line("Table 1: Error rates on the validation set.", 660, size=9),
             _line("method top-1 top-5", 645, x=120, size=9), _line("plain-34 28.54 10.02", 634, x=120, size=9),
             _line("Table 2: Detection results on the test set.", 610, size=9),
             _line("metric mAP@.5 mAP@[.5, .95]", 595, x=120, size=9), _line("VGG-16 41.5 21.2", 584, x=120, size=9),
             _line(prose, 560), _line(prose, 548), _line(prose, 536), _line(prose, 524)]
    objs = {o.label: o for o in find_objects(lines, {1: 792.0})}
    assert "plain-34" in objs["Table 1"].text and "mAP" not in objs["Table 1"].text
    assert "VGG-16 41.5" in objs["Table 2"].text


def _with_tables(ts, i: int, j: int) -> None:
    """After section 2's and section 3's first paragraph: a sentence broken mid-word ("fur-")
    around a table whose bold header row sits over its columns (section 2) or spans them in
    one bold line (section 3), the caption under the rows."""
    if (i, j) not in ((1, 0), (4, 0)):
        return
    size = ts.lay.body_size
    ts.line("The two stations were levelled again, and we can fur-", size)
    ts.y -= 8
    key_b, _ = ts.font(bold=True)
    key, _ = ts.font()
    header = (["Model (pre-norm)", "Param.", "MT04", "MT05", "Average"] if i == 1
              else ["Station records"])
    rows = [header, ["Transformer base model", "62M", "41.2", "40.8", "41.0"],
            ["Transformer deep model", "118M", "42.9", "41.7", "42.3"]]
    for k, row in enumerate(rows):
        ts.need(size * 1.3)
        ts.y -= size * 1.3
        for c, cell in zip((0, 150, 200, 250, 300), row, strict=False):
            ts.emit(cell, ts.x0 + c, ts.y, key_b if k == 0 else key, size)
    ts.y -= 4
    ts.line(f"Table {1 if i == 1 else 2}: Scores of the models on the test sets.", size - 1)
    ts.y -= 8
    ts.line("ther align the two records.", size)


@pytest.mark.parametrize("columns", [1, 2])
def test_table_header_rows_never_become_headings(tmp_path, columns):
    """A bold header row over a table's columns ("Model (pre-norm) Param. MT04 ...") and a
    bold line printed inside a sentence broken mid-word are a float's lines, not sections."""
    data, _ = pdfgen.typeset(_paper(), pdfgen.Layout(columns=columns),
                             after_paragraph=_with_tables)
    f = tmp_path / "tables.pdf"
    f.write_bytes(data)
    res = split_pdf(f)
    got = [(s.number, s.title, s.level, s.kind) for s in res.sections if s.kind != "front"]
    assert got == EXPECTED


@pytest.mark.parametrize("columns", [1, 2])
def test_word_processor_headings_from_their_typography(tmp_path, columns):
    """No numbers and no outline: level-1 headings in large regular type (the body's own font),
    level-2 headings at body size, regular, underlined by a drawn rule.  Both are found from
    the paper's own styles, with their levels, and the text around them stays whole."""
    paper = _paper()
    f = pdfgen.make_paper_pdf(tmp_path / "word.pdf", paper,
                              pdfgen.Layout(columns=columns, family="Helvetica",
                                            word_headings=True, line_numbers=True))
    res = split_pdf(f)
    got = [(s.title, s.level) for s in res.sections if s.kind not in ("front", "abstract")]
    want = [(s.title, min(s.level, 2)) for s in paper.sections]
    want += [("References", 1)] + [(s.title, s.level) for s in paper.appendix]
    assert got == want
    by_title = {s.title: s for s in res.sections}
    for sec in paper.sections:
        assert _norm(by_title[sec.title].text) == _norm(" ".join(sec.paragraphs)), sec.title


def _tline(text: str, page: int, y: float, size: float = 10.0, bold: bool = False) -> Line:
    font = "Times-Bold" if bold else "Times-Roman"
    return Line(text, page, 72.0, y, size, font, bold, [Run(text, font, size, 72.0, y, bold)])


def test_a_table_of_contents_is_not_the_papers_headings():
    """A contents page lists the headings with their page numbers; read as headings they cut
    the paper at its contents page and use up the numbering before the real headings."""
    toc = [_tline("Contents", 2, 700, 14, True)] + [
        _tline(t, 2, 680 - 14 * k) for k, t in enumerate(
            ["1 Introduction 3", "2 Data 6", "2.1 Sample selection 7", "3 Model 12",
             "4 Results 19", "Bibliography 24"])]
    body = []
    y = 700.0
    for page, (num, title) in enumerate([("1", "Introduction"), ("2", "Data"),
                                         ("3", "Model"), ("4", "Results")], start=3):
        body.append(_tline(f"{num} {title}", page, y, 14, True))
        body += [_tline("The households report their time use in a diary kept for a week.",
                       page, y - 20 - 12 * k) for k in range(6)]
    lines = toc + body
    got = [(h.number, h.title, lines[h.index].page) for h in detect_headings(lines)]
    assert got == [("", "Contents", 2), ("1", "Introduction", 3), ("2", "Data", 4),
                   ("3", "Model", 5), ("4", "Results", 6)]
    assert toc_lines(lines) == set(range(1, 7))


def test_roman_prefixed_section_numbers_are_numbers():
    """REVTeX numbers subsections under Roman sections "I.1. Title": the number is the
    heading's number, not part of its title."""
    lines = [_tline("I. INTRODUCTION", 1, 700, 10)]
    lines += [_tline("Entanglement is distributed over long links by repeaters in a chain.", 1,
                    680 - 12 * k) for k in range(5)]
    lines.append(_tline("I.1. Architectures for Long-Distance Networks", 1, 600, 10, True))
    lines += [_tline("Entanglement is distributed over long links by repeaters in a chain.", 1,
                    585 - 12 * k) for k in range(5)]
    lines.append(_tline("I.2. Polarization Entanglement", 1, 500, 10, True))
    lines += [_tline("Entanglement is distributed over long links by repeaters in a chain.", 1,
                    485 - 12 * k) for k in range(5)]
    got = [(h.number, h.title) for h in detect_headings(lines)]
    assert ("I.1", "Architectures for Long-Distance Networks") in got
    assert ("I.2", "Polarization Entanglement") in got


def test_bold_body_size_headings_without_numbers(tmp_path):
    """Nature's and bioRxiv's layout: no numbers, every heading bold at the body size, set like
    the paper's Abstract and Discussion headings, on a line of its own above the prose."""
    paper = _paper()
    paper.sections[-1].title = "Discussion"
    f = pdfgen.make_paper_pdf(tmp_path / "bold.pdf", paper,
                              pdfgen.Layout(columns=1, bold_headings=True))
    got = [s.title for s in split_pdf(f).sections if s.kind not in ("front", "abstract")]
    assert got == [s.title for s in paper.sections] + ["References"] + [
        s.title for s in paper.appendix]
