"""The answer benchmark's question files: well formed, and the test set kept apart from the
sets the ranking is fitted on (a test question whose gold sentence is also a training
question's gold sentence would measure memory, not the answerer)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_answer  # noqa: E402
from bench_trace import overlaps  # noqa: E402

OWN_SETS = (bench_answer.HELDOUT, bench_answer.TRAIN, bench_answer.TRAIN2, bench_answer.TEST)
TYPES = {"definition", "numeric", "mechanism", "comparison", "limitation", "reason", "other",
         "unsupported"}


def _items(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.mark.parametrize("path", OWN_SETS, ids=lambda p: p.name)
def test_question_file_is_well_formed(path: Path) -> None:
    items = _items(path)
    assert items, f"{path.name} is empty"
    for it in items:
        assert {"id", "paper", "question", "gold_quotes", "type"} <= it.keys(), it
        assert it["paper"].endswith(".pdf") and "/" not in it["paper"], it["id"]
        assert it["type"] in TYPES, it["id"]
        assert it["question"].strip().endswith("?"), it["id"]
        if it.get("unsupported"):
            assert it["gold_quotes"] == [] and it["type"] == "unsupported", it["id"]
        else:
            assert 1 <= len(it["gold_quotes"]) <= 4, it["id"]
            # the benchmark's hit needs a 6-word run of a quote
            assert all(len(q.split()) >= 6 for q in it["gold_quotes"]), it["id"]


def test_ids_are_unique_across_every_set() -> None:
    ids = [it["id"] for p in OWN_SETS for it in _items(p)]
    if bench_answer.GOLD.is_file():
        ids += [it["id"] for it in _items(bench_answer.GOLD)]
    assert len(ids) == len(set(ids))


def test_test_set_shares_no_gold_sentence_or_question_with_a_training_set() -> None:
    train = [it for p in (bench_answer.HELDOUT, bench_answer.TRAIN, bench_answer.TRAIN2)
             for it in _items(p)]
    if bench_answer.GOLD.is_file():
        train += _items(bench_answer.GOLD)
    seen_q = {" ".join(it["question"].lower().split()) for it in train}
    quotes = [(it["paper"], q) for it in train for q in it["gold_quotes"]]
    for it in _items(bench_answer.TEST):
        assert " ".join(it["question"].lower().split()) not in seen_q, it["id"]
        for q in it["gold_quotes"]:
            clash = [tq for paper, tq in quotes if paper == it["paper"] and overlaps(tq, q)]
            assert not clash, (it["id"], clash[:1])


def test_overlap_check_finds_a_shared_run() -> None:
    """The leak check above is only as good as ``overlaps``: a shared 6-word run is found
    whatever the case and punctuation around it, a 5-word one is not."""
    assert overlaps("We find that the model, trained longer, wins often.",
                    "The model trained longer wins often, by far")
    assert not overlaps("the model trained longer", "the model trained longer today")
