"""The compact trace/chat form an agent reads by default (issue 34): per claim the verdict, the
reason and the one best quote with paper, section and page; the whole result with ``--full``."""

from __future__ import annotations

import json

from episteme.query.compact import best_passage, compact_chat, compact_claim, compact_trace

ATT = "attention_1706.03762v5.pdf"
SCALING = ("We suspect that for large values of dk, the dot products grow large in magnitude, "
           "pushing the softmax function into regions where it has extremely small gradients.")
FABRICATED = "The authors trained the model on the SciTrace-2 benchmark and reached 71.3 attribution F1."


def _passage(pid: str, quote: str, page: int = 4) -> dict:
    return {"paper": ATT, "section": "3.2.1 Scaled Dot-Product Attention", "page": page,
            "passage": "the whole passage text " * 40, "passage_id": pid, "similarity": 0.5,
            "score": 0.7, "rank": 1, "quote": quote, "boxes": [{"page": page, "bbox": [1, 2, 3, 4]}]}


def test_the_best_quote_is_the_evidence_and_an_unsupported_claim_gets_its_closest():
    contra = {"claim": "It reaches 30 BLEU.", "verdict": "contradicted", "supported": False,
              "support": 0.8, "reason": {"code": "number_mismatch", "text": "the passage says 28.4"},
              "passages": [_passage("a~0", "first"), _passage("a~1", "second", page=8)],
              "evidence": {"passage_id": "a~1", "quote": "It reaches 28.4 BLEU."}}
    assert best_passage(contra)["passage_id"] == "a~1"
    c = compact_claim(contra)
    assert c == {"claim": "It reaches 30 BLEU.", "verdict": "contradicted",
                 "reason": "the passage says 28.4",
                 "quote": {"paper": ATT, "section": "3.2.1 Scaled Dot-Product Attention", "page": 8,
                           "text": "It reaches 28.4 BLEU."}}
    unsup = {"claim": "x y z", "verdict": "unsupported", "supported": False,
             "reason": {"code": "low_support", "text": "no passage states this claim"},
             "passages": [_passage("a~0", "nearest")]}
    c = compact_claim(unsup, boxes=True)
    assert "quote" not in c and c["closest"]["text"] == "nearest"
    assert c["closest"]["boxes"] == [{"page": 4, "bbox": [1, 2, 3, 4]}]
    bare = compact_claim({"claim": "nothing", "supported": False, "reason": None, "passages": []})
    assert bare == {"claim": "nothing", "verdict": "unsupported", "reason": ""}


def test_compact_results_keep_only_what_the_agent_acts_on():
    full = {"scope": {"from": "all"}, "threshold": 0.68, "verifier": "offline",
            "claims": [{"claim": "a b c", "verdict": "supported", "supported": True,
                        "reason": {"code": "match", "text": "states it"},
                        "passages": [_passage("a~0", "q")],
                        "evidence": {"passage_id": "a~0", "quote": "q"}}],
            "sources": [_passage("a~0", "q")], "unsupported_claims": [], "contradicted_claims": []}
    t = compact_trace(full)
    assert set(t) == {"claims", "counts", "verifier"}
    assert t["counts"] == {"supported": 1, "unsupported": 0, "contradicted": 0}
    chat = {"question": "q?", "answer": "a b c [sec_001]", "wiki_sections_used": ["sec_001"],
            "mode": "offline", "covered": True, "citations": [{}], "abstained": False, **full}
    c = compact_chat(chat)
    assert list(c) == ["question", "answer", "mode", "covered", "wiki_sections_used", "claims",
                       "counts"]
    assert len(json.dumps(c)) < len(json.dumps(chat)) / 3


def test_trace_command_prints_the_compact_form_unless_full(ingested_wiki, capsys):
    from episteme.commands.trace import main

    args = ["--wiki", str(ingested_wiki), "--answer", SCALING + " " + FABRICATED]
    assert main(args) == 0
    compact = capsys.readouterr().out
    assert main([*args, "--full"]) == 0
    full_text = capsys.readouterr().out
    out, full = json.loads(compact), json.loads(full_text)
    assert "sources" in full and "sources" not in out and "boxes" not in compact
    assert [c["claim"] for c in out["claims"]] == [c["claim"] for c in full["claims"]]
    first, second = out["claims"]
    assert first["verdict"] == "supported" and first["quote"]["paper"] == ATT
    assert first["quote"]["page"] == 4 and "dot products grow large" in first["quote"]["text"]
    assert second["verdict"] != "supported" and "quote" not in second
    assert len(compact) * 5 < len(full_text)
