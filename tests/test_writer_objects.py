"""The offline writer names the tables and figures of the paper section a wiki section is
written from ("p. 8, **Table 2**: “caption”"), quoting captions as the paper prints them, and
a table's key rows under its caption."""

from __future__ import annotations

import datetime

from episteme.compile.objects import (
    caption_sentence,
    caption_text,
    objects_paragraph,
    section_objects,
)
from ingested_wiki import wiki_settings

ATTENTION = "attention_1706.03762v5.pdf"


def test_caption_sentence_drops_the_label_and_keeps_the_first_sentence():
    cap = ("Table 2: The Transformer achieves better BLEU scores than previous models. "
           "Training costs are estimated [[x]].")
    assert caption_sentence(cap) == "The Transformer achieves better BLEU scores than previous models."
    assert caption_sentence("Figure 1: The Transformer - model architecture.") == (
        "The Transformer - model architecture.")
    assert "[[" not in caption_sentence("Figure 3: A [[link]] in a caption")
    long = "Figure 9: " + "word " * 100
    assert len(caption_sentence(long)) <= 240 and caption_sentence(long).endswith("…")


def test_caption_text_keeps_whole_short_captions_and_cuts_long_ones_at_a_sentence():
    cap = ("Table 1: Parzen window-based log-likelihood estimates. The reported numbers on MNIST "
           "are the mean log-likelihood of samples on test set.")
    assert caption_text(cap) == cap.split(": ", 1)[1]  # both sentences: the second says what the numbers are
    long = "Table 4: First sentence here is short. " + "Second sentence is long " * 20 + "end."
    assert caption_text(long) == "First sentence here is short."


def test_objects_paragraph_lists_and_counts():
    objs = [{"label": f"Figure {i}", "page": i, "caption": f"Figure {i}: Shows thing {i}."}
            for i in range(1, 7)]
    text = objects_paragraph(objs, limit=4)
    assert text.count("\n- p. ") == 4 and "- p. 4, **Figure 4**: “Shows thing 4.”" in text
    assert text.endswith("- and 2 more in this section of the paper")
    assert objects_paragraph([]) == ""
    assert section_objects([{"section": "6.1 Machine Translation"}, {"section": "6 Results"}],
                           "6.1", "Machine Translation") == [{"section": "6.1 Machine Translation"}]


def test_extractive_plan_quotes_the_sections_tables_and_figures(ingested_wiki, embedder):
    from episteme.compile.extractive import plan_extractive
    from episteme.stores.sqlite import open_store

    settings = wiki_settings(ingested_wiki)
    with open_store(settings, readonly=True) as st:
        objects = {o["label"]: o for o in st.objects(ATTENTION)}
        sections = {s["section_id"]: s for s in st.sections(ATTENTION)}
    plan = plan_extractive(settings, ATTENTION, embedder=embedder,
                           today=datetime.date(2026, 12, 1))
    by_section = {d.paper_section: d for d in plan.decisions if d.paper_section}
    t2 = objects["Table 2"]
    owner = next(sid for sid, s in sections.items()
                 if f"{s['number'] or ''} {s['title']}".strip() == t2["section"])
    body = by_section[owner].body
    assert f"p. {t2['page']}, **Table 2**: “The Transformer achieves better BLEU scores" in body
    mentioned = 0
    for d in plan.decisions:
        for line in d.body.splitlines():
            if not line.startswith("- p. ") or "**: “" not in line:
                continue
            label = line[line.index("**") + 2:line.index("**: “")]
            quote = line.split("**: “", 1)[1].rstrip("”").rstrip("…")
            # the quote is the stored caption's own text: it traces to the object's passage
            assert quote in " ".join(objects[label]["caption"].split()), (label, quote)
            mentioned += 1
    assert mentioned >= 5
