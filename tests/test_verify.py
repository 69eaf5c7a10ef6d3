"""The offline verifier: numbers, names, bindings, negation and comparisons read from the text
of passages (unit level), and verdicts through the tracer on the real Attention + GAN stores."""

from __future__ import annotations

import pytest
from episteme.query.trace import Tracer
from episteme.query.verify import (
    CONTRADICTED,
    SUPPORTED,
    UNSUPPORTED,
    Verifier,
    entities_in,
    numbers_in,
    siblings,
)
from ingested_wiki import wiki_settings


def values(text: str, evidence: bool = False) -> list[set[float]]:
    return [set(n.values) for n in numbers_in(text, evidence=evidence) if n.lo is None]


def test_numbers_read_in_their_formats():
    assert {28.4} <= values("reaches 28.40 BLEU")[0]
    assert 0.863 in values("an accuracy of 86.3%")[0]
    assert 37000.0 in values("about 37,000 tokens")[0]
    assert 508305.0 in set().union(*values("508, 305 papers", evidence=True))
    assert 4.5e6 in values("4.5 million pairs")[0] and 4.5e6 in values("4.5M pairs")[0]
    assert values("three weeks")[0] == {3.0}
    assert values("a third as many")[0] == {round(1 / 3, 6)}
    assert 0.75 in set().union(*values("the 3 4 th power", evidence=True))
    assert 0.75 in values("the power 3/4")[0]
    assert values("ResNet-152 and RNNsearch-50 on newstest2014") == []  # digits inside names
    assert values("see Table 2 and Figure 4") == []  # labels, not values
    assert values("5e-5")[0] == {5e-05}


def test_names_by_form():
    got = [e.text for e in entities_in("The base Transformer reaches 27.3 BLEU on the English-to-German "
                                       "test with ViT-L/16 and P4, but not on MNIST.")]
    assert got == ["Transformer", "BLEU", "English-to-German", "ViT-L/16", "P4", "MNIST"]
    assert entities_in("English-to-German")[0].key == entities_in("English-German")[0].key
    assert siblings("ViT-Large", "ViT-Huge") and siblings("P3", "P4")
    assert siblings("RNNsearch-50", "RNNencdec-50") and siblings("English-German", "English-French")
    assert not siblings("MNIST", "TFD") and not siblings("GPU", "GPUs")


def verdict(claim: str, *texts: str, **kw) -> dict:
    return Verifier(**kw).verify(claim, [{"text": t, "score": 1.0} for t in texts])


def test_number_contradicted_with_the_passage_value():
    p = "We use a window half-size D of 10 for local attention."
    v = verdict("Local attention uses a window half-size D of 50.", p)
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "number_mismatch"
    assert "50" in v["reason"]["text"] and "10" in v["reason"]["text"]
    assert verdict("Local attention uses a window half-size D of ten.", p)["verdict"] == SUPPORTED


def test_value_bound_to_another_row_or_column():
    table = ("Model Layers Hidden size D MLP size Heads Params ViT-Base 12 768 3072 12 86M "
             "ViT-Large 24 1024 4096 16 307M ViT-Huge 32 1280 5120 16 632M Table 1: model variants.")
    assert verdict("ViT-Large has 24 layers and 307M parameters.", table)["verdict"] == SUPPORTED
    v = verdict("ViT-Huge has 24 layers and 307M parameters.", table)
    assert v["verdict"] == CONTRADICTED and "ViT-Large" in v["reason"]["text"]
    cols = "Model MNIST TFD DBN [3] 138 ± 2 1909 ± 66 Adversarial nets 225 ± 2 2057 ± 26 Table 1"
    assert verdict("Adversarial nets reach 2057 ± 26 on TFD.", cols)["verdict"] == SUPPORTED
    v = verdict("Adversarial nets reach 2057 ± 26 on MNIST.", cols)
    assert v["verdict"] == CONTRADICTED and "TFD" in v["reason"]["text"]


def test_negation_and_comparison_direction():
    p = "We do not use dropout in any of the ImageNet models we train."
    assert verdict("The ImageNet models are trained without dropout.", p)["verdict"] == SUPPORTED
    v = verdict("The ImageNet models are trained with dropout.", p)
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "negation"
    c = "In terms of complexity, self-attention layers are faster than recurrent layers when n < d."
    assert verdict("A self-attention layer is cheaper than a recurrent layer.", c)["verdict"] == SUPPORTED
    v = verdict("A recurrent layer is cheaper than a self-attention layer.", c)
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "comparison"
    e = "The 1202-layer network has a test error worse than that of the 110-layer network."
    assert verdict("The 1202-layer network has a higher test error than the 110-layer network.",
                   e)["verdict"] == SUPPORTED


def test_unknown_name_unsupported_and_quote_is_verbatim():
    p = "We evaluate parsing on the Penn Treebank only, Section 23 of the WSJ portion."
    v = verdict("The parser was evaluated on the Penn Chinese Treebank.", p,
                in_scope=lambda name: name.lower() in p.lower())
    assert v["verdict"] == UNSUPPORTED and "Chinese" in v["reason"]["text"]
    v = verdict("The ImageNet models are trained with dropout.",
                "Training details follow. We do not use dropout in the ImageNet models. Done.")
    a, b = v["span"]
    assert "Training details follow. We do not use dropout in the ImageNet models. Done."[a:b] == \
        "We do not use dropout in the ImageNet models."


@pytest.fixture
def tracer(ingested_wiki, embedder):
    t = Tracer(wiki_settings(ingested_wiki), embedder=embedder)
    yield t
    t.store.close()


def test_trace_verdicts_on_real_papers(tracer):
    res = tracer.trace(
        "The Transformer (big) reaches 28.4 BLEU on the WMT 2014 English-to-German task. "
        "The Transformer (big) reaches 34.2 BLEU on the WMT 2014 English-to-German task. "
        "Dropout was not applied in training the discriminator net.")
    c = res["claims"]
    assert [x["verdict"] for x in c] == [SUPPORTED, CONTRADICTED, CONTRADICTED]
    assert c[1]["reason"]["code"] == "number_mismatch" and "34.2" in c[1]["reason"]["text"]
    # the contradicting quote is a verbatim span of the cited passage, and it is cited first
    for x in c:
        assert x["supported"] == (x["verdict"] == SUPPORTED)
        assert x["passages"][0]["quote"] in x["passages"][0]["passage"]
        assert [p["rank"] for p in x["passages"]] == list(range(1, len(x["passages"]) + 1))
    assert "28.4" in c[1]["evidence"]["quote"]
    assert res["contradicted_claims"] == [c[1]["claim"], c[2]["claim"]]
    assert set(res["unsupported_claims"]) == {c[1]["claim"], c[2]["claim"]}
    # sources list only supported claims' passages
    assert all(s["claim"] == c[0]["claim"] for s in res["sources"])


# --------------------------------------------------------------- line-laid tables, language pairs

LINE_TABLE = ("Table 4: Scores of the parsers on three treebanks (higher is better).\n"
              "System\tAlpha Bank\tBeta Bank\tGamma Bank\n"
              "Baseline\t71.2 64.0 58.3\n"
              "OurParser\t79.5 70.1 66.8\n")


def test_table_value_read_under_its_column():
    """A value of a line-laid table belongs to the header name above its cell; the header's
    first name (the label column) is never a value's column."""
    ok = verdict("OurParser scores 70.1 on the Beta Bank.", LINE_TABLE)
    assert ok["verdict"] == SUPPORTED
    bad = verdict("OurParser scores 70.1 on the Gamma Bank.", LINE_TABLE)
    assert bad["verdict"] == CONTRADICTED and bad["reason"]["code"] == "value_of_other"
    assert "Beta" in bad["reason"]["text"] or "Gamma" in bad["reason"]["text"]
    # "system" names the label column: it cannot take 79.5 away from its own column
    assert verdict("Our system OurParser scores 79.5 on the Alpha Bank.", LINE_TABLE)["verdict"] == SUPPORTED


def test_table_chunk_reads_the_header_of_its_section():
    """A later chunk of a table (no caption, no header) is read with its section's head: the
    tracer passes it as ``table_head``."""
    head = "Table 2: BLEU of the systems.\nModel\nEN-DE EN-FR EN-DE EN-FR\nOld system 20.1 30.2\n"
    chunk = "Old system 20.1 30.2\nNew system 27.3 38.1\t3.3 · 1018\n"
    p = [{"text": chunk, "score": 1.0, "table_head": head}]
    assert Verifier().verify("The new system reaches 27.3 BLEU on English-to-German and 38.1 on "
                             "English-to-French.", p)["verdict"] == SUPPORTED
    v = Verifier().verify("The new system reaches 27.3 BLEU on English-to-French and 38.1 on "
                          "English-to-German.", p)
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "values_swapped"
    # without the head the columns are unknown: no verdict on them
    assert Verifier().verify("The new system reaches 27.3 BLEU on English-to-French and 38.1 on "
                             "English-to-German.", [{"text": chunk, "score": 1.0}])["verdict"] != CONTRADICTED


def test_language_pairs_read_as_codes_with_direction():
    from episteme.query.verify import entity_key, lang_pair

    assert lang_pair("English-to-German") == lang_pair("EN-DE") == lang_pair("En→De") == ("en", "de")
    assert lang_pair("German-English") == ("de", "en")
    assert lang_pair("Treebank-style") is None and lang_pair("ViT-Large") is None
    assert entity_key("English-German") == entity_key("EN-DE") != entity_key("DE-EN")
    assert siblings("English-to-German", "EN-FR") and not siblings("EN-DE", "English-German")
    p = "On the English to German task the model gains 2 BLEU."
    assert verdict("On the English-German task the model gains 2 BLEU.", p)["verdict"] == SUPPORTED


def test_specific_values_read_past_the_top_passages():
    """A passage beyond the first K that states all the claim's values (specific enough not to
    meet by chance) is read; a lone small number is not (it would meet anything)."""
    filler = [{"text": f"Unrelated prose number {i} about training.", "score": 0.9} for i in range(6)]
    row = {"text": "Results\nSystem A 41.27 19.85\nSystem B 40.02 18.11", "score": 0.1}
    v = Verifier().verify("System B reaches 40.02 and 18.11.", filler + [row])
    assert v["verdict"] == SUPPORTED and v["order"][0] == 6 and v["evidence"] == 6
    v = Verifier().verify("The model has 3 layers.", filler + [{"text": "It has 3 layers.", "score": 0.1}])
    assert 6 not in v["order"]


def test_row_label_in_a_line_laid_table():
    t = "Table 1: Records removed by each filter.\nFilter Count\nNo date 12k\nNo venue 0.4M\nDuplicate 7.5M\n"
    assert verdict("About 7.5 million records were removed as duplicates.", t)["verdict"] == SUPPORTED
    v = verdict("About 7.5 million records were removed because they had no venue.", t)
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "value_of_other"


def test_negation_compared_by_what_it_governs():
    """A negation counts against a claim when it governs one of the claim's words ("we apply no
    *dropout*"), even with no second shared word in its scope; a word outside its head ("SGD")
    is not denied by it, and a claim denying the same head agrees with it."""
    from episteme.query.verify import negated_heads

    ev = "Training uses SGD with a mini-batch size of 256 and we apply no dropout, following common practice."
    assert negated_heads(ev) == {"dropout"}
    assert negated_heads("We do not use dropout in these models.") == {"dropout"}
    bad = verdict("The models are trained with dropout.", ev)
    assert bad["verdict"] == CONTRADICTED and bad["reason"]["code"] == "negation"
    assert verdict("The models are trained without dropout.", ev)["verdict"] == SUPPORTED
    assert verdict("The models are trained with SGD.", ev)["verdict"] == SUPPORTED
