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


def test_a_value_counts_only_in_a_passage_about_the_claim():
    """The claim's "5" in a passage sharing none of its words is a coincidence of digits: the
    on-topic passage giving the quantity another value decides (a number mismatch), and the
    off-topic one is not cited as the evidence."""
    claim = "In the experiments, the discriminator was updated k = 5 times per generator update."
    on_topic = {"text": "The discriminator is updated k times per generator update. We used k = 1 "
                        "in our experiments, the cheapest setting.", "score": 0.7, "paper": "a"}
    off_topic = {"text": "The model set includes 7 residual networks and 5 hybrids, pre-trained "
                         "for 14 epochs on the image corpus.", "score": 0.5, "paper": "b"}
    v = Verifier().verify(claim, [on_topic, off_topic])
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "number_mismatch"
    assert v["evidence"] == 0 and "1" in v["reason"]["text"]
    # the same value in the on-topic passage is still found there
    agree = {**on_topic, "text": on_topic["text"].replace("k = 1", "k = 5")}
    assert Verifier().verify(claim, [agree, off_topic])["verdict"] == SUPPORTED
    # a claim of numbers alone, or whose words are names with digits, has no words to judge
    # a passage's topic by: its values are still found in its own passage
    row = "Examples 392k 363k 108k 67k 8.5k 5.7k\nCIFAR100 10 000 {0.001, 0.003, 0.01}"
    for sent in ("392k 363k 108k 67k 8.5k 5.7k", "CIFAR100 10 000 {0.001, 0.003, 0.01}"):
        got = Verifier(verbatim=False).verify(sent, [{"text": row, "score": 1.0}])
        assert got["verdict"] == SUPPORTED, (sent, got["reason"])


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


def test_a_word_meets_its_inflections():
    """The stemmer both sides share: a base form and its inflections are one term (e-final
    verbs, -y/-ies/-ied, doubled consonants, -ate/-ation), and unrelated words stay apart."""
    from episteme.query.text import stem

    for forms in (("reduce", "reduced", "reduces", "reducing"), ("scale", "scaled", "scales", "scaling"),
                  ("use", "used", "uses", "using"), ("study", "studied", "studies", "studying"),
                  ("apply", "applied", "applies", "applying"), ("stop", "stopped", "stopping", "stops"),
                  ("embed", "embedded", "embedding", "embeddings"), ("model", "modelled", "models"),
                  ("generate", "generated", "generation", "generates"), ("table", "tables"),
                  ("represent", "represented", "representation"), ("bias", "biases", "biased"),
                  ("need", "needed", "needs"), ("improve", "improved", "improvement"),
                  ("heavy", "heavily"), ("probable", "probably")):
        assert len({stem(w) for w in forms}) == 1, [(w, stem(w)) for w in forms]
    for a, b in (("thing", "the"), ("string", "str"), ("supply", "sup"), ("corpus", "corpu"),
                 ("comment", "come"), ("format", "form")):
        assert stem(a) != stem(b)
    assert stem("GPUs") == stem("gpu") and stem("T5") == "t5"


def test_a_denial_meets_the_inflected_statement_it_denies():
    """A negated claim is contradicted by the passage that states it in another inflection
    ("did not study" / "studied", "does not apply" / "applies")."""
    v = verdict("The authors did not study the effect of the window size.",
                "We studied the effect of the window size on the results.")
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "negation"
    v = verdict("The encoder does not apply dropout to the embeddings.",
                "The encoder applies dropout to the embeddings.")
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "negation"


def test_a_comparison_is_read_where_the_same_names_are_compared():
    """Of two comparing sentences, the one comparing the claim's named things decides: the
    words of a name are read as written ("Net-Base" is not "NetX-based baselines", though the
    stemmer reads "base" and "based" alike)."""
    right = "On the small dataset, Net-Large models underperform Net-Base models after training."
    other = "Our pre-trained models on the large dataset outperform NetX-based baselines everywhere."
    for order in ((other, right), (right, other)):
        assert verdict("On the small dataset, Net-Large models do worse than Net-Base models.",
                       *order)["verdict"] == SUPPORTED
        v = verdict("On the small dataset, Net-Large models do better than Net-Base models.", *order)
        assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "comparison"


def test_a_denied_comparative_states_the_other_direction():
    """"does not reduce" contradicts "reduced"; a denial agrees with a denial; "not only
    improves" still improves."""
    p = "Dropout reduced overfitting in this model."
    v = verdict("Dropout does not reduce overfitting in this model.", p)
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "comparison"
    assert '"not reduce"' in v["reason"]["text"]
    assert verdict("Dropout does not reduce overfitting in this model.",
                   "Dropout did not reduce overfitting in this model.")["verdict"] == SUPPORTED
    assert verdict("The method not only improves accuracy but also speed.",
                   "The method improves accuracy and also speed.")["verdict"] == SUPPORTED


def test_only_a_label_word_makes_a_number_a_label():
    """"Table 2", "Fig. 4", "Section 3.2", "Eq. (5)", "§3", "p. 24", "Tables 2 and 3" are
    labels; a number after any other word ("After 24 hours", "Using 8 GPUs") is a value the
    verifier checks."""
    assert values("see Table 2, Fig. 4, Section 3.2, Eq. (5), §3, p. 24 and Tables 6 and 7") == []
    assert [min(v) for v in values("After 24 hours. Using 8 GPUs. During 10 runs.")] == [24, 8, 10]
    v = verdict("After 24 epochs the training loss stops improving.",
                "After 12 epochs the training loss stops improving.")
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "number_mismatch"
    v = verdict("Using 8 GPUs the model trains in 3.5 days.", "Using 4 GPUs the model trains in 3.5 days.")
    assert v["verdict"] == CONTRADICTED and "8" in v["reason"]["text"]
    assert verdict("As Table 3 shows, the model trains in 3.5 days.",
                   "The model trains in 3.5 days (Table 5).")["verdict"] == SUPPORTED


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


# a results paragraph in the layout of a field-trial paper (written for this test): a sentence
# stating a range, and next to it a negated sentence about some of the same words
FADE = ("The coatings had a clear effect on capacity fade and on impedance growth after cycling "
        "at room temperature (Table 3). However, the coating effect was not significant for cell "
        "capacity fade after cycling at low temperature. Capacity fade after 500 cycles at room "
        "temperature ranged from 8.2 to 14.6 percent, while impedance growth ranged from 21.5 to "
        "37.9 percent. The alumina coating limited capacity fade at room temperature the most.")


@pytest.mark.parametrize("verbatim", [True, False])
def test_a_copied_sentence_is_never_contradicted_by_its_passage(verbatim):
    """A claim copying a sentence of its passage, or the first clause of one, is supported:
    the negation of another sentence ("not significant for ... capacity fade") denies something
    the claim does not say.  With ``verbatim=False`` the checks themselves must agree (the
    negation check reads the sentence that says all the claim says); as shipped the quote rule
    also hands back the copied span."""
    v = Verifier(verbatim=verbatim)
    sentence = ("Capacity fade after 500 cycles at room temperature ranged from 8.2 to 14.6 "
                "percent, while impedance growth ranged from 21.5 to 37.9 percent.")
    for claim in (sentence, "Capacity fade after 500 cycles at room temperature ranged from "
                  "8.2 to 14.6 percent", "the alumina coating limited capacity fade at room "
                  "temperature the most"):
        got = v.verify(claim, [{"text": FADE, "score": 1.0}])
        assert got["verdict"] == SUPPORTED, (claim, got["reason"])
    if verbatim:
        got = v.verify(sentence, [{"text": FADE, "score": 1.0}])
        a, b = got["span"]
        assert FADE[a:b] == sentence.rstrip(".")


def test_negation_still_fires_beside_a_copied_sentence():
    """The same passage still contradicts a claim that adds a "not" to one of its sentences or
    drops the "not" of one: neither is a copy, and no sentence says it with its polarity."""
    added = verdict("The alumina coating did not limit capacity fade at room temperature.", FADE)
    assert added["verdict"] == CONTRADICTED and added["reason"]["code"] == "negation"
    dropped = verdict("The coating effect was significant for cell capacity fade after cycling "
                      "at low temperature.", FADE)
    assert dropped["verdict"] == CONTRADICTED and dropped["reason"]["code"] == "negation"
    for verbatim in (True, False):
        dropped = verdict("However, the coating effect was significant for cell capacity fade "
                          "after cycling at low temperature.", FADE, verbatim=verbatim)
        assert dropped["verdict"] == CONTRADICTED, verbatim


def test_verbatim_span_is_clause_aligned():
    """A quote starts where a sentence or clause starts and ends where one ends: a fragment
    cut from inside a negated clause ("dropout improves accuracy" of "no evidence that dropout
    improves accuracy") is no quote; case, spacing, ligatures and line-end hyphens do not count."""
    from episteme.query.verify import verbatim_span

    t = ("We found no evidence that dropout improves accuracy on small sets. The e\ufb03cient "
         "model runs fast, while the large one needs tempera-\nture scaling.")
    assert verbatim_span("dropout improves accuracy on small sets", t) is None
    assert verbatim_span("we found  no evidence that dropout improves accuracy on small sets", t) == (0, 65)
    assert verbatim_span("The efficient model runs fast", t) is not None
    assert verbatim_span("The efficient model runs slowly", t) is None
    assert verbatim_span("the large one needs temperature scaling", t) is not None
    assert verbatim_span("runs fast", t) is None  # too short to be a quote


def test_value_owned_by_the_name_of_its_own_sentence():
    """A value stated before its name in the same sentence ("At 37 degrees, PLSCR3 ...")
    belongs to that name, not to a sibling ending the sentence before; a value whose sentence
    names a sibling is still another's."""
    p = "The PLSCR1 gene was silenced. At 37 degrees, PLSCR3 levels fell after irradiation."
    got = verdict("PLSCR3 levels fell after irradiation at 37 degrees.", p, verbatim=False)
    assert got["verdict"] == SUPPORTED, got["reason"]
    q = "In the control, PLSCR1 expression rose by 40% after treatment. PLSCR3 expression rose by 12%."
    v = verdict("PLSCR3 expression rose by 40% after treatment.", q)
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "value_of_other"


def test_ordinals_are_not_read_as_values():
    assert values("the 31st conference") == [] and values("the 2nd run") == []
    assert values("31 runs")[0] == {31.0}


def test_a_role_swap_reason_is_the_same_whatever_the_hash_seed():
    """The reason names the first of the claim's words bound otherwise: in the claim's order, not
    a set's (which follows PYTHONHASHSEED: two runs of one trace gave two reasons)."""
    import os
    import subprocess
    import sys

    code = ("from episteme.query.verify.polarity import role_swap; print(role_swap("
            "'The generator relied on maxout units, whereas the discriminator combined rectifier "
            "units with sigmoid units.', 'The generator nets used a mixture of rectifier linear "
            "activations and sigmoid activations, while the discriminator net used maxout "
            "activations.'))")
    outs = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        outs.add(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env=env, check=True).stdout.strip())
    assert outs == {"the claim ties maxout to generator; the passage ties it to discriminator"}
