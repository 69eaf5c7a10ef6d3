#!/usr/bin/env python3
"""Benchmark the offline answer: does it answer the question asked?

    PYTHONPATH=plugin .venv/bin/python benchmarks/bench_answer.py [--write] [--explain]

With the 10 dev papers ingested and written by the offline writer (``ingest --write``'s
writer, cached under /tmp like benchmarks/bench_trace.py), every question of
``../shared/data/gold/dev_trace.jsonl`` is asked through the warm query engine
(:class:`episteme.query.chat.QueryEngine`, offline mode, the path of ``chat``, ``POST /chat`` and the
UI), and we measure:

* **hit**: the answer holds a gold-supporting sentence (a run of 6 words of one gold quote,
  after the normalisation of benchmarks/bench_trace.py), for the 40 supported questions;
* the same for the old answerer (wiki sentences only), in the same run: the baseline;
* answer length (words, median), the shortest answer sentence, abstentions on the 8
  unsupported questions (and false abstentions on the supported ones);
* recall@5 of the 50 retrieval questions on the same wiki (the writer must not hurt it);
* chat latency, warm engine, p50 / p95 (2 cores, other work running: see the machine line).

Figures are reported in-sample (all 40), on the TUNE papers the weights were tuned on and on
the HELD-OUT papers nobody tuned on (the split is by paper: every second paper in sorted
order), so over-fitting shows as a gap.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_trace  # noqa: E402
from bench_trace import GOLD, ensure_wiki, ensure_written_wiki, overlaps  # noqa: E402


def split_papers(items: list[dict]) -> tuple[set[str], set[str]]:
    """TUNE = every second paper in sorted order (starting with the first), HELD-OUT = the rest."""
    papers = sorted({it["paper"] for it in items if it.get("paper")})
    return set(papers[0::2]), set(papers[1::2])


def hit(answer: str, quotes: list[str]) -> bool:
    return any(overlaps(answer, q) for q in quotes)


def load_items(path: Path = GOLD) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


#: Questions over the 6 ``papers-more`` papers (other fields and layouts), written with their
#: gold sentences copied from the stored section text before any answer was looked at; never
#: tuned on (the weights are fitted on dev_trace only): the answerer's held-out figure.
HELDOUT = REPO / "benchmarks" / "answer_heldout.jsonl"


def miss_causes(engine, items: list[dict]) -> dict[str, int]:
    """Where each supported question's gold sentence is lost: ``hit`` (the answer holds it),
    ``paper not retrieved`` (no retrieved wiki section cites its paper), ``filtered`` (no
    sentence of the paper holding it passes :func:`is_answer_sentence` as it stands or
    shortened, e.g. over 70 words with no aside to cut),
    ``not a candidate``, ``dropped`` (ranked in the top 4, then not chosen or dropped by the
    trace), ``ranked low`` (below the top 4 of the ranking)."""
    from collections import Counter

    from episteme.query.answer_offline import (
        _sentence_spans,
        clean_sentence,
        is_answer_sentence,
        shortened_sentence,
    )

    off = engine.offline
    out: Counter = Counter()
    for it in items:
        if it.get("unsupported") or not it.get("gold_quotes"):
            continue
        if hit(engine.chat(it["question"], mode="offline")["answer"], it["gold_quotes"]):
            out["hit"] += 1
            continue
        retrieved = engine.retrieve(it["question"])
        papers, _rank, _wiki = off._papers(retrieved["sections"])
        ex = off.answer(it["question"], retrieved["sections"], covered=True, explain=True)
        ranks = [i for i, c in enumerate(ex.get("candidates") or [])
                 if hit(c["text"], it["gold_quotes"])]
        with off.tracer.locked_store() as store:
            sids = [r[0] for r in store.conn.execute(
                "SELECT section_id FROM sections WHERE paper_id = ? AND kind NOT IN "
                "('references', 'front')", (it["paper"],))]
        quotable = any(hit(s, it["gold_quotes"]) and (
                           is_answer_sentence(s) or hit(shortened_sentence(s) or "", it["gold_quotes"]))
                       for text, *_r in off._sections(sids).values()
                       for a, b in _sentence_spans(text) for s in [clean_sentence(text[a:b])])
        out["paper not retrieved" if it["paper"] not in papers else "filtered" if not quotable
            else "not a candidate" if not ranks else "dropped" if ranks[0] < 4
            else "ranked low"] += 1
    return dict(out)


def heldout_run(weights: dict | None = None, causes: bool = False) -> dict | None:
    """Ask every question of :data:`HELDOUT` on the ``papers-more`` wiki written by the offline
    writer (cached like the dev wiki): per question, whether the answer holds a gold sentence
    and whether it abstained."""
    import bench_verify as bv
    from episteme.config import load_settings
    from episteme.query.chat import QueryEngine

    if not HELDOUT.is_file() or not sorted(bv.MORE.glob("*.pdf")):
        return None
    wiki = ensure_written_wiki(bv.more_wiki())
    backfill = ensure_sentence_vectors(wiki)
    engine = QueryEngine(load_settings(wiki, env={}, dotenv=None))
    engine.chat("warm up the engine", mode="offline")
    if weights is not None:
        engine.offline.weights = dict(weights)
    rows = []
    for it in load_items(HELDOUT):
        res = engine.chat(it["question"], mode="offline")
        sents = ([c["sentence"] for c in res.get("citations") or []] if not res.get("abstained")
                 else [])
        rows.append({"id": it["id"], "paper": it["paper"], "supported": not it.get("unsupported"),
                     "hit": hit(res["answer"], it["gold_quotes"]) if it["gold_quotes"] else None,
                     "abstained": bool(res.get("abstained")), "answer": res["answer"],
                     "words": len(re.sub(r"\[sec_\d+\]", "", res["answer"]).split()),
                     "min_sentence_words": min((len(s.split()) for s in sents), default=None)})
    out = {"rows": rows, "backfill": backfill,
           "causes": miss_causes(engine, load_items(HELDOUT)) if causes else None}
    engine.close()
    return out


def ensure_sentence_vectors(wiki: Path) -> dict:
    """The store migration for a wiki ingested before sentence vectors existed (the bench
    cache is such a wiki): compute the missing ones, timed (CPU and wall)."""
    from episteme.config import load_settings
    from episteme.ingest.sentences import backfill

    c0, t0 = time.process_time(), time.perf_counter()
    out = backfill(load_settings(wiki, env={}, dotenv=None), progress=True)
    out["cpu_seconds"] = round(time.process_time() - c0, 2)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


# ------------------------------------------------------------------ fitting the ranking weights


def features_dump(engine, items: list[dict]) -> list[dict]:
    """Per supported question: every candidate's features and whether it holds a gold
    sentence (the fit's data)."""
    out = []
    for it in items:
        if it.get("unsupported") or not it.get("gold_quotes"):
            continue
        retrieved = engine.retrieve(it["question"])
        ex = engine.offline.answer(it["question"], retrieved["sections"], covered=True,
                                   explain=True)
        cands = ex.get("candidates") or []
        out.append({"id": it["id"], "paper": it["paper"], "candidates": [
            {"parts": {k: v for k, v in c.items() if isinstance(v, float) and k not in
                       ("score", "evidence")},
             "evidence": c["evidence"], "gold": hit(c["text"], it["gold_quotes"])}
            for c in cands]})
    return out


def fit_weights(dump: list[dict], papers: set[str], *, l2: float = 0.1,
                steps: int = 3000) -> dict[str, float]:
    """Pairwise logistic ranking over each question's candidates: every (gold, non-gold)
    pair of a question should score the gold one higher; the loss is the mean softplus of
    the margins (a question weighs the same however many candidates it has), plus L2 on
    standardised features; Adam, full batch; fitted on the questions of ``papers`` only.
    Pairwise rather than listwise: in 5-fold CV by paper it put the gold sentence in the top
    3 as often or more, and it does not let one easy question's gold dominate (RESULTS).
    The weights are then scaled so that a question's top scores spread like the evidence
    scale (what :data:`MARGIN`, :data:`REDUNDANCY` and :data:`LENGTH_COST` are set in)."""
    import numpy as np
    from episteme.query.answer_offline import FEATURES

    qs = [q for q in dump if q["paper"] in papers and any(c["gold"] for c in q["candidates"])]
    X = [np.asarray([[c["parts"].get(f, 0.0) for f in FEATURES] for c in q["candidates"]])
         for q in qs]
    Y = [np.asarray([c["gold"] for c in q["candidates"]], dtype=bool) for q in qs]
    allx = np.vstack(X)
    mu, sd = allx.mean(axis=0), allx.std(axis=0) + 1e-9
    pairs = [((x[y] - mu) / sd, (x[~y] - mu) / sd) for x, y in zip(X, Y, strict=True)]
    w = np.zeros(len(FEATURES))
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, steps + 1):
        g = 2 * l2 * w
        for xg, xn in pairs:
            d = (xg @ w)[:, None] - (xn @ w)[None, :]
            s = 1.0 / (1.0 + np.exp(np.clip(d, -30, 30)))  # -d softplus(-d) / d d
            s /= s.size * len(pairs)
            g -= s.sum(axis=1) @ xg - s.sum(axis=0) @ xn
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= 0.05 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    w = w / sd
    spread_ev, spread_w = [], []
    for q, x in zip(qs, X, strict=True):
        z = x @ w
        spread_w.append(float(np.std(np.sort(z)[::-1][:12])))
        ev = np.asarray([c["evidence"] for c in q["candidates"]])
        spread_ev.append(float(np.std(np.sort(ev)[::-1][:12])))
    scale = statistics.median(spread_ev) / (statistics.median(spread_w) or 1.0)
    return {f: round(float(v * scale), 4) for f, v in zip(FEATURES, w, strict=True)}


def top_k_rate(dump: list[dict], papers: set[str], weights: dict[str, float], k: int = 3) -> float:
    """Share of the questions of ``papers`` whose gold sentence ranks in the top ``k`` (a
    quick proxy; the real figure runs the whole answerer)."""
    qs = [q for q in dump if q["paper"] in papers]
    n = 0
    for q in qs:
        ranked = sorted(q["candidates"], key=lambda c: -sum(weights.get(f, 0.0) * v for f, v in
                                                           c["parts"].items()))
        n += any(c["gold"] for c in ranked[:k])
    return n / max(1, len(qs))


def folds_by_paper(items: list[dict], k: int = 5) -> list[set[str]]:
    papers = sorted({it["paper"] for it in items if it.get("paper")})
    return [set(papers[i::k]) for i in range(k)]


def answer_hits(engine, items: list[dict], weights: dict[str, float]) -> dict[str, bool]:
    """Run the whole offline answerer with ``weights`` on ``items``: id -> holds gold."""
    engine.offline.weights = dict(weights)
    out = {}
    for it in items:
        res = engine.chat(it["question"], mode="offline")
        out[it["id"]] = hit(res["answer"], it["gold_quotes"])
    return out


def fit_report(engine, items: list[dict]) -> dict:
    """Three fits of the ranking: on the TUNE papers (measured on TUNE and on the HELD-OUT
    papers, whole pipeline), one per fold of a 5-fold cross-validation by paper (fit on four
    fifths of the papers, answer the fifth), and on all 40 questions: the shipped weights,
    whose out-of-sample figures are the CV and the papers-more questions."""
    sup = [it for it in items if not it.get("unsupported") and it.get("gold_quotes")]
    dump = features_dump(engine, sup)
    tune, held = split_papers(sup)
    w = fit_weights(dump, tune)
    tune_hits = answer_hits(engine, sup, w)
    split = {name: [tune_hits[it["id"]] for it in sup if it["paper"] in ps]
             for name, ps in (("tune", tune), ("held", held))}
    folds = []
    for fold in folds_by_paper(sup):
        train = {it["paper"] for it in sup} - fold
        wf = fit_weights(dump, train)
        hits = answer_hits(engine, [it for it in sup if it["paper"] in fold], wf)
        folds.append({"papers": sorted(fold), "hits": sum(hits.values()), "n": len(hits),
                      "proxy_top3": top_k_rate(dump, fold, wf)})
    w_all = fit_weights(dump, {it["paper"] for it in sup})
    engine.offline.weights = dict(w_all)
    return {"weights": w_all, "weights_tune": w, "folds": folds,
            "tune_fit": {k: (sum(v), len(v)) for k, v in split.items()},
            "proxy_top3": {"tune": top_k_rate(dump, tune, w), "held": top_k_rate(dump, held, w)}}


def run(wiki: Path, explain: bool, weights: dict | None = None) -> dict:
    from episteme.config import load_settings
    from episteme.query.answer import extractive_answer
    from episteme.query.chat import QueryEngine

    settings = load_settings(wiki, env={}, dotenv=None)
    engine = QueryEngine(settings)
    items = load_items()
    engine.chat("warm up the engine", mode="offline")
    if weights is not None:
        engine.offline.weights = dict(weights)
    rows = []
    for it in items:
        t, c0 = time.perf_counter(), time.process_time()
        res = engine.chat(it["question"], mode="offline")
        dt, cpu = time.perf_counter() - t, time.process_time() - c0
        retrieved = engine.retrieve(it["question"])
        old = extractive_answer(it["question"], retrieved["sections"], engine.embedder)["answer"]
        sents = ([c["sentence"] for c in res.get("citations") or []] if not res.get("abstained")
                 else [])
        row = {
            "id": it["id"], "paper": it.get("paper"), "type": it.get("type"),
            "supported": not it.get("unsupported"),
            "answer": res["answer"], "abstained": bool(res.get("abstained")),
            "hit": hit(res["answer"], it["gold_quotes"]) if it["gold_quotes"] else None,
            "old_hit": hit(old, it["gold_quotes"]) if it["gold_quotes"] else None,
            "words": len(re.sub(r"\[sec_\d+\]", "", res["answer"]).split()),
            "min_sentence_words": min((len(s.split()) for s in sents), default=None),
            "unsupported_claims": len(res.get("unsupported_claims") or []),
            "seconds": dt, "cpu": cpu,
        }
        if explain:
            ex = engine.offline.answer(it["question"], retrieved["sections"],
                                       covered=retrieved.get("covered", True), explain=True)
            row["candidates"] = ex.get("candidates", [])
            row["gold_quotes"] = it["gold_quotes"]
        rows.append(row)
    engine.close()
    # latency baseline in the same run: the same engine without the shared embedding memo
    # latency baseline in the same run: the same engine ignoring the stored sentence vectors
    # (the candidates embedded at query time, as before they were stored)
    base = QueryEngine(settings)
    base.chat("warm up the engine", mode="offline")
    base.offline.use_stored = False
    if weights is not None:
        base.offline.weights = dict(weights)
    base_times, base_cpu = [], []
    for it in items:
        t, c = time.perf_counter(), time.process_time()
        base.chat(it["question"], mode="offline")
        base_times.append(time.perf_counter() - t)
        base_cpu.append(time.process_time() - c)
    base.close()
    return {"rows": rows, "base_times": base_times, "base_cpu": base_cpu,
            "load": os.getloadavg()}


GROWTH_QUESTIONS = 24  # the first N dev questions, as bench_growth's chat step


def growth_latency(wiki: Path) -> dict:
    """Warm chat on a large wiki (e.g. a copy of the 300-paper growth snapshot): its missing
    sentence vectors backfilled first (timed), then the first :data:`GROWTH_QUESTIONS` dev
    questions with the stored vectors and, right after in the same process, ignoring them
    (the candidates embedded at query time): wall and CPU per question."""
    from episteme.config import load_settings
    from episteme.query.chat import QueryEngine

    out = {"wiki": str(wiki), "backfill": ensure_sentence_vectors(wiki)}
    settings = load_settings(wiki, env={}, dotenv=None)
    items = load_items()[:GROWTH_QUESTIONS]
    engine = QueryEngine(settings)
    engine.chat("warm up the engine", mode="offline")
    for name, stored in (("stored", True), ("baseline", False)):
        engine.offline.use_stored = stored
        engine.chat(items[0]["question"] + " (warm)", mode="offline")
        wall, cpu = [], []
        for it in items:
            t, c = time.perf_counter(), time.process_time()
            engine.chat(it["question"], mode="offline")
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        out[name] = {"p50": statistics.median(wall), "cpu_p50": statistics.median(cpu),
                     "p95": sorted(wall)[int(0.95 * (len(wall) - 1))]}
    with engine.tracer.locked_store() as store:
        out["papers"] = int(store.conn.execute(
            "SELECT count(*) FROM papers").fetchone()[0])
    engine.close()
    out["load"] = os.getloadavg()
    return out


def rate(rows: list[dict], key: str) -> str:
    if not rows:
        return "-"
    n = sum(bool(r[key]) for r in rows)
    return f"{n / len(rows):.3f} ({n}/{len(rows)})"


def report(data: dict, retrieval: dict, machine: str) -> str:
    rows = data["rows"]
    sup = [r for r in rows if r["supported"]]
    uns = [r for r in rows if not r["supported"]]
    tune, held = split_papers(sup)
    parts = {"all 40 (in-sample)": sup,
             "TUNE papers (in-sample)": [r for r in sup if r["paper"] in tune],
             "HELD-OUT papers (in-sample for weights fitted on all 40)":
                 [r for r in sup if r["paper"] in held]}
    words = [r["words"] for r in sup if not r["abstained"]]
    mins = [r["min_sentence_words"] for r in sup if r["min_sentence_words"] is not None]
    times = sorted(r["seconds"] for r in rows)
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    btimes = sorted(data.get("base_times") or [float("nan")])
    b95 = btimes[min(len(btimes) - 1, int(0.95 * len(btimes)))]
    load = data.get("load") or (float("nan"),) * 3
    fused = retrieval["metrics"]["fused"]
    lines = [
        "# Offline answers (benchmarks/bench_answer.py)",
        "",
        f"Machine: {machine}. Other helpers' work was running on the same 2 cores (load "
        f"average at the end of the answer runs: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
        "over 1 / 5 / 15 min), so latency is best read as the ratio to the baseline measured in "
        "the same run.",
        "",
        "Wiki: the 10 dev papers ingested and written by the offline writer (ingest --write's "
        "writer); questions asked through the warm QueryEngine, offline mode (the path of `chat`, "
        "`POST /chat`, the UI).",
        "",
        "| questions | answer holds a gold sentence (new) | old answerer (wiki sentences only) |",
        "|---|---|---|",
    ]
    for name, rs in parts.items():
        lines.append(f"| {name} | {rate(rs, 'hit')} | {rate(rs, 'old_hit')} |")
    lines += [
        "",
        f"TUNE papers: {', '.join(sorted(tune))}. HELD-OUT papers: {', '.join(sorted(held))}.",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| median answer words (supported, answered) | {statistics.median(words) if words else '-'} | ≤ 120 |",
        f"| shortest answer sentence (words) | {min(mins) if mins else '-'} | ≥ 6 |",
        f"| supported questions answered 'not covered' | {rate(sup, 'abstained')} | low |",
        f"| unsupported questions (8) abstained | {rate(uns, 'abstained')} | high |",
        f"| answers with a claim the trace calls unsupported | "
        f"{sum(r['unsupported_claims'] > 0 for r in rows if not r['abstained'])} | 0 |",
        f"| retrieval questions recall@5 (fused) | {fused['recall@5']:.3f} (n={retrieval['n']}) | ≥ 0.92 |",
        f"| chat warm, in-process engine, p50 / p95 | {statistics.median(times):.2f} s / {p95:.2f} s | p50 ≤ 1.5 s |",
        f"| chat warm CPU time p50, new / baseline | "
        f"{statistics.median(r['cpu'] for r in rows):.2f} s / "
        f"{statistics.median(data.get('base_cpu') or [float('nan')]):.2f} s | - |",
        f"| same, baseline: stored sentence vectors ignored (same run), p50 / p95 | "
        f"{statistics.median(btimes):.2f} s / {b95:.2f} s | - |",
        f"| warm p50 ratio, new / baseline | {statistics.median(times) / statistics.median(btimes):.2f} | < 1 |",
        "",
    ]
    bf = data.get("backfill") or {}
    lines += ["", f"Sentence-vector backfill of this wiki in the same run (the store migration): "
              f"{bf.get('papers', 0)} papers, {bf.get('sentences', 0)} sentences, "
              f"{bf.get('seconds', 0)} s wall / {bf.get('cpu_seconds', 0)} s CPU."]
    fit = data.get("fit")
    if fit:
        total = sum(f["hits"] for f in fit["folds"])
        n = sum(f["n"] for f in fit["folds"])
        tf = fit["tune_fit"]
        lines += [
            "", "Ranking weights (pairwise logistic, L2; `--fit`): the table above is the "
            "answerer with the weights fitted on all 40 questions (the shipped `WEIGHTS`), so it "
            "is in-sample; the out-of-sample figures are these. Fitted on the TUNE papers only: "
            f"TUNE {tf['tune'][0] / max(1, tf['tune'][1]):.3f} ({tf['tune'][0]}/{tf['tune'][1]}), "
            f"HELD-OUT {tf['held'][0] / max(1, tf['held'][1]):.3f} "
            f"({tf['held'][0]}/{tf['held'][1]}). Cross-validation, 5 folds by paper (weights "
            "fitted on 8 papers, the other 2 papers' questions answered by the whole pipeline):",
            "",
            "| fold (held-out papers) | answer holds a gold sentence | gold in top 3 (ranking "
            "alone) |", "|---|---|---|"]
        for f in fit["folds"]:
            lines.append(f"| {', '.join(f['papers'])} | {f['hits']}/{f['n']} | "
                         f"{f['proxy_top3']:.3f} |")
        lines += [f"| **5-fold CV, all 40** | **{total / max(1, n):.3f} ({total}/{n})** | - |", "",
                  f"Ranking alone (TUNE fit), gold in the top 3: TUNE {fit['proxy_top3']['tune']:.3f}, "
                  f"HELD-OUT {fit['proxy_top3']['held']:.3f}. Shipped weights (all 40): "
                  + ", ".join(f"{k} {v:+.3f}" for k, v in fit["weights"].items()) + "."]
    ho = data.get("heldout")
    if ho:
        hs = [r for r in ho["rows"] if r["supported"]]
        hu = [r for r in ho["rows"] if not r["supported"]]
        hw = [r["words"] for r in hs if not r["abstained"]]
        hm = [r["min_sentence_words"] for r in hs if r["min_sentence_words"] is not None]
        lines += [
            "", f"Held-out questions (`benchmarks/answer_heldout.jsonl`: {len(hs)} questions and "
            f"{len(hu)} unanswerable ones over the 6 `papers-more` papers, written with their gold "
            "sentences before any answer was read; never tuned on), on the `papers-more` wiki the "
            "offline writer makes:", "",
            "| measure | value |", "|---|---|",
            f"| answer holds a gold sentence | {rate(hs, 'hit')} |",
            f"| supported questions answered 'not covered' | {rate(hs, 'abstained')} |",
            f"| unanswerable questions abstained | {rate(hu, 'abstained')} |",
            f"| median answer words | {statistics.median(hw) if hw else '-'} |",
            f"| shortest answer sentence (words) | {min(hm) if hm else '-'} |",
            "", "| id | paper | holds gold | words | answer (first 120 chars) |", "|---|---|---|---|---|"]
        for r in ho["rows"]:
            mark = "-" if r["hit"] is None else ("✓" if r["hit"] else "✗")
            ans = " ".join(r["answer"].split())[:120].replace("|", "/")
            lines.append(f"| {r['id']} | {r['paper'].split('_')[0]} | {mark} | {r['words']} | {ans} |")
    if data.get("causes"):
        ho_c = (data.get("heldout") or {}).get("causes") or {}
        kinds = ("hit", "ranked low", "dropped", "not a candidate", "filtered",
                 "paper not retrieved")
        lines += ["", "Where the gold sentence is lost (`--causes`):", "",
                  "| cause | dev 40 | papers-more |", "|---|---|---|"]
        lines += [f"| {k} | {data['causes'].get(k, 0)} | {ho_c.get(k, 0)} |" for k in kinds]
    g = data.get("growth")
    if g:
        gb = g["backfill"]
        lines += [
            "", f"Warm chat at {g['papers']} papers (a copy of the growth snapshot, "
            f"{GROWTH_QUESTIONS} dev questions; load {g['load'][0]:.1f} at the end); its "
            f"backfill in this run: {gb['papers']} papers, {gb['sentences']} sentences, "
            f"{gb['seconds']} s:", "",
            "| engine | p50 wall | p95 wall | p50 CPU |", "|---|---|---|---|",
            f"| stored sentence vectors | {g['stored']['p50']:.2f} s | {g['stored']['p95']:.2f} s "
            f"| {g['stored']['cpu_p50']:.2f} s |",
            f"| baseline (candidates embedded at query time) | {g['baseline']['p50']:.2f} s | "
            f"{g['baseline']['p95']:.2f} s | {g['baseline']['cpu_p50']:.2f} s |",
            f"| ratio stored / baseline (p50 wall) | {g['stored']['p50'] / g['baseline']['p50']:.2f}"
            " | | |"]
    lines += [
        "",
        "Per question (✓ = holds a gold sentence):",
        "",
        "| id | type | new | old | words | answer (first 160 chars) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        mark = "-" if r["hit"] is None else ("✓" if r["hit"] else "✗")
        old = "-" if r["old_hit"] is None else ("✓" if r["old_hit"] else "✗")
        ans = " ".join(r["answer"].split())[:160].replace("|", "/")
        lines.append(f"| {r['id']} | {r['type']} | {mark} | {old} | {r['words']} | {ans} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write benchmarks/RESULTS-answer.md")
    ap.add_argument("--explain", action="store_true", help="dump scored candidates to stderr JSON")
    ap.add_argument("--no-retrieval", action="store_true")
    ap.add_argument("--causes", action="store_true",
                    help="also tabulate where each missed gold sentence is lost (dev, held-out)")
    ap.add_argument("--no-heldout", action="store_true",
                    help="skip the held-out questions over papers-more (answer_heldout.jsonl)")
    ap.add_argument("--growth", type=Path, metavar="WIKI",
                    help="also time warm chat on this (large) wiki, e.g. a copy of level-300")
    ap.add_argument("--fit", action="store_true",
                    help="fit the ranking weights on the TUNE papers and cross-validate (5 folds)")
    args = ap.parse_args()
    wiki = ensure_written_wiki(ensure_wiki())
    backfilled = ensure_sentence_vectors(wiki)
    print(f"sentence vectors backfilled: {backfilled}", file=sys.stderr)
    fit = None
    if args.fit:
        from episteme.config import load_settings
        from episteme.query.chat import QueryEngine

        engine = QueryEngine(load_settings(wiki, env={}, dotenv=None))
        engine.chat("warm up the engine", mode="offline")
        fit = fit_report(engine, load_items())
        engine.close()
        print(json.dumps(fit, indent=1), file=sys.stderr)
    data = run(wiki, args.explain, fit["weights"] if fit else None)
    data["backfill"] = backfilled
    data["fit"] = fit
    data["heldout"] = (None if args.no_heldout else
                       heldout_run(fit["weights"] if fit else None, causes=args.causes))
    if args.causes:
        from episteme.config import load_settings
        from episteme.query.chat import QueryEngine

        engine = QueryEngine(load_settings(wiki, env={}, dotenv=None))
        if fit:
            engine.offline.weights = dict(fit["weights"])
        data["causes"] = miss_causes(engine, load_items())
        engine.close()
    data["growth"] = growth_latency(args.growth) if args.growth else None
    if args.explain:
        Path("/tmp/bench_answer_explain.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    retrieval = ({"metrics": {"fused": {"recall@5": float("nan")}}, "n": 0} if args.no_retrieval
                 else bench_trace.evaluate_retrieval(wiki))
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    text = report(data, retrieval, machine)
    print(text)
    if args.write:
        (REPO / "benchmarks" / "RESULTS-answer.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
