"""Source tracing on real stores (Attention + GAN ingested): claims → passages, scope, bounds,
unsupported claims, bad input, and the trace.py script as a cold process."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import SCRIPTS
from episteme.errors import EpistemeError, NotFoundError, UsageError
from episteme.query.pool import Pool
from episteme.query.text import longest_common_run, stem
from episteme.query.trace import MAX_CLAIMS, Tracer, split_claims
from ingested_wiki import wiki_settings

ATT = "attention_1706.03762v5.pdf"
GAN = "gan_1406.2661v1.pdf"
SCALING = (
    "When the key/query vectors are high-dimensional, their raw dot products tend to become very "
    "large. For large key dimensions the dot products grow large and push the softmax function into "
    "regions where its gradients are extremely small."
)
GAN_CLAIM = ("The generator is trained to maximise the probability that the discriminator makes a "
             "mistake, a two-player minimax game.")
FABRICATED = "AlphaFold 2 reached a median GDT score of roughly 92 over the CASP14 protein targets."


@pytest.fixture
def tracer(ingested_wiki, embedder):
    t = Tracer(wiki_settings(ingested_wiki), embedder=embedder)
    yield t
    t.store.close()


def write_index_json(wiki: Path, mapping: dict) -> None:
    (wiki / "index.json").write_text(json.dumps(mapping), encoding="utf-8")


# ---------------------------------------------------------------------------- text helpers


def test_split_claims_merges_fragments_strips_citations_and_cuts_long_sentences():
    claims, rest = split_claims("Yes. Attention is scaled by the key size [sec_002]. It helps [sec_001, sec_003].")
    assert [c.text for c in claims] == ["Yes. Attention is scaled by the key size.", "It helps."] or \
        [c.text for c in claims][0].startswith("Yes. Attention is scaled")
    assert all("sec_" not in c.text for c in claims) and rest == 0
    long_sentence = " ".join(f"word{i}" for i in range(200))
    claims, rest = split_claims(long_sentence)
    assert len(claims) == 4 and all(len(c.text.split()) <= 60 for c in claims)
    many = " ".join(f"Claim number {i} says something new." for i in range(100))
    claims, rest = split_claims(many)
    assert len(claims) == MAX_CLAIMS and rest == 100 - MAX_CLAIMS


def test_text_helpers():
    assert stem("gradients") == stem("gradient") and stem("trains") == stem("train")
    assert longest_common_run(["a", "b", "c", "d", "e"], ["x", "b", "c", "d", "y"]) == 3
    assert longest_common_run([], ["a"]) == 0


# ---------------------------------------------------------------------------------- tracing


def test_trace_finds_the_scaling_passage_and_flags_a_fabrication(tracer):
    res = tracer.trace(SCALING + " " + FABRICATED)
    assert res["scope"]["from"] == "all"
    claims = res["claims"]
    assert len(claims) == 3
    top = claims[1]["passages"][0]
    assert top["paper"] == ATT and top["section"].startswith("3.2.1")
    assert "extremely small gradients" in top["passage"]
    # the quote is the supporting sentence, verbatim from the passage
    assert "extremely small gradients" in top["quote"] and top["quote"] in top["passage"]
    assert len(top["quote"]) < len(top["passage"])
    assert {"paper", "section", "page", "passage", "similarity", "score"} <= set(top)
    assert claims[0]["supported"] and claims[1]["supported"]
    assert not claims[2]["supported"]
    assert res["unsupported_claims"] == [FABRICATED]
    # sources: only supported claims' passages, each with the claim it supports
    assert res["sources"] and all(s["claim"] != FABRICATED for s in res["sources"])
    assert res["sources"][0]["paper"] == ATT and res["sources"][0]["page"] in (3, 4, 5)


def test_scope_by_sections_uses_index_json(tracer, ingested_wiki):
    write_index_json(ingested_wiki, {"sec_001": [GAN], "sec_002": [ATT], "sec_003": []})
    res = tracer.trace(SCALING, sections="sec_001")
    assert res["scope"]["papers"] == [GAN]
    assert all(p["paper"] == GAN for c in res["claims"] for p in c["passages"])
    # scoped away from the real source, the claims are not supported
    assert res["unsupported_claims"]
    res = tracer.trace(SCALING, sections=["sec_002", "sec_003"])
    assert res["scope"]["papers"] == [ATT]
    assert res["scope"]["sections_without_sources"] == ["sec_003"]
    assert "sec_003" in res["note"]
    assert not res["unsupported_claims"]


def test_section_without_sources_only(tracer, ingested_wiki):
    write_index_json(ingested_wiki, {"sec_003": []})
    res = tracer.trace(SCALING, sections="sec_003")
    assert res["sources"] == [] and len(res["unsupported_claims"]) == 2
    assert "without sources" in res["note"] and "no ingested source paper" in res["note"]


def test_scope_by_papers_and_unknown_papers(tracer):
    res = tracer.trace(GAN_CLAIM, papers=f"raw/{GAN}")
    assert res["scope"] == {"from": "papers", "papers": [GAN], "sections": [], "sections_without_sources": [],
                            "missing_papers": []}
    assert res["claims"][0]["supported"]
    assert res["claims"][0]["passages"][0]["paper"] == GAN
    with pytest.raises(NotFoundError) as e:
        tracer.trace(GAN_CLAIM, papers="nope.pdf")
    assert "nope.pdf" in e.value.message and ATT in e.value.message


def test_unknown_section_ids_list_the_known_ones(tracer, ingested_wiki):
    write_index_json(ingested_wiki, {"sec_001": [GAN], "sec_002": [ATT]})
    with pytest.raises(NotFoundError) as e:
        tracer.trace(SCALING, sections="sec_001,sec_077")
    msg = e.value.message
    assert "sec_077" in msg and "sec_001, sec_002" in msg


def test_empty_answer_is_a_usage_error(tracer):
    for text in ("", "   \n", "?!"):
        with pytest.raises(UsageError):
            tracer.trace(text)


def test_ten_thousand_word_answer_is_bounded(tracer):
    sentences = [SCALING, GAN_CLAIM, FABRICATED]
    words: list[str] = []
    i = 0
    while len(words) < 10_000:
        words.extend(sentences[i % 3].split())
        i += 1
    t = time.perf_counter()
    res = tracer.trace(" ".join(words))
    elapsed = time.perf_counter() - t
    assert len(res["claims"]) == MAX_CLAIMS
    assert res["claims_not_traced"] > 0 and "only the first" in res["warning"]
    assert any(c["supported"] for c in res["claims"])
    assert elapsed < 60  # bounded: a 40-claim trace, whatever the length


def test_missing_stores_say_what_to_run(tmp_path, ingested_wiki, embedder):
    with pytest.raises(EpistemeError) as e:
        Tracer(wiki_settings(tmp_path / "nowiki"), embedder=embedder)
    assert "episteme ingest" in e.value.message
    # SQLite present but Chroma lost: the vector cache cannot be built -> rebuild
    shutil.rmtree(ingested_wiki / ".episteme" / "chroma")
    shutil.rmtree(ingested_wiki / ".episteme" / "trace_vectors", ignore_errors=True)
    t = Tracer(wiki_settings(ingested_wiki), embedder=embedder)
    with pytest.raises(EpistemeError) as e:
        t.trace(SCALING)
    assert "episteme rebuild" in e.value.message


def test_vector_cache_avoids_chroma_on_later_runs(ingested_wiki, embedder):
    settings = wiki_settings(ingested_wiki)
    first = Tracer(settings, embedder=embedder)
    a = first.trace(SCALING)
    assert list((ingested_wiki / ".episteme" / "trace_vectors").glob("*.npz"))
    # Chroma gone (and no client kept open in this process): a later run works from the cache
    # alone and never opens Chroma (opening it would re-create the folder)
    from episteme.stores.vectors import forget_clients

    forget_clients()
    shutil.rmtree(settings.chroma_path)
    second = Tracer(settings, embedder=embedder)
    b = second.trace(SCALING)
    assert not settings.chroma_path.exists()
    assert [c["passages"][0]["passage_id"] for c in a["claims"]] == \
        [c["passages"][0]["passage_id"] for c in b["claims"]]


def test_threshold_override(tracer):
    res = tracer.trace(SCALING, threshold=5.0)
    assert len(res["unsupported_claims"]) == 2 and res["sources"] == []
    res = tracer.trace(FABRICATED, threshold=-1.0)
    # the threshold only moves the similarity test: the verifier still finds that no paper
    # names AlphaFold or CASP14
    (claim,) = res["claims"]
    assert claim["verdict"] == "unsupported" and claim["reason"]["code"] == "entity_absent"
    res = tracer.trace(GAN_CLAIM, threshold=-1.0)
    assert not res["unsupported_claims"] and res["claims"][0]["verdict"] == "supported"


# ----------------------------------------------------------------------------- the script


def _run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH")}
    return subprocess.run([sys.executable, str(SCRIPTS / "trace.py"), *args], input=stdin,
                          capture_output=True, text=True, timeout=120, env=env)


def test_script_reads_stdin_and_is_fast_enough_cold(ingested_wiki):
    _run(["--wiki", str(ingested_wiki), "--answer", GAN_CLAIM])  # builds the vector cache
    t = time.perf_counter()
    proc = _run(["--wiki", str(ingested_wiki), "--answer", "-", "--full"], stdin=SCALING + " " + GAN_CLAIM)
    elapsed = time.perf_counter() - t
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["claims"]) == 3 and out["sources"]
    assert elapsed < 15  # loose: the benchmark reports the exact cold time (target 3 s)


def test_command_errors_and_text_format(ingested_wiki, capsys, monkeypatch):
    from episteme.commands.trace import main

    write_index_json(ingested_wiki, {"sec_001": [GAN]})
    assert main(["--wiki", str(ingested_wiki), "--answer", SCALING, "--sections", "sec_009"]) == 1
    out, err = capsys.readouterr()
    assert "sec_009" in err and "sec_001" in json.loads(out)["error"]
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(["--wiki", str(ingested_wiki), "--answer", "-"]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["--wiki", str(ingested_wiki), "--answer", SCALING, "--papers", GAN, "--sections", "sec_001"]) == 2
    capsys.readouterr()
    assert main(["--wiki", str(ingested_wiki), "--answer", SCALING + " " + FABRICATED, "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "UNSUPPORTED" in out and "3.2.1 Scaled Dot-Product Attention" in out
    # the JSON stays compact: highlight boxes only when asked for
    assert main(["--wiki", str(ingested_wiki), "--answer", SCALING, "--papers", ATT]) == 0
    plain = capsys.readouterr().out
    assert '"boxes"' not in plain and '"passages"' not in plain
    assert main(["--wiki", str(ingested_wiki), "--answer", SCALING, "--papers", ATT, "--full"]) == 0
    boxed = json.loads(capsys.readouterr().out)
    assert all("boxes" in p for c in boxed["claims"] for p in c["passages"])


def test_long_lived_tracer_sees_a_removed_paper(ingested_wiki, embedder):
    from episteme.ingest.pipeline import remove_paper

    settings = wiki_settings(ingested_wiki)
    t = Tracer(settings, embedder=embedder)
    assert t.trace(GAN_CLAIM)["claims"][0]["passages"][0]["paper"] == GAN
    remove_paper(settings, GAN)
    res = t.trace(GAN_CLAIM)  # no restart: the tracer notices the store changed
    assert all(p["paper"] == ATT for c in res["claims"] for p in c["passages"])
    assert res["unsupported_claims"] == [GAN_CLAIM]
    with pytest.raises(NotFoundError):
        t.trace(GAN_CLAIM, papers=GAN)


@pytest.mark.parametrize("command", ["trace", "retrieve", "chat"])
def test_usage_errors_follow_the_format_asked_for(command, capsys):
    """A bad command line is reported as JSON on stdout by default, and only on stderr with
    --format text, even when the error is in parsing the arguments themselves."""
    import importlib

    main = importlib.import_module(f"episteme.commands.{command}").main
    assert main(["--format", "text", "--no-such-flag"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: episteme {command}: ")
    assert main(["--no-such-flag"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"].startswith(f"episteme {command}: ")


# ------------------------------------------------------------------- table passages vs prose

QUALITATIVE = ("The Transformer generalizes well to English constituency parsing, even with small "
               "training sets. It outperforms the Berkeley Parser when trained only on the WSJ "
               "training set.")
NUMERIC = ("The big Transformer reaches 28.4 BLEU on English-to-German. It reaches 41.8 BLEU on "
           "English-to-French.")


def _top(pool) -> dict:
    return pool.info[pool.ids[pool.answer_order()[0]]]


def _penalty(pool, value: float):
    """The same pool scored with another table penalty (the tuning is data, not a global)."""
    import dataclasses

    return dataclasses.replace(pool, tuning=dataclasses.replace(pool.tuning, table_penalty=value))


def test_a_qualitative_answer_is_cited_to_the_sentence_that_states_it_not_the_table(tracer):
    """Table 4's caption and row labels share the answer's words ("English constituency
    parsing", "WSJ", "Berkeley Parser"), but a sentence of section 6.3 says it: with the rule the
    body passage comes first; without it (penalty 0) the table passage did."""
    pool = tracer.score_pool([c.text for c in split_claims(QUALITATIVE)[0]], [ATT])
    assert not pool.numeric.any()
    top = _top(pool)
    assert top["kind"] == "body" and top["section"].endswith("Constituency Parsing"), top["section"]
    assert _top(_penalty(pool, 0.0))["kind"] == "table"  # the case the rule exists for, on this real ingest
    # and the trace's per-claim ordering follows (the answer-level score is its context prior)
    res = tracer.trace(QUALITATIVE, papers=[ATT])
    assert res["sources"] and res["sources"][0]["section"].endswith("Constituency Parsing")


def test_claims_stating_numbers_keep_table_passages_at_full_strength(tracer):
    """An answer about a table value (a claim states a number; "SQuAD v1.1"-like names do not
    count) leaves the tables' answer-level scores untouched, even beside a qualitative claim;
    an answer stating no number has every table passage lowered by exactly the penalty."""
    mixed = NUMERIC.split(". ")[0] + ". " + QUALITATIVE
    for answer in (NUMERIC, mixed):
        pool = tracer.score_pool([c.text for c in split_claims(answer)[0]], [ATT])
        assert pool.numeric.any() and pool.table.any()
        with_rule = _penalty(pool, 0.25).answer_scores()
        assert np.allclose(with_rule, _penalty(pool, 0.0).answer_scores())
    assert not pool.numeric.all()  # the mixed answer had a qualitative claim
    pool = tracer.score_pool([c.text for c in split_claims(QUALITATIVE)[0]], [ATT])
    with_rule = _penalty(pool, 0.25).answer_scores()
    assert np.allclose(_penalty(pool, 0.0).answer_scores() - with_rule, 0.25 * pool.table)
    names = tracer.score_pool(["Dropping the objective lowers results on SQuAD v1.1 and newstest2014."],
                              [ATT])
    assert not names.numeric.any()


def test_every_stored_sentence_is_supported_by_its_own_passage(tracer):
    """A passage cannot contradict itself: each prose sentence of the stored Attention and GAN
    passages, verified against its own passage, is supported by the checks alone (the quote
    rule off), and traced as an answer it is supported with its own words as the quote."""
    from episteme.query.verify import Verifier, sentence_spans, tabular

    ids = [r[0] for r in tracer.store.conn.execute("SELECT id FROM passages ORDER BY id")]
    passages = tracer._passages(ids)
    checks = Verifier(in_scope=lambda n: tracer.names_in_scope(n, None), grid_of=tracer.table_grid,
                      verbatim=False)
    n, wrong, prose = 0, [], []
    for pid in ids:
        p = {**passages[pid], "score": 1.0}
        if p["kind"] == "table":
            continue  # table cells are read by the grid; the quote rule covers their text
        for a, b in sentence_spans(p["text"]):
            sent = p["text"][a:b].strip()
            if len(sent.split()) < 6 or tabular(sent):
                continue
            n += 1
            prose.append(sent)
            v = checks.verify(sent, [p])
            if v["verdict"] != "supported":
                wrong.append((pid, v["reason"], sent))
    assert n > 200
    assert wrong == []
    sent = next(s for s in prose if " not " in f" {s} " and len(s.split()) >= 10)
    c = tracer.trace(sent)["claims"][0]
    assert c["verdict"] == "supported", c["reason"]


def test_the_passage_supporting_the_whole_answer_outranks_one_fitting_one_claim():
    """Answer-level order: a passage that supports every claim well beats one that fits a single
    claim a little better and the others poorly (the numbers of dev_trace's dev01: 0.767 /
    0.472 / 0.551 against 0.729 / 0.657 / 0.654, the narrow one with the higher BM25 of the whole
    answer, 34.4 against 26.8)."""
    import numpy as np

    score = np.asarray([[0.767, 0.729], [0.472, 0.657], [0.551, 0.654]], dtype=np.float32)
    zeros = np.zeros_like(score)
    pool = Pool(["a", "b", "c"], ["narrow", "broad"], {}, zeros, zeros, zeros, score,
                          np.asarray([38.0, 40.0, 38.0], dtype=np.float32),
                          np.asarray([34.4, 26.8], dtype=np.float32),
                          np.zeros(2, dtype=np.float32))
    assert pool.answer_order() == [1, 0]
    # one claim: its own support decides
    one = Pool(["a"], ["narrow", "broad"], {}, zeros[:1], zeros[:1], zeros[:1],
                         score[:1], np.asarray([38.0], dtype=np.float32),
                         np.asarray([1.0, 1.0], dtype=np.float32), np.zeros(2, dtype=np.float32))
    assert one.answer_order() == [0, 1]


def test_document_frequency_query_depends_on_the_text_alone():
    """The FTS5 query behind a term's document frequency comes from the stem and the words of
    the text asked about, whatever the process stemmed before (a warm server and a fresh
    command line must score a question the same: tests/test_server.py compares them end to
    end)."""
    from episteme.query.text import fts_term, stem, surface_words

    before = {t: fts_term(t) for t in ("wors", "negativ", "reduc", "tru")}
    for w in ("worse", "worsening", "negatives", "reduced", "reducing", "truly", "true"):
        stem(w)
    assert {t: fts_term(t) for t in before} == before
    assert fts_term("reduc") == '"reduc"*' and fts_term("tru") == '"tru"'
    surface = surface_words(["It got worse, then worse again."])
    assert surface[stem("worse")] == "worse"
    assert fts_term(stem("worse"), surface[stem("worse")]) == '"worse"'  # Porter would cut "wors"


def test_each_claim_shows_its_evidence_first_then_passages_by_score_and_what_was_compared(tracer):
    """The passage the verdict rests on comes first (its quote is the verdict's span); the others
    follow in score order, best first, as documented; every claim says what was compared, and a
    possible contradiction the rules cannot align is a "check", shown as CHECK THIS."""
    from episteme.query.results import format_trace_text

    answer = ("The Transformer reaches 28.4 BLEU on the WMT 2014 English-to-German task. "
              "The big Transformer models were trained for 100,000 steps. " + SCALING)
    res = tracer.trace(answer, papers=[ATT], top=5)
    for c in res["claims"]:
        rest = [p["score"] for p in c["passages"][1:]]
        assert rest == sorted(rest, reverse=True), c["claim"]
        assert set(c["compared"]) == {"claim", "evidence"} and c["compared"]["claim"]
        if c["verdict"] != "unsupported":
            assert c["evidence"]["passage_id"] == c["passages"][0]["passage_id"]
    big = res["claims"][1]
    assert big["verdict"] == "contradicted" and big["compared"] == {"claim": "big", "evidence": "base"}
    # a check reads as one in the text output
    checked = {**res, "claims": [{**res["claims"][0], "verdict": "unsupported", "supported": False,
                                  "check": True}]}
    assert "CHECK THIS" in format_trace_text(checked)
