"""Metadata from a paper's first pages: names, venue, year and BibTeX type by stated rules."""

from __future__ import annotations

import pdfgen
from episteme.pdf.meta import bibtex, extract_meta
from episteme.pdf.split import _person_like, clean_name, split_pdf
from episteme.pdf.text import normalize_text


def test_accents_printed_apart_are_composed():
    assert normalize_text("L´aszl´o Szekeres") == "László Szekeres"
    assert normalize_text("The Lemaˆıtre–Tolman model") == "The Lemaître–Tolman model"
    assert normalize_text("Fran¸cois, G¨odel, Universit`a") == "François, Gödel, Università"
    assert normalize_text("see `code` here") == "see `code` here"  # a quote mark, not an accent


def test_organisations_and_marks_are_not_names():
    for org in ("NiuTrans Co.", "Samaya AI", "Contemporary Mathematics", "IEEE",
                "Acme Technologies"):
        assert not _person_like(org), org
    for person in ("Weinan E", "DANIEL LITT", "Md Ali Babar", "Ivo H. M. van Stokkum"):
        assert _person_like(person), person
    assert clean_name("Alec Radford*") == "Alec Radford"
    assert clean_name("Meera Nanjundan ⇑") == "Meera Nanjundan"
    assert clean_name("Salvador M. Guinjoan M.D. Ph.D.") == "Salvador M. Guinjoan"
    assert clean_name("Dr. Saeed Murtaza") == "Saeed Murtaza"
    assert clean_name("Ambroise Lafont[0000-0002-9299-641X]") == "Ambroise Lafont"
    assert not _person_like("Attribution-NonCommercial-NoDerivatives License")
    assert not _person_like("MASTER OF SCIENCE")


def test_authors_are_the_name_lines_not_the_affiliations(tmp_path):
    """Marks after names, a name broken over a line end, and an affiliation line (smaller
    type) whose place names read like people: only the authors come out."""
    paper = pdfgen.sample_paper()
    paper.authors = ["Mira Okafor*", "Tomás Lindqvist†", "Ana Silva", "Jonas Berg",
                     "Kofi Mensah", "Lena Vogel", "Pavel Novak", "Rosa Delgado"]
    paper.affiliations = ["Ann Arbor and Portsmouth"]
    f = pdfgen.make_paper_pdf(tmp_path / "names.pdf", paper, pdfgen.Layout(columns=1))
    assert split_pdf(f).authors == ["Mira Okafor", "Tomás Lindqvist", "Ana Silva", "Jonas Berg",
                                    "Kofi Mensah", "Lena Vogel", "Pavel Novak", "Rosa Delgado"]


def _entry(meta: dict) -> str:
    return bibtex({"title": "A Paper", "authors": ["Ann Author"], "meta": meta})


def test_a_templates_leftover_subject_is_not_the_venue():
    info = {"/Subject": "Proceedings of the International Conference on Machine Learning 2019",
            "/CreationDate": "D:20190214"}
    page = ["Language Models are Unsupervised Multitask Learners", "Alec Radford", "Abstract",
            "Natural language processing tasks are typically approached with supervised"]
    meta = extract_meta(info, page, [])
    assert "venue" not in meta and _entry(meta).startswith("@misc")
    printed = extract_meta(info, [*page, "Proceedings of the International Conference on "
                                  "Machine Learning, Long Beach, 2019"], [])
    assert printed["year"] == 2019 and _entry(printed).startswith("@inproceedings")


def test_another_versions_venue_is_not_this_documents():
    page = ["Epidemic Algorithms for Replicated Database Maintenance", "Alan Demers",
            "CSL-89-1 January 1989",
            "An earlier version of this paper appeared in the Proceedings of the Sixth Annual",
            "ACM Symposium on Principles of Distributed Computing, Vancouver, August 1987."]
    meta = extract_meta({}, page, [])
    assert "venue" not in meta and meta["year"] == 1989
    assert meta["entry_type"] == "techreport" and _entry(meta).startswith("@techreport")


def test_acm_block_journal_footer_and_doi_give_the_type():
    acm = extract_meta({}, ["CIKM’13, Oct. 27–Nov. 1, 2013, San Francisco, CA, USA.",
                            "Copyright 2013 ACM 978-1-4503-2263-8/13/10"], [])
    assert acm["venue"] == "CIKM’13" and acm["year"] == 2013
    assert _entry(acm).startswith("@inproceedings")
    plos = extract_meta({}, ["PLOS ONE | https://doi.org/10.1371/journal.pone.0197919 June 13, "
                             "2018 1 / 21"], [])
    assert plos["venue"] == "PLOS ONE" and _entry(plos).startswith("@article")
    assert _entry({"doi": "10.1002/rsa.10073"}).startswith("@article")
    assert _entry({"venue": "Proceedings of the National Academy of Sciences"}).startswith(
        "@article")
    assert _entry({"venue": "bioRxiv"}).startswith("@misc")


def test_year_from_the_pages_dates_never_the_files():
    """The file's creation date is not the paper's year; of the dates printed, a publication
    (or acceptance) date wins over a received date, and a citation's year counts for nothing."""
    assert "year" not in extract_meta({"/CreationDate": "D:20160301"},
                                      ["Notes on graphs", "Daniel Litt"], [])
    meta = extract_meta({}, ["Received: 1 April 2023", "Accepted: 3 January 2024",
                             "as shown by Smith (2019) and Jones (2019)"], [])
    assert meta["year"] == 2024
    stamp = ["bioRxiv preprint doi: https://doi.org/10.1101/2022.03.19.484946; this version "
             "posted March 21, 2022. The copyright holder for this preprint"]
    meta = extract_meta({}, stamp, [])
    assert meta["year"] == 2022 and meta["venue"] == "bioRxiv"
    assert _entry(meta).startswith("@misc")


def test_accent_glyphs_are_placed_on_their_letters_in_real_papers(shared):
    """Old TeX fonts print an accent as its own glyph; PDFium reports it out of order
    ("Montr ´ eal ´").  Placed by position, names and words read as printed."""
    sok = split_pdf(shared / "data" / "papers-more" / "ieee_sp_sok_memory_2013.pdf")
    assert sok.authors[0] == "László Szekeres"
    gan = split_pdf(shared / "data" / "papers" / "gan_1406.2661v1.pdf")
    front = gan.sections[0].text
    assert "Université de Montréal" in front and "´" not in front and " \u0301" not in front


def test_an_appendix_letter_never_opens_page_one(tmp_path):
    """A title that starts with the article "A" in bold large type is the paper's title, not
    appendix A (which then made every Roman-numbered section unreachable)."""
    paper = pdfgen.sample_paper()
    paper.title = "A Model for Harbour Tides"
    f = pdfgen.make_paper_pdf(tmp_path / "a.pdf", paper, pdfgen.Layout(columns=2, ieee=True))
    res = split_pdf(f)
    assert not any(s.number == "A" and s.title.startswith("Model") for s in res.sections)
    assert [s.title for s in res.sections if s.number == "I"] == ["INTRODUCTION"]
