"""The whole pipeline on real stores: retrieve → answer → trace, offline and with Claude (fake
API), the warm QueryEngine under concurrent use, and the chat command."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from episteme.query.chat import QueryEngine, format_chat_text
from episteme.wiki.edit import WikiWriter
from ingested_wiki import wiki_settings

ATT = "attention_1706.03762v5.pdf"
GAN = "gan_1406.2661v1.pdf"
FABRICATED = "The authors trained the model on the SciTrace-2 benchmark and reached 71.3 attribution F1."


def add_sections(wiki: Path) -> dict[str, str]:
    """A small hand-written wiki over the two ingested papers (+ one section that index.json
    lists without sources)."""
    out = {}
    with WikiWriter(wiki, op="test") as w:
        out["scaling"] = w.create_section(
            "scaled-dot-product-attention", title="Why attention scores are scaled",
            description="The 1/sqrt(d_k) factor of scaled dot-product attention and why it is needed.",
            body="For large values of the key dimension the dot products grow large in magnitude, pushing "
                 "the softmax function into regions where it has extremely small gradients. To counteract "
                 "this effect the Transformer scales the dot products by one over the square root of d_k.",
            sources=[ATT], page_title="Scaled dot-product attention").section_id
        out["minimax"] = w.create_section(
            "generative-adversarial-nets", title="The adversarial game",
            description="Generator and discriminator trained as a two-player minimax game.",
            body="A generative model G captures the data distribution while a discriminative model D "
                 "estimates the probability that a sample came from the training data rather than from G. "
                 "The training procedure for G is to maximize the probability of D making a mistake.",
            sources=[GAN], page_title="Generative adversarial nets").section_id
        out["orphan"] = w.create_section(
            "notes", title="Reading notes on softmax temperature",
            description="Unsourced notes about softmax temperature.",
            body="Raising the softmax temperature flattens the distribution over the vocabulary entries.",
            sources=[GAN], page_title="Notes").section_id
    # a section whose index.json entry lists no sources (hand-edited wikis have them)
    index = json.loads((wiki / "index.json").read_text(encoding="utf-8"))
    index[out["orphan"]] = []
    (wiki / "index.json").write_text(json.dumps(index), encoding="utf-8")
    return out


@pytest.fixture
def engine(ingested_wiki, embedder):
    ids = add_sections(ingested_wiki)
    eng = QueryEngine(wiki_settings(ingested_wiki), embedder=embedder)
    yield eng, ids
    eng.close()


def test_offline_chat_answers_from_the_wiki_and_traces_to_the_paper(engine):
    eng, ids = engine
    res = eng.chat("Why does the Transformer scale the dot products in attention?", k=2, mode="offline")
    assert res["mode"] == "offline"
    assert ids["scaling"] in res["wiki_sections_used"]
    assert f"[{ids['scaling']}]" in res["answer"]
    assert res["sources"], res
    src = res["sources"][0]
    assert set(src) >= {"paper", "section", "passage", "similarity", "page", "claim"}
    assert src["paper"] == ATT and src["section"].startswith("3.2.1") and src["page"] == 4
    assert "extremely small gradients" in " ".join(s["passage"] for s in res["sources"])
    # traced only into the source papers of the sections the answer cites
    assert res["scope"]["from"] == "sections" and ATT in res["scope"]["papers"]
    assert res["unsupported_claims"] == []


def test_claude_chat_flags_a_claim_the_papers_do_not_support(engine, fake_anthropic, ingested_wiki, embedder):
    _, ids = engine
    settings = wiki_settings(ingested_wiki, api_key="test-key", llm_base_url=fake_anthropic.base_url)
    sid = ids["minimax"]
    answer = (f"The generator is trained to maximize the probability that the discriminator makes a "
              f"mistake [{sid}]. {FABRICATED} [{sid}]")
    fake_anthropic.enqueue(fake_anthropic.tool_use_response("answer", {"answer": answer, "sections_used": [sid]}))
    eng = QueryEngine(settings, embedder=embedder)
    try:
        res = eng.chat("How is the GAN generator trained?", k=3)
    finally:
        eng.close()
    assert res["mode"] == "claude" and res["wiki_sections_used"] == [sid]
    assert res["unsupported_claims"] == [FABRICATED]
    assert res["sources"] and all(s["paper"] == GAN for s in res["sources"])
    assert res["sources"][0]["claim"].startswith("The generator is trained")
    prompt = fake_anthropic.requests[0].text()
    assert f'<document label="{sid} | generative-adversarial-nets.md">' in prompt
    assert "maximize the probability of D making a mistake" in prompt


def test_sections_without_sources_are_reported(engine):
    eng, ids = engine
    res = eng.trace("Raising the softmax temperature flattens the distribution.", sections=[ids["orphan"]])
    assert res["scope"]["sections_without_sources"] == [ids["orphan"]]
    assert "without sources" in res["note"] and res["unsupported_claims"]


def test_engine_is_safe_under_concurrent_requests(engine):
    eng, _ = engine
    questions = ["Why does the Transformer scale the dot products in attention?",
                 "How is the GAN generator trained against the discriminator?"] * 3
    serial = [eng.chat(q, k=2, mode="offline") for q in questions[:2]]
    results: list[dict | None] = [None] * len(questions)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = eng.chat(questions[i], k=2, mode="offline")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(questions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    for i, r in enumerate(results):
        ref = serial[i % 2]
        assert r["answer"] == ref["answer"]
        assert [s["passage_id"] for s in r["sources"]] == [s["passage_id"] for s in ref["sources"]]


def test_text_format_numbers_citations_and_quotes_passages(engine):
    eng, _ = engine
    res = eng.chat("Why does the Transformer scale the dot products in attention?", k=2, mode="offline")
    text = format_chat_text(res)
    assert text.startswith(res["answer"])
    assert "[1]" in text and "Sources:" in text and f"{ATT}, 3.2.1" in text
    assert '"' in text.split("Sources:")[1]


def test_chat_command(engine, capsys):
    from episteme.commands.chat import main

    eng, ids = engine
    wiki = str(eng.settings.wiki)
    q = "How is the GAN generator trained?"
    assert main([q, "--wiki", wiki, "--k", "2", "--mode", "offline", "--full"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert {"answer", "wiki_sections_used", "sources", "unsupported_claims"} <= set(full)
    assert ids["minimax"] in full["wiki_sections_used"]
    # by default the compact form: per claim the verdict, the reason and the best quote only
    assert main([q, "--wiki", wiki, "--k", "2", "--mode", "offline"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answer"] == full["answer"] and out["wiki_sections_used"] == full["wiki_sections_used"]
    assert "sources" not in out and "citations" not in out
    assert [c["claim"] for c in out["claims"]] == [c["claim"] for c in full["claims"]]
    for c, f in zip(out["claims"], full["claims"], strict=True):
        assert set(c) <= {"claim", "verdict", "reason", "quote", "closest", "compared", "check"}
        assert c["verdict"] == f["verdict"] and c["reason"] == f["reason"]["text"]
        q_ = c.get("quote") or c["closest"]
        assert set(q_) == {"paper", "section", "page", "text"} and q_["paper"] == GAN
    assert out["counts"]["supported"] == sum(c["verdict"] == "supported" for c in out["claims"])
    # --boxes: the best quote's highlight boxes too
    assert main([q, "--wiki", wiki, "--k", "2", "--mode", "offline", "--boxes"]) == 0
    boxed = json.loads(capsys.readouterr().out)
    assert all(isinstance((c.get("quote") or c["closest"])["boxes"], list) for c in boxed["claims"])
    assert any((c.get("quote") or c["closest"])["boxes"] for c in boxed["claims"])
    assert main(["", "--wiki", wiki]) == 2
    assert "empty" in capsys.readouterr().err


def test_a_not_covered_answer_lists_no_wiki_sections_used():
    """An answer that says the wiki does not cover the question names the closest topics, not
    "Wiki sections used" (the offline answerer abstains with the retrieved sections at hand)."""
    for result in (
            {"answer": "The wiki does not cover this question. Closest topics in the wiki: X (x.md).",
             "wiki_sections_used": ["sec_001", "sec_002"], "sources": [], "claims": [],
             "abstained": True, "mode": "offline", "note": "nothing to trace"},
            {"answer": "The wiki does not cover this question.", "wiki_sections_used": [],
             "sources": [], "claims": [], "abstained": True, "mode": "not_covered"}):
        text = format_chat_text(result)
        assert text.startswith("The wiki does not cover") and "Wiki sections used" not in text
    covered = {"answer": "A claim [sec_001].", "wiki_sections_used": ["sec_001"], "sources": [],
               "claims": [], "mode": "offline"}
    assert "Wiki sections used: sec_001" in format_chat_text(covered)
