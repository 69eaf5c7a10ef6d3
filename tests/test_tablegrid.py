"""Table cells placed by where they are printed (pdf.tablegrid) and the verifier's checks on
them: headers over two lines, multi-word names, row swaps, on the real Attention ingest."""

from __future__ import annotations

import pytest
from episteme.pdf.tablegrid import Cell, build_grid
from episteme.query.trace import Tracer
from episteme.query.verify import CONTRADICTED, SUPPORTED, grid_check, numbers_in
from ingested_wiki import wiki_settings


def cells(*spec: tuple[str, float, float]) -> list[Cell]:
    out, at = [], 0
    for text, x0, x1 in spec:
        out.append(Cell(text, x0, x1, at, at + len(text), 9.0))
        at += len(text) + 1
    return out


def test_build_grid_merges_header_lines_by_column():
    """A name printed over two value columns names both; the second header line splits them;
    a name left of every value column heads the labels, never a value."""
    g = build_grid([
        cells(("Model", 10, 40), ("Robust track", 110, 170), ("Web", 207, 223)),
        cells(("MAP", 100, 120), ("P@10", 150, 175), ("MAP", 190, 205), ("P@10", 220, 240)),
        cells(("BM25", 10, 30), ("0.25", 100, 118), ("0.44", 150, 168), ("0.21", 190, 208),
              ("0.32", 222, 240)),
        cells(("TW-IDF", 10, 38), ("0.24", 100, 118), ("0.41", 150, 168), ("0.22", 190, 208),
              ("0.29", 222, 240)),
    ])
    assert g is not None and g.label_heads == {"Model"}
    bm25 = g.rows[0]
    assert bm25.label == "BM25"
    assert [bm25.heads[k] for k in bm25.values] == [
        ["Robust track", "MAP"], ["Robust track", "P@10"], ["Web", "MAP"], ["Web", "P@10"]]
    claim = "BM25 reaches a MAP of 0.21 on the Web track."
    assert grid_check(claim, numbers_in(claim), g)[0] == "agree"
    claim = "BM25 reaches a MAP of 0.21 on the Robust track."
    assert grid_check(claim, numbers_in(claim), g)[0] == "value_of_other"
    # the row swap: 0.22 is TW-IDF's; BM25's cell in that column holds 0.21
    claim = "BM25 reaches a MAP of 0.22 on the Web track."
    code, text, (ri, ki) = grid_check(claim, numbers_in(claim), g)
    assert code == "cell_differs" and "0.21" in text and g.rows[ri].label == "BM25"


def test_unlabelled_rows_split_values_across_rows():
    """Rows keyed by a number (k = 1, 2, 3): a claim pairing the key of one row with a value of
    another is contradicted, with the value the key's row really holds."""
    g = build_grid([
        cells(("k", 10, 14), ("Residue", 60, 90)),
        cells(("1", 10, 14), ("0.18", 60, 80)),
        cells(("2", 10, 14), ("0.037", 60, 82)),
    ])
    claim = "With k = 2 the residue is 0.18."
    code, text, _ = grid_check(claim, numbers_in(claim), g)
    assert code == "values_split" and "0.037" in text
    claim = "With k = 2 the residue is 0.037."
    assert grid_check(claim, numbers_in(claim), g)[0] == "agree"


def test_a_changed_value_beside_a_true_one_in_the_named_row_is_contradicted():
    """A claim giving two values of a row, one of them changed to a number the table does not
    hold (another table's): the row and both columns are named, so the cell the changed value
    claims holds the table's own value, and the true value beside it does not make the claim
    agree.  A number in a name ("Recall@20") or a setting ("10-crop") is no such value."""
    g = build_grid([
        cells(("model", 10, 40), ("top-1 err.", 100, 140), ("top-5 err.", 160, 200)),
        cells(("ResNet-101", 10, 50), ("21.75", 100, 120), ("6.05", 160, 180)),
        cells(("ResNet-152", 10, 50), ("21.43", 100, 120), ("5.71", 160, 180)),
    ])
    claim = "With 10-crop testing, ResNet-152 has a top-1 err. of 19.38% and a top-5 err. of 5.71%."
    code, text, (ri, ki) = grid_check(claim, numbers_in(claim), g)
    assert code == "cell_differs" and "21.43" in text and "19.38" in text
    assert g.rows[ri].label == "ResNet-152"
    claim = "With 10-crop testing, ResNet-152 has a top-1 err. of 21.43% and a top-5 err. of 5.71%."
    assert grid_check(claim, numbers_in(claim), g)[0] == "agree"
    g = build_grid([
        cells(("Method", 10, 40), ("Recall", 100, 130), ("Recall@20", 160, 200)),
        cells(("PaSa-7b", 10, 50), ("0.6111", 100, 125), ("0.5798", 160, 185)),
    ])
    claim = "PaSa-7b reaches a Recall@20 of 0.5798."
    assert grid_check(claim, numbers_in(claim), g)[0] == "agree"


@pytest.fixture
def tracer(ingested_wiki, embedder):
    t = Tracer(wiki_settings(ingested_wiki), embedder=embedder)
    yield t
    t.store.close()


def _table2(tracer: Tracer) -> dict:
    ids = [r[0] for r in tracer.store.conn.execute(
        "SELECT id FROM passages WHERE section_id = 'attention_1706.03762v5.pdf#table-2' ORDER BY ord")]
    return tracer._passages(ids[:1])[ids[0]]


def test_real_table_two_header_lines_placed_by_x(tracer):
    """Attention's Table 2 prints "BLEU" over "EN-DE EN-FR" (and "Training Cost" over two more):
    the text has no way to say which pair a value is under; the printed places do."""
    g = tracer.table_grid(_table2(tracer))
    assert g is not None
    big = next(r for r in g.rows if r.label.startswith("Transformer (big)"))
    heads = {big.cells[k].text: big.heads[k] for k in big.values}
    assert heads["28.4"] == ["BLEU", "EN-DE"] and heads["41.8"] == ["BLEU", "EN-FR"]
    assert "Model" in g.label_heads


def test_trace_row_swap_in_a_real_table(tracer):
    res = tracer.trace("The Transformer (base model) reaches 27.3 BLEU on English-to-German.")
    assert res["claims"][0]["verdict"] == SUPPORTED
    c = tracer.trace("The Transformer (base model) reaches 28.4 BLEU on English-to-German.")["claims"][0]
    assert c["verdict"] == CONTRADICTED and c["reason"]["code"] == "cell_differs"
    assert "27.3" in c["reason"]["text"]
    assert c["passages"][0]["quote"] in c["passages"][0]["passage"]


def test_no_pdf_no_grid(tracer):
    """Without the paper in raw/ the table is read from its text alone (no error)."""
    p = _table2(tracer)
    (tracer.settings.wiki / "raw" / p["paper"]).unlink()
    assert tracer.table_grid(p) is None
    c = tracer.trace("The Transformer (big) reaches 28.4 BLEU on English-to-German.")["claims"][0]
    assert c["verdict"] == SUPPORTED


def test_one_caption_rule_is_shared_by_objects_grids_and_headings():
    """pdf/captions is the one answer to "is this a caption": the label line with its
    delimiter (Roman numerals, appendix labels, Algorithm), not a sentence about a table; the
    splitter's modules use it rather than patterns of their own."""
    from episteme.pdf import captions, headings, objects, tablegrid

    assert captions.caption_label("Fig. 3: Loss curves") == "figure 3"
    assert captions.caption_label("TABLE IV. Results") == "table iv"
    assert captions.caption_label("Table A.2 | Ablations") == "table a.2"
    assert captions.caption_label("Algorithm 1") == "algorithm 1"
    assert captions.caption_label("Table 2 shows the BLEU scores") is None
    assert captions.strip_label("Table 2: BLEU scores.") == "BLEU scores."
    assert captions.names_float("Table 2 shows the BLEU scores")
    assert not captions.names_float("Tables and chairs")
    assert objects.CAPTION_START is captions.CAPTION_LABEL
    assert tablegrid.caption_match is captions.caption_match
    assert headings.names_float is captions.names_float
