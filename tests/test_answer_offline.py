"""The offline answerer on real ingested and written papers (Attention + GAN): it answers from
the wiki and the passages it points to, drops fragments and forward references, answers a
quantity question with a number, cites every sentence and abstains honestly."""

from __future__ import annotations

import re
import shutil

import pytest
from episteme.query.answer_offline import (
    MIN_WORDS,
    NO_ANSWER,
    Candidate,
    OfflineAnswerer,
    clean_sentence,
    expected_type,
    has_quantity,
    is_answer_sentence,
)
from episteme.query.answer_params import DEFAULT_TUNING
from episteme.query.chat import MemoEmbedder, QueryEngine
from episteme.query.trace import split_claims
from ingested_wiki import wiki_settings
from serverlive import written_template  # noqa: F401  (fixture)

ATT = "attention_1706.03762v5.pdf"
GAN = "gan_1406.2661v1.pdf"


@pytest.fixture(scope="module")
def engine(written_template, tmp_path_factory):  # noqa: F811
    wiki = tmp_path_factory.mktemp("answer-offline") / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    (wiki / ".episteme" / "write.lock").unlink(missing_ok=True)
    eng = QueryEngine(wiki_settings(wiki))
    yield eng
    eng.close()


def sentences_of(answer: str) -> list[str]:
    return [c.text for c in split_claims(answer)[0]]


# ---------------------------------------------------------------------------- the filters


def test_fragments_and_forward_references_are_not_answer_sentences():
    assert not is_answer_sentence("Proposition 1.")
    assert not is_answer_sentence("Results are in.")  # under MIN_WORDS words
    assert not is_answer_sentence(
        "We will show in section 4.1 that this minimax game has a global optimum for pg = pdata.")
    assert not is_answer_sentence("The details are described in Section 5 below, with the data.")
    assert not is_answer_sentence("Table 2: BLEU scores of the models on the two test sets.")
    assert not is_answer_sentence("the rest of a sentence cut at a passage edge goes on here.")
    assert is_answer_sentence("The global minimum of the virtual training criterion is achieved "
                              "if and only if pg = pdata.")
    # a theorem label dangling after a sentence is cut, not kept as part of the claim
    assert clean_sentence("We first consider the optimal discriminator D for any given generator G. "
                          "Proposition 1.").endswith("generator G.")


def test_figure_and_table_debris_is_not_an_answer_sentence():
    # axis ticks and panel labels read into a sentence, a caption run into the text
    assert not is_answer_sentence(
        "Much of their success stems from large scale pre-training (filters (first 28 components) "
        "1 2 3 4 5 6 7 Input patch column 1 2 3 4 5 6 7 Input patch row similarity.")
    assert not is_answer_sentence("X Z (a) (b) (c) (d) Figure 1: The nets are trained by "
                                  "simultaneously updating the discriminative distribution.")
    assert not is_answer_sentence("Right: the deeper networks with many more layers than before.")
    assert is_answer_sentence("The model uses 8 heads and 6 layers in the encoder, as in the "
                              "base configuration.")


def test_pointers_at_floats_and_questions_are_not_answer_sentences():
    """A sentence that only says where the content is, an algorithm's title and a question the
    paper asks state nothing; a sentence that reports what a figure shows does."""
    for s in ("Table 2 summarizes the comparison of the models with other approaches.",
              "Figure 3 shows the skip-gram model with its context words.",
              "Figure 2 (a) shows the training loss of the two models.",
              "Algorithm 1 Minibatch stochastic gradient descent training of the two nets.",
              "With fewer inductive biases than ResNets, how crucial is the dataset size?",
              "But does the same hold for the larger models we train here?”"):
        assert not is_answer_sentence(s), s
    assert is_answer_sentence("Fig. 7 shows that ResNets have generally smaller responses than "
                              "their plain counterparts.")
    assert is_answer_sentence("Table 2 reports a BLEU score of 28.4, higher than every earlier "
                              "model.")  # a number: it states what the table holds
    assert is_answer_sentence("The results in Table 2 show a BLEU score of 28.4 for the big "
                              "model.")


def test_limitation_and_comparison_questions_prefer_sentences_that_state_one(engine):
    off = OfflineAnswerer(engine.settings, engine.embedder, None)
    plain = "The encoder reads every word of the source sentence for each output word."
    weak = "However, the encoder must read every word of the source sentence, which is expensive."
    cmp_ = "The encoder reads every word of the source sentence faster than a recurrent layer."

    def cue(question: str, text: str) -> float:
        c = Candidate(text, None, None, "", None, None, (0, 0, 0))
        off._score(question, [c], {})
        return c.parts["cue"]

    q = "What is a drawback of reading the whole source sentence?"
    assert cue(q, weak) > cue(q, plain)
    q = "How does the encoder compare with a recurrent layer?"
    assert cue(q, cmp_) > cue(q, plain)
    # no cue is given where the question asks for neither
    q = "What does the encoder read?"
    assert cue(q, weak) == cue(q, plain) == cue(q, cmp_)


def test_memo_embedder_embeds_each_text_once_and_changes_no_vector(engine):
    import numpy as np

    raw = engine.embedder.inner if isinstance(engine.embedder, MemoEmbedder) else engine.embedder
    calls: list[int] = []

    class Counting:  # the real model, counting the texts it is asked to embed
        dim = raw.dim

        def encode(self, texts, *a, **k):
            calls.append(len(texts))
            return raw.encode(texts, *a, **k)

    memo = MemoEmbedder(Counting())
    texts = ["the dot products are scaled", "a residual mapping is easier to optimise"]
    first = memo.encode(texts)
    again = memo.encode(texts[::-1] + ["a third sentence, new"])
    assert calls == [2, 1]  # the second call embedded only the new text
    assert np.allclose(first, raw.encode(texts), atol=1e-6)
    assert np.allclose(again[:2], first[::-1], atol=1e-6)
    assert memo.dim == raw.dim  # everything else is the inner embedder's
    big = [f"passage number {i}" for i in range(MemoEmbedder.MAX_BATCH + 1)]
    memo.encode(big)
    assert calls[-1] == len(big)
    memo.encode(big[:1])
    assert calls[-1] == 1  # bulk: not memoised (the text is embedded again)


def test_expected_answer_type_comes_from_the_question_form():
    assert expected_type("How big is the corpus and how much of it has full text?") == "quantity"
    assert expected_type("What top-5 error did the deepest network reach?") == "quantity"
    assert expected_type("What is the degradation problem?") == "definition"
    assert expected_type("Why is training the plain softmax slow?") == "reason"
    assert has_quantity("This leads to 3.57% top-5 error on the test set (Table 5).")
    assert not has_quantity("The results are listed in Table 3 and discussed in Section 4.1 [12].")


# ---------------------------------------------------------------------- on the real papers


def test_forward_reference_is_never_the_answer(engine):
    res = engine.chat("What is the theoretical optimum of the GAN minimax game?", mode="offline")
    assert not res.get("abstained"), res
    sents = sentences_of(res["answer"])
    assert sents
    for s in sents:
        assert len(s.split()) >= MIN_WORDS, s
        assert not re.search(r"\bwe will (show|see)\b", s, re.I), s
        assert not re.search(r"\bProposition \d+\.?$", s), s
    # every sentence is cited with a wiki section, and its paper passage is named
    assert len(re.findall(r"\[sec_\d{3,}\]", res["answer"])) == len(res["citations"])
    assert all(c["paper"] == GAN and c["passage_id"] for c in res["citations"] if c["paper"])
    # the answer quotes the paper, so its own trace supports every claim
    assert res["unsupported_claims"] == []


def test_quantity_question_is_answered_with_a_number(engine):
    q = "What BLEU score did the big Transformer reach on the English-to-German translation task?"
    res = engine.chat(q, mode="offline")
    assert not res.get("abstained"), res
    sents = sentences_of(res["answer"])
    assert any(has_quantity(s) for s in sents), res["answer"]
    assert "28.4" in res["answer"], res["answer"]
    assert all(len(s.split()) >= MIN_WORDS for s in sents)


def test_answer_comes_from_passages_beyond_the_wiki_text(engine):
    """The wiki quotes a few sentences per section; the answer may quote the paper beyond them."""
    q = "Why are the dot products scaled by the square root of the key dimension?"
    retrieved = engine.retrieve(q)
    wiki_text = " ".join(" ".join(s["text"].split()) for s in retrieved["sections"])
    res = engine.answer(q, retrieved["sections"], mode="offline")
    assert not res.get("abstained"), res
    assert any(c["sentence"] not in wiki_text for c in res["citations"]), res["answer"]
    assert all(c["paper"] == ATT for c in res["citations"]), res["citations"]


def test_a_question_about_something_no_paper_mentions_abstains(engine):
    res = engine.chat("How does LoRA make fine-tuning large language models cheaper?", mode="offline")
    assert res["abstained"] is True
    assert res["answer"].startswith(NO_ANSWER)
    assert "Closest topics" in res["answer"]
    assert res["closest_topics"]
    assert res["claims"] == [] and res["sources"] == []


def test_not_covered_by_retrieval_abstains_naming_topics(engine):
    """Retrieval's "not covered" stands unless the papers answer clearly (MIN_EVIDENCE_UNCOVERED):
    a question they answer only weakly abstains, naming the closest topics."""
    q = "What is the theoretical optimum of the GAN minimax game?"
    sections = engine.retrieve(q)["sections"]
    off = OfflineAnswerer(engine.settings, engine.embedder, engine.tracer)
    covered = off.answer(q, sections, covered=True, explain=True)
    # abstention reads the hand-set evidence score, not the fitted ranking score
    assert max(c["evidence"] for c in covered["candidates"]) < DEFAULT_TUNING.min_evidence_uncovered
    res = off.answer(q, sections, covered=False)
    assert res["abstained"] and res["answer"].startswith(NO_ANSWER)
    assert sections[0]["title"] in res["answer"]
    assert "covers the question" in res["abstain_reason"]


def test_clear_evidence_answers_past_not_covered(engine):
    q = "What BLEU score did the big Transformer reach on the English-to-German translation task?"
    sections = engine.retrieve(q)["sections"]
    off = OfflineAnswerer(engine.settings, engine.embedder, engine.tracer)
    res = off.answer(q, sections, covered=False, explain=True)
    assert max(c["evidence"] for c in res["candidates"]) >= DEFAULT_TUNING.min_evidence_uncovered, res["candidates"][:2]
    assert not res["abstained"] and "28.4" in res["answer"], res["answer"]


def test_offline_answer_is_deterministic(engine):
    q = "How does the discriminator get trained in the adversarial framework?"
    a = engine.chat(q, mode="offline")["answer"]
    assert a == engine.chat(q, mode="offline")["answer"]


def test_ranking_features_read_the_question_and_the_sentences_place(engine):
    off = OfflineAnswerer(engine.settings, engine.embedder, None)
    text = "The model needs three days of training on eight GPUs before it converges."
    cost = Candidate(text, None, None, "Training Cost", None, None, (0, 0, 0))
    other = Candidate(text, None, None, "Related Work", None, None, (0, 1, 0))
    lean = Candidate("This takes three days of training on eight GPUs to converge.", None, None,
                     "Training Cost", None, None, (0, 2, 0))
    off._score("What is the training cost of the model?", [cost, other, lean], {})
    assert cost.parts["title"] > other.parts["title"] == 0.0  # the section title's key terms
    assert lean.parts["anaphor"] == 1.0 and cost.parts["anaphor"] == 0.0
    assert cost.parts["dense"] == 1.0 and -1.0 <= cost.parts["cos"] <= 1.0  # embedded now
    # the ranking is the weighted sum of the features
    w = off.weights
    assert cost.score == pytest.approx(sum(w.get(k, 0.0) * v for k, v in cost.parts.items()
                                           if k != "qa") + cost.parts["qa"])


def _bench_answer():
    """benchmarks/bench_answer.py, whose fit the ranking's weights come from."""
    import importlib
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    return importlib.import_module("bench_answer")


def _made_up_dump(seed: int, n: int, cand) -> list[dict]:
    """16 made-up questions over 4 papers (``p0``..``p3``), ``n`` candidates each, the first
    one gold: ``cand(rng, gold)`` makes a candidate."""
    import random

    rng = random.Random(seed)
    return [{"id": f"q{qi}", "paper": f"p{qi % 4}",
             "candidates": [cand(rng, ci == 0) for ci in range(n)]} for qi in range(16)]


def test_the_fit_learns_which_feature_marks_the_answer():
    """bench_answer's pairwise fit on made-up candidates where one feature (``title``) marks
    the gold sentence and the others are noise: the fitted weights rank gold first."""
    from episteme.query.answer_params import FEATURES

    bench_answer = _bench_answer()

    def cand(rng, gold):
        parts = {f: rng.random() for f in FEATURES}
        parts["title"] = 0.6 + 0.4 * rng.random() if gold else 0.7 * rng.random()
        return {"parts": parts, "evidence": rng.random(), "gold": gold}

    dump = _made_up_dump(7, 25, cand)
    w = bench_answer.fit_weights(dump, {"p0", "p1"})
    assert max(w, key=lambda f: w[f]) == "title"
    assert bench_answer.top_k_rate(dump, {"p2", "p3"}, w, k=3) >= 0.75  # unseen questions
    assert bench_answer.top_k_rate(dump, {"p2", "p3"}, {f: 0.0 for f in FEATURES} | {"cos": 1.0},
                                   k=3) < 0.75  # noise alone does not


def test_a_sentence_is_ranked_with_the_one_before_it(engine):
    """"This activity ..." answers with its previous sentence: the context features read the
    sentence before it in its paper section (its text's question terms, its stored vector)."""
    off = OfflineAnswerer(engine.settings, engine.embedder, None)
    first = "Protein folding activity in the cell is studied with a new assay here."
    second = "This activity is essential for the survival of the organism under stress."
    text = first + " " + second
    off._section_text["p#1"] = (text, 1, "Results", "body", 1, 1)
    start = text.index(second)
    lean = Candidate(second, "p", "p#1", "Results", 1, None, (0, 1, start))
    alone = Candidate("An unrelated sentence about the survival of the organism under stress.",
                      "p", "p#1", "Results", 1, None, (0, 1, 0))
    assert off._previous(lean)[0] == first and off._previous(alone) == (None, None)
    off._score("Why does protein folding activity matter?", [lean, alone], {})
    # the previous sentence holds "protein" and "folding": the pair covers more of the question
    assert lean.parts["ctx"] > alone.parts["ctx"]
    assert alone.parts["pcos_prev"] == 0.0


def test_selection_leads_with_the_best_and_covers_both_parts_of_a_question(engine):
    off = OfflineAnswerer(engine.settings, engine.embedder, None)

    def cand(text, score, qterms):
        c = Candidate(text, None, None, "S", None, None, (0, 0, 0), score=score)
        c.qterms = qterms
        return c

    long_best = cand(" ".join(["Long best sentence with many words"] * 6) + ".", 1.0, {"bleu": 0.5})
    same_part = cand("Another sentence about the same score of the model here.", 0.9, {"bleu": 0.5})
    other_part = cand("Training took three and a half days on eight graphics cards.", 0.88,
                      {"train": 0.5})
    picked = off._select([long_best, same_part, other_part])
    assert picked[0] is long_best  # no per-word cost on the lead sentence
    assert picked.index(other_part) < picked.index(same_part)  # it answers the other part
    off.coverage = 0.0
    picked = off._select([long_best, same_part, other_part])
    assert picked.index(same_part) < picked.index(other_part)


def test_section_titles_lose_their_numbers():
    from episteme.query.answer_features import bare_title

    assert bare_title("4.2 Results") == "Results"
    assert bare_title("IV.B Cost") == "Cost" and bare_title("A.1 Setup") == "Setup"
    assert bare_title("II ATTACKS") == "ATTACKS"
    assert bare_title("Results") == "Results"
    assert bare_title("A satisfactory model") == "A satisfactory model"
    assert bare_title("3 The S2ORC dataset") == "The S2ORC dataset"


def test_centred_cosine_rewards_the_aspect_asked_not_the_shared_topic():
    """Every candidate is about the question's topic; centred on the candidates' mean vector,
    a sentence that only restates that topic no longer outranks the one carrying the aspect
    the question asks about, though its plain cosine is higher."""
    import numpy as np
    from episteme.query.answer_rank import centred_cosines

    def unit(v):
        v = np.asarray(v, dtype=np.float32)
        return v / np.linalg.norm(v)

    topic, aspect, other = np.eye(3, dtype=np.float32)
    question = unit(topic + 0.5 * aspect)
    restates = Candidate("restates", None, None, "S", None, None, (0, 0, 0))
    restates.vec = unit(topic + 0.1 * other)
    answers = Candidate("answers", None, None, "S", None, None, (0, 0, 1))
    answers.vec = unit(0.6 * topic + aspect)
    fillers = []
    for i in range(4):
        c = Candidate(f"filler {i}", None, None, "S", None, None, (0, 1, i))
        c.vec = unit(topic + (0.3 if i % 2 else -0.3) * other)
        fillers.append(c)
    novec = Candidate("no vector", None, None, "S", None, None, (0, 2, 0))
    cands = [restates, answers, *fillers, novec]
    assert float(restates.vec @ question) > float(answers.vec @ question)  # plain cosine
    centred_cosines(question, cands)
    assert answers.parts["ccos"] > restates.parts["ccos"]
    assert novec.parts["ccos"] == 0.0


def test_answer_metric_weighs_the_directions_it_learned():
    """``parts["qa"]``: the metric's weight on a direction decides which centred product
    counts; the same candidates rank the other way round under the opposite metric, and a
    candidate without a vector (or no metric) gets 0."""
    import numpy as np
    from episteme.query.answer_params import METRIC_SCALE
    from episteme.query.answer_rank import centred_cosines

    rng = np.random.default_rng(3)
    topic, first, second = np.eye(3, dtype=np.float32)
    question = (topic + first + second) / np.sqrt(3)

    def cands():
        a = Candidate("along the first", None, None, "S", None, None, (0, 0, 0))
        a.vec = (topic + first) / np.sqrt(2)
        b = Candidate("along the second", None, None, "S", None, None, (0, 0, 1))
        b.vec = (topic + second) / np.sqrt(2)
        rest = []
        for i in range(4):
            c = Candidate(f"filler {i}", None, None, "S", None, None, (0, 1, i))
            v = topic + 0.1 * rng.standard_normal(3).astype(np.float32)
            c.vec = v / np.linalg.norm(v)
            rest.append(c)
        return a, b, [a, b, *rest, Candidate("no vector", None, None, "S", None, None, (0, 2, 0))]

    a, b, all_ = cands()
    centred_cosines(question, all_, (0.0, 1.0, 0.0), products=True)
    assert a.parts["qa"] > b.parts["qa"]
    assert all_[-1].parts["qa"] == 0.0 and all_[-1].product is None
    # the products are what the metric weighs: qa = METRIC_SCALE * metric . product
    assert a.parts["qa"] == pytest.approx(METRIC_SCALE * float(a.product[1]), rel=1e-5)
    a, b, all_ = cands()
    centred_cosines(question, all_, (0.0, -1.0, 0.0))
    assert a.parts["qa"] < b.parts["qa"] and a.product is None  # products only when asked
    a, b, all_ = cands()
    centred_cosines(question, all_, None)
    assert a.parts["qa"] == b.parts["qa"] == 0.0


def test_answer_metric_file_is_used_only_for_its_model(tmp_path):
    """The metric's weights mean something only in the space they were fitted in: another
    model, another dimension, a missing or broken file give None (the ranking then runs
    without it); the stored scale multiplies the weights."""
    import json

    from episteme.query.answer_params import METRIC_FILE, load_metric
    from episteme.stores.embedding import DEFAULT_MODEL

    path = tmp_path / "m.json"
    path.write_text(json.dumps({"model": "m", "dim": 3, "scale": 2.0,
                                "weights": [0.5, -1.0, 0.0]}), encoding="utf-8")
    assert load_metric("m", 3, path) == (1.0, -2.0, 0.0)
    assert load_metric("other", 3, path) is None
    assert load_metric("m", 4, path) is None
    assert load_metric("m", 3, tmp_path / "missing.json") is None
    for i, bad in enumerate(("{not json", "[1, 2, 3]",
                             '{"model": "m", "dim": 3, "weights": [1, "x", 2]}',
                             '{"model": "m", "dim": "three", "weights": [1, 2, 3]}')):
        (tmp_path / f"bad{i}.json").write_text(bad, encoding="utf-8")
        assert load_metric("m", 3, tmp_path / f"bad{i}.json") is None
    shipped = json.loads(METRIC_FILE.read_text(encoding="utf-8"))  # the shipped one loads
    assert load_metric(DEFAULT_MODEL, shipped["dim"]) is not None


def test_the_fit_learns_an_answer_metric():
    """bench_answer's joint fit on made-up candidates whose centred products carry the gold
    sentence in one dimension: the metric's largest weight is that dimension, and it ranks
    unseen questions' gold first."""
    from episteme.query.answer_params import FEATURES

    bench_answer = _bench_answer()

    def cand(rng, gold):
        prod = [rng.gauss(0, 0.002) for _ in range(8)]
        prod[5] += 0.012 if gold else 0.0
        return {"parts": {f: rng.random() for f in FEATURES}, "prod": prod,
                "evidence": rng.random(), "gold": gold}

    dump = _made_up_dump(11, 20, cand)
    w, metric = bench_answer.fit_ranking(dump, {"p0", "p1"}, steps=600)
    assert metric is not None and max(range(8), key=lambda d: metric[d]) == 5
    assert bench_answer.top_k_rate(dump, {"p2", "p3"}, w, k=3, metric=metric) >= 0.75
    assert bench_answer.top_k_rate(dump, {"p2", "p3"}, w, k=3) < 0.75  # the features alone: noise


def test_ranking_reads_the_centred_cosine(engine):
    """The answerer's scoring fills ``ccos`` for embedded candidates and it weighs in the
    shipped ranking."""
    off = OfflineAnswerer(engine.settings, engine.embedder, None)
    a = Candidate("Training took three and a half days on eight P100 GPUs.", None, None,
                  "Training", None, None, (0, 0, 0))
    b = Candidate("The Transformer is a model architecture based on attention alone.", None,
                  None, "Model", None, None, (0, 1, 0))
    c = Candidate("Attention layers relate every pair of positions in a sequence.", None, None,
                  "Model", None, None, (0, 2, 0))
    off._score("How long did it take to train the Transformer?", [a, b, c], {})
    assert all("ccos" in x.parts and -1.0 <= x.parts["ccos"] <= 1.0 for x in (a, b, c))
    assert a.parts["ccos"] > b.parts["ccos"]
    assert off.weights["ccos"] > 0
    # the shipped answer metric is loaded for the engine's embedder and counts in the score
    assert off.metric is not None and engine.offline.metric == off.metric
    assert any(x.parts["qa"] != 0.0 for x in (a, b, c))
    w = off.weights
    assert a.score == pytest.approx(sum(w.get(k, 0.0) * v for k, v in a.parts.items()
                                        if k != "qa") + a.parts["qa"])


def test_selection_spreads_over_sections(engine):
    """A second sentence from the section already quoted pays ``tuning.section_cost``: a nearly
    as good sentence from another section goes first (the one restating the question's topic
    crowds one section; the answer is often further on)."""
    from dataclasses import replace

    off = OfflineAnswerer(engine.settings, engine.embedder, None)

    def cand(text, score, section_id):
        return Candidate(text, "p", section_id, section_id, 1, None, (0, 0, 0), score=score)

    best = cand("The first sentence of the crowded section states the topic.", 1.0, "p#1")
    same = cand("The second sentence of the crowded section restates it again.", 0.93, "p#1")
    other = cand("A sentence in another section gives the actual figure asked.", 0.91, "p#2")
    picked = off._select([best, same, other])
    assert picked[0] is best and picked.index(other) < picked.index(same)
    free = OfflineAnswerer(engine.settings, engine.embedder, None,
                           tuning=replace(DEFAULT_TUNING, section_cost=0.0))
    picked = free._select([best, same, other])
    assert picked.index(same) < picked.index(other)


def test_tracer_lends_its_store_under_its_lock(engine):
    """The public way to query the tracer's shared SQLite connection: the lock is held inside
    the block (another thread waits) and released after."""
    import threading

    tracer = engine.tracer
    entered = threading.Event()

    def other():
        with tracer.locked_store():
            entered.set()

    with tracer.locked_store() as store:
        assert store is tracer.store
        assert store.conn.execute("SELECT count(*) FROM papers").fetchone()[0] >= 1
        t = threading.Thread(target=other)
        t.start()
        assert not entered.wait(0.2)  # blocked while this block holds the store
    t.join(5)
    assert entered.is_set()


def test_a_long_sentence_is_quoted_without_its_aside():
    """A sentence over MAX_WORDS is no candidate as it stands; with its parenthetical aside
    cut (and the cut marked) its main clause is, and still reads as one sentence.  Table text
    read into a sentence does not become quotable by a cut."""
    from episteme.query.answer_offline import ELIDED, MAX_WORDS, shortened_sentence

    aside = ("(for instance, the caching layer must never be flushed while a write is pending, "
             "because a pending write that is lost leaves the replicas in states that no later "
             "merge of their logs can reconcile without the help of a human operator on call)")
    long = ("The main costs of the design are that every update is written twice and that "
            f"replicas must agree on a clock {aside}, much as a database must order its commits.")
    assert len(long.split()) > MAX_WORDS and not is_answer_sentence(long)
    short = shortened_sentence(long)
    assert short is not None and is_answer_sentence(short)
    assert short.startswith("The main costs of the design") and short.endswith("its commits.")
    assert ELIDED in short and "caching layer" not in short and " ," not in short
    # the first clause of a long sentence, up to a semicolon, when no aside can be cut
    clauses = ("The protocol sends each update to every site directly as soon as it is made "
               "by the client; " + " ".join(["the sites then compare their logs"] * 12) + ".")
    head = shortened_sentence(clauses)
    assert head == ("The protocol sends each update to every site directly as soon as it is "
                    "made by the client.")
    assert shortened_sentence("A sentence within the limit (with an aside of some words).") is None
    table = "Model BLEU " + " ".join(f"{i} 2{i}.4 (x{i})" for i in range(40)) + " results."
    assert shortened_sentence(table) is None



def test_long_sentences_of_the_papers_join_the_candidates_shortened(engine):
    """A paper sentence over MAX_WORDS with an aside becomes a candidate with the aside cut;
    it has no stored vector, so it is embedded at query time (its own cosine, not its
    passage's)."""
    from episteme.query.answer_offline import ELIDED

    q = "What are the disadvantages of generative adversarial nets?"
    retrieved = engine.retrieve(q)
    ex = engine.offline.answer(q, retrieved["sections"], covered=True, explain=True)
    short = [c for c in ex["candidates"] if ELIDED in c["text"]]
    assert short, "no shortened candidate"
    assert all(is_answer_sentence(c["text"]) for c in short)
    assert any(c["dense"] == 1.0 for c in short)


def test_names_the_papers_print_otherwise_are_known(engine):
    """A name is unknown only when no paper has it: not when the PDF broke it at a line end
    ("Berkeley- Parser" for BerkeleyParser), nor for the plain English word of a compound
    ("-flavoured"). A name made of known words but printed nowhere stays unknown."""
    off = engine.offline
    assert off.unknown_names("Does the Transformer beat the BerkeleyParser on WSJ alone?") == []
    assert off.unknown_names("Is a WMT14-flavoured evaluation used for the base model?") == []
    assert off.unknown_names("Is a SciTrace-style benchmark used?") == ["SciTrace-style"]
    assert off.unknown_names("Does the Transformer beat the BerkeleyTagger?") == ["BerkeleyTagger"]
    assert off.unknown_names("Is the ParserBerkeley baseline beaten?") == ["ParserBerkeley"]
