"""Passage coordinates stored at ingest (schema v3): every passage carries the boxes of the
printed lines it was read from, checked against the page's own text (PDFium reading inside the
box) and against the highlighter's independent search for the same words."""

from __future__ import annotations

import difflib
import json
import re
import sqlite3

import pytest
from episteme.pdf.passages import make_passages
from episteme.pdf.split import split_pdf

PAPERS = [("papers", "attention_1706.03762v5.pdf"), ("papers", "bert_1810.04805v2.pdf"),
          ("papers-more", "ieee_sp_sok_memory_2013.pdf"),
          ("papers-more", "plosone_wheat_heat_stress_2018.pdf")]


def _words(s: str) -> list[str]:
    """Words of 3+ letters/digits as the highlighter folds them (line-break hyphens joined)."""
    from episteme.pdf.highlight import normalize

    stream, _src, words = normalize(re.sub(r"[\ufffe\x02]\s*", "", s))  # PDFium's breaks
    return [stream[a:b] for a, b in words if b - a >= 3]


def _in_order(want: list[str], have: list[str]) -> float:
    """Share of ``want`` found in ``have`` in order (difflib's matching blocks)."""
    if not want:
        return 1.0
    sm = difflib.SequenceMatcher(None, want, have, autojunk=False)
    return sum(b.size for b in sm.get_matching_blocks()) / len(want)


def _count_tokens(text: str) -> int:
    return len(text.split()) * 4 // 3 + 1


@pytest.fixture(scope="module", params=PAPERS, ids=[p[1] for p in PAPERS])
def split_paper(request, shared):
    folder, name = request.param
    pdf = shared / "data" / folder / name
    return pdf, split_pdf(pdf)


def _body_passages(res, every: int = 3):
    out = []
    for s in res.sections:
        if s.kind in ("references",) or not s.text.strip():
            continue
        for p in make_passages(s, _count_tokens, max_tokens=200):
            out.append((s, p, s.boxes_for(p.char_start, p.char_end)))
    return out[::every]


def test_stored_boxes_cover_the_passage_text(split_paper):
    from episteme.pdf.highlight import text_in_box

    pdf, res = split_paper
    checked = 0
    for _s, p, boxes in _body_passages(res):
        assert boxes, f"passage without boxes on p. {p.page}: {p.text[:60]!r}"
        assert boxes[0]["page"] == p.page  # a passage is dated by the page it starts on
        for b in boxes:
            x0, y0, x1, y1 = b["bbox"]
            assert 0 <= x0 < x1 and 0 <= y0 < y1 and 0 <= b["start"] < b["end"] <= len(p.text)
        under = " ".join(text_in_box(pdf, b["page"], b["bbox"]) for b in boxes)
        share = _in_order(_words(p.text), _words(under))
        assert share >= 0.9, (p.page, share, p.text[:80])
        checked += 1
    assert checked >= 5


def _inside(q: dict, boxes: list[dict]) -> bool:
    """Box ``q`` lies within one of ``boxes`` (same page, its middle inside, its ends within)."""
    qx0, qy0, qx1, qy1 = q["bbox"]
    cy = (qy0 + qy1) / 2
    return any(b["page"] == q["page"] and b["bbox"][1] - 2 <= cy <= b["bbox"][3] + 2
               and qx0 >= b["bbox"][0] - 3 and qx1 <= b["bbox"][2] + 3 for b in boxes)


def test_stored_boxes_agree_with_the_highlighter(split_paper):
    """The highlighter finds a passage's first sentence in the PDF on its own; each of its line
    boxes lies inside one of the stored line boxes of that passage (same page, overlapping)."""
    from episteme.pdf.highlight import quote_boxes

    pdf, res = split_paper
    agreed = total = 0
    for _s, p, boxes in _body_passages(res, every=4):
        sentence = p.text.split(". ")[0]
        if len(sentence) < 40:
            continue
        found = quote_boxes(pdf, p.page, sentence)
        if not found:
            continue
        total += 1

        agreed += all(_inside(q, boxes) for q in found)
    assert total >= 3
    # (a miss is a subscript or math glyph the highlighter boxes on its own baseline)
    assert agreed / total >= 0.85, (agreed, total)


def test_a_quote_narrows_stored_boxes_to_its_own_lines(split_paper):
    from episteme.pdf.highlight import stored_quote_boxes

    _pdf, res = split_paper
    _s, p, boxes = next(x for x in _body_passages(res, every=1) if len(x[2]) >= 4)
    tail = p.text[boxes[-1]["start"]:boxes[-1]["end"]].strip()
    got = stored_quote_boxes(boxes, p.text, tail)
    assert got and len(got) < len(boxes) and got[-1]["bbox"] == boxes[-1]["bbox"]
    assert len(stored_quote_boxes(boxes, p.text, None)) == len(boxes)
    assert stored_quote_boxes(boxes, p.text, "words that are not in this passage at all") == []


def test_ingest_stores_boxes_and_sources_use_them_without_the_pdf(ingested_template, tmp_path):
    from episteme.pdf.highlight import attach_boxes
    from episteme.stores.sqlite import SCHEMA_VERSION, open_store, passage_boxes
    from ingested_wiki import wiki_settings

    settings = wiki_settings(ingested_template / "wiki")
    with open_store(settings, readonly=True) as st:
        assert st.schema_version() == SCHEMA_VERSION >= 3
        rows = st.passages()
        kinds = {s["section_id"]: s["kind"] for s in st.sections()}
    with_boxes = [r for r in rows if r["boxes"]]
    assert len(with_boxes) >= 0.98 * len(rows)
    table = next(r for r in rows if kinds[r["section_id"]] == "table")
    assert table["boxes"] and table["boxes"][0]["page"] == table["page"]
    p = next(r for r in with_boxes if len(r["boxes"]) >= 3 and kinds[r["section_id"]] == "body")
    stored = passage_boxes(settings, [p["id"], "no-such~1"])
    assert list(stored) == [p["id"]]
    quote = p["text"][p["boxes"][1]["start"]:p["boxes"][1]["end"]].strip()
    result = {"sources": [{"paper": p["paper_id"], "page": p["page"], "passage": p["text"],
                           "passage_id": p["id"], "quote": quote}]}
    # a wiki folder without raw/: any box must have come from the store
    attach_boxes(tmp_path / "no-wiki", result,
                 stored=lambda ids: passage_boxes(settings, ids))
    assert result["sources"][0]["boxes"] == [{"page": p["boxes"][1]["page"],
                                              "bbox": p["boxes"][1]["bbox"]}]


def test_a_v2_store_is_migrated_and_keeps_its_passages(tmp_path):
    from episteme.stores.sqlite import MIGRATIONS, SCHEMA_VERSION, Store

    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    for step in MIGRATIONS[:2]:  # the store as version 2 made it
        con.executescript(step)
    con.execute("PRAGMA user_version = 2")
    con.execute("INSERT INTO papers (id, file, sha256, pages, ingested_at) "
                "VALUES ('p.pdf', 'raw/p.pdf', 'x', 1, 'now')")
    con.execute("INSERT INTO sections VALUES ('p.pdf#1', 'p.pdf', 0, '1', 'Intro', 1, 'body', 1, "
                "1, 'Some text.', '1 Intro', 'p.pdf')")
    con.execute("INSERT INTO passages (id, section_id, paper_id, ord, text, page, char_start, "
                "char_end) VALUES ('p.pdf#1~0', 'p.pdf#1', 'p.pdf', 0, 'Some text.', 1, 0, 10)")
    con.commit()
    con.close()
    with Store(path) as st:
        assert st.schema_version() == SCHEMA_VERSION >= 3
        (row,) = st.passages()
        assert row["text"] == "Some text." and row["boxes"] == []
    raw = sqlite3.connect(path).execute("SELECT boxes FROM passages").fetchone()[0]
    assert json.loads(raw) == []
