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

The ranking's weights are fitted (``--fit``) on every training set: dev_trace, the
``papers-more`` questions of ``answer_heldout.jsonl``, and ``answer_train.jsonl`` and
``answer_train2.jsonl`` over all 16 papers.  Figures on those questions are in-sample; the out-of-sample ones are the
cross-validation by paper (8 folds over the 16 papers, whole pipeline) and the test set
``answer_test.jsonl``, written blind and never fitted on, so over-fitting shows as a gap.
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


def hit(answer: str, quotes: list[str]) -> bool:
    return any(overlaps(answer, q) for q in quotes)


def load_items(path: Path = GOLD) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


#: Questions over the 6 ``papers-more`` papers (other fields and layouts), written with their
#: gold sentences copied from the stored section text before any answer was looked at
#: (session 6). The held-out set of sessions 6-8; since session 9 a training set.
HELDOUT = REPO / "benchmarks" / "answer_heldout.jsonl"
#: More training questions over all 16 papers (4 a paper, session 9), written the same way.
TRAIN = REPO / "benchmarks" / "answer_train.jsonl"
#: 92 more (session 10: 5 a dev paper, 7 a papers-more paper), by two other writers, the same way.
TRAIN2 = REPO / "benchmarks" / "answer_train2.jsonl"
#: The test set: questions over all 16 papers written blind (session 9, by someone who never
#: ran the answerer) and never fitted on or used to choose anything: the held-out figure.
TEST = REPO / "benchmarks" / "answer_test.jsonl"


def miss_causes(engine, items: list[dict]) -> dict[str, int]:
    """Where each supported question's gold sentence is lost: ``hit`` (the answer holds it),
    ``paper not retrieved`` (no retrieved wiki section cites its paper), ``filtered`` (no
    sentence of the paper holding it passes :func:`is_answer_sentence` as it stands or
    shortened, e.g. over 70 words with no aside to cut),
    ``not a candidate``, ``dropped`` (ranked in the top 4, then not chosen or dropped by the
    trace), ``ranked low`` (below the top 4 of the ranking)."""
    from collections import Counter

    from episteme.query.answer_features import (
        clean_sentence,
        is_answer_sentence,
        sentence_spans,
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
            sids = store.prose_section_ids(it["paper"])
        quotable = any(hit(s, it["gold_quotes"]) and (
                           is_answer_sentence(s) or hit(shortened_sentence(s) or "", it["gold_quotes"]))
                       for text, *_r in off._sections(sids).values()
                       for a, b in sentence_spans(text) for s in [clean_sentence(text[a:b])])
        out["paper not retrieved" if it["paper"] not in papers else "filtered" if not quotable
            else "not a candidate" if not ranks else "dropped" if ranks[0] < 4
            else "ranked low"] += 1
    return dict(out)


def open_engines(dev_wiki: Path) -> dict:
    """Warm engines over the two cached wikis the offline writer makes: the dev papers'
    (``dev_wiki``, already written and backfilled by the caller) and, when ``../shared`` has
    them, the ``papers-more`` papers'. ``{name: (engine, papers)}``."""
    import bench_verify as bv
    from episteme.config import load_settings
    from episteme.query.chat import QueryEngine

    wikis = {"dev": dev_wiki}
    if sorted(bv.MORE.glob("*.pdf")):
        wikis["papers-more"] = ensure_written_wiki(bv.more_wiki())
        ensure_sentence_vectors(wikis["papers-more"])
    out = {}
    for name, wiki in wikis.items():
        engine = QueryEngine(load_settings(wiki, env={}, dotenv=None))
        engine.chat("warm up the engine", mode="offline")
        with engine.tracer.locked_store() as store:
            papers = {r[0] for r in store.conn.execute("SELECT id FROM papers")}
        out[name] = (engine, papers)
    return out


def set_run(engines: dict, path: Path, causes: bool = False) -> dict | None:
    """Ask every question of the file ``path`` on the wiki holding its paper: per question,
    whether the answer holds a gold sentence and whether it abstained."""
    if not path.is_file():
        return None
    items = [it for it in load_items(path)
             if any(it["paper"] in papers for _e, papers in engines.values())]
    rows = []
    for it in items:
        res = engine_of(engines, it).chat(it["question"], mode="offline")
        sents = ([c["sentence"] for c in res.get("citations") or []] if not res.get("abstained")
                 else [])
        rows.append({"id": it["id"], "paper": it["paper"], "supported": not it.get("unsupported"),
                     "type": it.get("type"),
                     "hit": hit(res["answer"], it["gold_quotes"]) if it["gold_quotes"] else None,
                     "abstained": bool(res.get("abstained")), "answer": res["answer"],
                     "words": len(re.sub(r"\[sec_\d+\]", "", res["answer"]).split()),
                     "min_sentence_words": min((len(s.split()) for s in sents), default=None)})
    out: dict = {"rows": rows, "file": path.name, "causes": None}
    if causes:
        out["causes"] = {}
        for engine, papers in engines.values():
            for k, v in miss_causes(engine, [it for it in items if it["paper"] in papers]).items():
                out["causes"][k] = out["causes"].get(k, 0) + v
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
        prods = ex.get("candidate_products") or [None] * len(cands)
        out.append({"id": it["id"], "paper": it["paper"], "candidates": [
            {"parts": {k: v for k, v in c.items() if isinstance(v, float) and k not in
                       ("score", "evidence", "qa")},
             "prod": p, "evidence": c["evidence"], "gold": hit(c["text"], it["gold_quotes"])}
            for c, p in zip(cands, prods, strict=True)]})
    return out


#: L2 on the answer metric's weights (the products are not standardised: each is of the order
#: of 1 after METRIC_SCALE). Chosen by the 8-fold CV of the ranking alone on the training
#: sets: 0.1, 0.3, 1, 3 gave gold-in-top-3 sums of 91, 96, 92, 88 of 134 (no metric: 87).
METRIC_L2 = 0.3


def fit_weights(dump: list[dict], papers: set[str], *, l2: float = 0.1,
                steps: int = 3000) -> dict[str, float]:
    """The linear ranking alone (no answer metric): :func:`fit_ranking`'s weights."""
    return fit_ranking(dump, papers, l2=l2, metric_l2=None, steps=steps)[0]


def fit_ranking(dump: list[dict], papers: set[str], *, l2: float = 0.1,
                metric_l2: float | None = METRIC_L2,
                steps: int = 3000) -> tuple[dict[str, float], list[float] | None]:
    """Pairwise logistic ranking over each question's candidates: every (gold, non-gold)
    pair of a question should score the gold one higher; the loss is the mean softplus of
    the margins (a question weighs the same however many candidates it has, times its
    ``weight`` when it has one), plus L2 on standardised features; Adam, full batch; fitted
    on the questions of ``papers`` only.  Pairwise rather than listwise: in 5-fold CV by paper
    it put the gold sentence in the top 3 as often or more, and it does not let one easy
    question's gold dominate (RESULTS).
    With ``metric_l2`` and candidates carrying their centred products (``prod``), the answer
    metric is fitted jointly: one more weight per embedding dimension on
    ``METRIC_SCALE * prod`` (not standardised), L2 ``metric_l2``.
    The weights are then scaled so that a question's top scores spread like the evidence
    scale (what :data:`MARGIN`, :data:`REDUNDANCY` and :data:`LENGTH_COST` are set in).
    Returns the feature weights and the metric's (None without products)."""
    import numpy as np
    from episteme.query.answer_params import FEATURES, METRIC_SCALE

    qs = [q for q in dump if q["paper"] in papers and any(c["gold"] for c in q["candidates"])]
    X = [np.asarray([[c["parts"].get(f, 0.0) for f in FEATURES] for c in q["candidates"]])
         for q in qs]
    Y = [np.asarray([c["gold"] for c in q["candidates"]], dtype=bool) for q in qs]
    allx = np.vstack(X)
    mu, sd = allx.mean(axis=0), allx.std(axis=0) + 1e-9
    nf = len(FEATURES)
    dim = next((len(c["prod"]) for q in qs for c in q["candidates"]
                if c.get("prod") is not None), 0) if metric_l2 is not None else 0
    Z = []
    for q, x in zip(qs, X, strict=True):
        z = (x - mu) / sd
        if dim:
            p = np.asarray([c["prod"] if c.get("prod") is not None else np.zeros(dim)
                            for c in q["candidates"]], dtype=np.float64) * METRIC_SCALE
            z = np.hstack([z, p])
        Z.append(z)
    pairs = [(z[y], z[~y]) for z, y in zip(Z, Y, strict=True)]
    qw = [float(q.get("weight", 1.0)) for q in qs]  # a question's share of the loss
    total_w = sum(qw) or 1.0
    lam = np.r_[np.full(nf, l2), np.full(dim, metric_l2 or 0.0)]
    w = np.zeros(nf + dim)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, steps + 1):
        g = 2 * lam * w
        for (xg, xn), wq in zip(pairs, qw, strict=True):
            d = (xg @ w)[:, None] - (xn @ w)[None, :]
            s = 1.0 / (1.0 + np.exp(np.clip(d, -30, 30)))  # -d softplus(-d) / d d
            s *= wq / (s.size * total_w)
            g -= s.sum(axis=1) @ xg - s.sum(axis=0) @ xn
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= 0.05 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    wf, wm = w[:nf] / sd, w[nf:]
    spread_ev, spread_w = [], []
    for q, x, z in zip(qs, X, Z, strict=True):
        score = x @ wf + (z[:, nf:] @ wm if dim else 0.0)
        spread_w.append(float(np.std(np.sort(score)[::-1][:12])))
        ev = np.asarray([c["evidence"] for c in q["candidates"]])
        spread_ev.append(float(np.std(np.sort(ev)[::-1][:12])))
    scale = statistics.median(spread_ev) / (statistics.median(spread_w) or 1.0)
    weights = {f: round(float(v * scale), 4) for f, v in zip(FEATURES, wf, strict=True)}
    return weights, ([float(v * scale) for v in wm] if dim else None)


def candidate_score(c: dict, weights: dict[str, float], metric: list[float] | None) -> float:
    """A dumped candidate's ranking score under ``weights`` and ``metric`` (as the answerer
    computes it: the linear features plus ``METRIC_SCALE * metric . prod``)."""
    from episteme.query.answer_params import METRIC_SCALE

    score = sum(weights.get(f, 0.0) * v for f, v in c["parts"].items())
    if metric is not None and c.get("prod") is not None:
        score += METRIC_SCALE * float(sum(a * b for a, b in zip(metric, c["prod"], strict=True)))
    return score


def top_k_rate(dump: list[dict], papers: set[str], weights: dict[str, float], k: int = 3,
               metric: list[float] | None = None) -> float:
    """Share of the questions of ``papers`` whose gold sentence ranks in the top ``k`` (a
    quick proxy; the real figure runs the whole answerer)."""
    qs = [q for q in dump if q["paper"] in papers]
    n = 0
    for q in qs:
        ranked = sorted(q["candidates"], key=lambda c: -candidate_score(c, weights, metric))
        n += any(c["gold"] for c in ranked[:k])
    return n / max(1, len(qs))


def folds_by_paper(items: list[dict], k: int = 5) -> list[set[str]]:
    papers = sorted({it["paper"] for it in items if it.get("paper")})
    return [set(papers[i::k]) for i in range(k)]


def answer_hits(engines, items: list[dict], weights: dict[str, float],
                metric: list[float] | None = None) -> dict[str, bool]:
    """Run the whole offline answerer with ``weights`` and ``metric`` on ``items`` (each on
    the engine of its paper's wiki, :func:`engine_of`): id -> holds gold."""
    out = {}
    for it in items:
        engine = engine_of(engines, it)
        engine.offline.weights = dict(weights)
        engine.offline.metric = tuple(metric) if metric is not None else None
        res = engine.chat(it["question"], mode="offline")
        out[it["id"]] = hit(res["answer"], it["gold_quotes"])
    return out


def engine_of(engines: dict, item: dict):
    """The engine whose wiki holds ``item``'s paper: ``engines`` maps a wiki name to
    ``(engine, papers)``."""
    for engine, papers in engines.values():
        if item["paper"] in papers:
            return engine
    raise KeyError(f"no wiki holds {item['paper']}")


def training_sets() -> dict[str, list[dict]]:
    """The supported questions the ranking is fitted on, by file: :data:`GOLD` (dev papers),
    :data:`HELDOUT` (papers-more) and :data:`TRAIN` (both), those that exist."""
    out = {}
    for name, path in (("dev_trace", GOLD), ("answer_heldout", HELDOUT), ("answer_train", TRAIN),
                       ("answer_train2", TRAIN2)):
        if path.is_file():
            out[name] = [it for it in load_items(path)
                         if not it.get("unsupported") and it.get("gold_quotes")]
    return out


def save_metric(metric: list[float]) -> Path:
    """Write the fitted answer metric where the answerer loads it from, for the default
    embedding model (max-abs scaled to 1 with the scale kept, 6 significant digits)."""
    from episteme.query.answer_params import METRIC_FILE
    from episteme.stores.embedding import DEFAULT_MODEL

    top = max(abs(x) for x in metric) or 1.0
    data = {"model": DEFAULT_MODEL, "dim": len(metric), "scale": float(f"{top:.6g}"),
            "fitted": "benchmarks/bench_answer.py --fit --save-metric (RESULTS-answer.md)",
            "weights": [float(f"{x / top:.6g}") for x in metric]}
    METRIC_FILE.write_text(json.dumps(data) + "\n", encoding="utf-8")
    return METRIC_FILE


def fit_report(engines: dict, sets: dict[str, list[dict]], folds: int = 8,
               metric_l2: float | None = METRIC_L2) -> dict:
    """Fit the ranking on every training question, and cross-validate it by paper: the
    papers of all the sets fall into ``folds`` folds; for each, the weights are fitted on
    the other papers' questions and the fold's questions are answered by the whole pipeline.
    The final weights (the shipped ``WEIGHTS``) are fitted on all of them; their
    out-of-sample figures are the CV and :data:`TEST` (never fitted on)."""
    items = [it for rows in sets.values() for it in rows]
    dump = []
    for _name, (engine, papers) in engines.items():
        dump += features_dump(engine, [it for it in items if it["paper"] in papers])
    hits: dict[str, bool] = {}
    fold_rows = []
    for fold in folds_by_paper(items, folds):
        train = {it["paper"] for it in items} - fold
        wf, mf = fit_ranking(dump, train, metric_l2=metric_l2)
        fh = answer_hits(engines, [it for it in items if it["paper"] in fold], wf, mf)
        hits.update(fh)
        fold_rows.append({"papers": sorted(fold), "hits": sum(fh.values()), "n": len(fh),
                          "proxy_top3": top_k_rate(dump, fold, wf, metric=mf)})
    w_all, m_all = fit_ranking(dump, {it["paper"] for it in items}, metric_l2=metric_l2)
    for engine, _papers in engines.values():
        engine.offline.weights = dict(w_all)
        engine.offline.metric = tuple(m_all) if m_all is not None else None
    cv = {name: (sum(hits[it["id"]] for it in rows), len(rows)) for name, rows in sets.items()}
    return {"weights": w_all, "metric": m_all, "metric_l2": metric_l2, "folds": fold_rows,
            "cv": cv, "cv_hits": hits, "sets": {name: len(rows) for name, rows in sets.items()}}


def apply_fit(engine, fit: dict | None) -> None:
    """Give ``engine``'s answerer the fitted weights and metric (no-op without a fit)."""
    if fit:
        engine.offline.weights = dict(fit["weights"])
        engine.offline.metric = tuple(fit["metric"]) if fit.get("metric") else None


def run(wiki: Path, explain: bool, fit: dict | None = None) -> dict:
    from episteme.config import load_settings
    from episteme.query.answer import extractive_answer
    from episteme.query.chat import QueryEngine

    settings = load_settings(wiki, env={}, dotenv=None)
    engine = QueryEngine(settings)
    items = load_items()
    engine.chat("warm up the engine", mode="offline")
    apply_fit(engine, fit)
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
    apply_fit(base, fit)
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
    parts = {"all 40 (in-sample: fitted on)": sup}
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
        sets = ", ".join(f"`{k}` {v}" for k, v in fit["sets"].items())
        lines += [
            "", f"Ranking weights (pairwise logistic, L2; `--fit`): fitted on {n} supported "
            f"questions over {sum(len(f['papers']) for f in fit['folds'])} papers ({sets}): the "
            "shipped `WEIGHTS`, so every figure on those questions is in-sample. Out of sample: "
            f"cross-validation, {len(fit['folds'])} folds by paper (weights fitted on the other "
            "papers' questions, the fold's questions answered by the whole pipeline), and the "
            "test set below.", "",
            "| fold (held-out papers) | answer holds a gold sentence | gold in top 3 (ranking "
            "alone) |", "|---|---|---|"]
        for f in fit["folds"]:
            lines.append(f"| {', '.join(p.split('_')[0] for p in f['papers'])} | "
                         f"{f['hits']}/{f['n']} | {f['proxy_top3']:.3f} |")
        lines += [f"| **CV by paper, all {n}** | **{total / max(1, n):.3f} ({total}/{n})** | - |"]
        lines += [f"| … of which `{k}` | {h / max(1, m):.3f} ({h}/{m}) | |"
                  for k, (h, m) in fit["cv"].items()]
        lines += ["", "Weights: " + ", ".join(f"{k} {v:+.3f}" for k, v in fit["weights"].items())
                  + "."]
    for key, title in (("test", "**Test set** (`benchmarks/answer_test.jsonl`: written blind over "
                        "all 16 papers by someone who never ran the answerer; never fitted on, "
                        "nothing chosen on it)"),
                       ("heldout", "`benchmarks/answer_heldout.jsonl` (papers-more; the held-out "
                        "set of sessions 6-8, a training set since session 9: in-sample "
                        "when `--fit` fitted on it)")):
        ho = data.get(key)
        if not ho:
            continue
        hs = [r for r in ho["rows"] if r["supported"]]
        hu = [r for r in ho["rows"] if not r["supported"]]
        hw = [r["words"] for r in hs if not r["abstained"]]
        hm = [r["min_sentence_words"] for r in hs if r["min_sentence_words"] is not None]
        dev_p = {r["paper"] for r in rows}
        lines += [
            "", f"{title}: {len(hs)} questions and {len(hu)} unanswerable ones.", "",
            "| measure | value |", "|---|---|",
            f"| answer holds a gold sentence | {rate(hs, 'hit')} |",
            f"| … on the dev papers | {rate([r for r in hs if r['paper'] in dev_p], 'hit')} |",
            f"| … on the papers-more papers | "
            f"{rate([r for r in hs if r['paper'] not in dev_p], 'hit')} |",
            f"| supported questions answered 'not covered' | {rate(hs, 'abstained')} |",
            f"| unanswerable questions abstained | {rate(hu, 'abstained')} |",
            f"| median answer words | {statistics.median(hw) if hw else '-'} |",
            f"| shortest answer sentence (words) | {min(hm) if hm else '-'} |"]
        if ho.get("causes"):
            kinds = ("hit", "ranked low", "dropped", "not a candidate", "filtered",
                     "paper not retrieved")
            lines += ["", "| where the gold sentence is lost | questions |", "|---|---|"]
            lines += [f"| {k} | {ho['causes'].get(k, 0)} |" for k in kinds]
        lines += ["", "| id | paper | holds gold | words | answer (first 120 chars) |",
                  "|---|---|---|---|---|"]
        for r in ho["rows"]:
            mark = "-" if r["hit"] is None else ("✓" if r["hit"] else "✗")
            ans = " ".join(r["answer"].split())[:120].replace("|", "/")
            lines.append(f"| {r['id']} | {r['paper'].split('_')[0]} | {mark} | {r['words']} | {ans} |")
    if data.get("causes"):
        kinds = ("hit", "ranked low", "dropped", "not a candidate", "filtered",
                 "paper not retrieved")
        lines += ["", "Where the gold sentence is lost (`--causes`), dev 40:", "",
                  "| cause | questions |", "|---|---|"]
        lines += [f"| {k} | {data['causes'].get(k, 0)} |" for k in kinds]
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
                    help="also tabulate where each missed gold sentence is lost")
    ap.add_argument("--no-heldout", action="store_true",
                    help="skip the question sets beyond dev_trace (answer_heldout, answer_test)")
    ap.add_argument("--growth", type=Path, metavar="WIKI",
                    help="also time warm chat on this (large) wiki, e.g. a copy of level-300")
    ap.add_argument("--fit", action="store_true",
                    help="fit the ranking weights on every training set and cross-validate by "
                         "paper (8 folds); the run then uses the fitted weights")
    ap.add_argument("--no-metric", action="store_true",
                    help="with --fit: fit the linear ranking alone, without the answer metric")
    ap.add_argument("--save-metric", action="store_true",
                    help="with --fit: write the fitted metric to episteme/data/answer_metric.json")
    args = ap.parse_args()
    wiki = ensure_written_wiki(ensure_wiki())
    backfilled = ensure_sentence_vectors(wiki)
    print(f"sentence vectors backfilled: {backfilled}", file=sys.stderr)
    engines = open_engines(wiki) if (args.fit or not args.no_heldout) else {}
    fit = None
    if args.fit:
        fit = fit_report(engines, training_sets(),
                         metric_l2=None if args.no_metric else METRIC_L2)
        print(json.dumps({k: v for k, v in fit.items() if k != "metric"}, indent=1),
              file=sys.stderr)
        if args.save_metric and fit.get("metric"):
            save_metric(fit["metric"])
    data = run(wiki, args.explain, fit)
    data["backfill"] = backfilled
    data["fit"] = fit
    if not args.no_heldout:
        data["test"] = set_run(engines, TEST, causes=args.causes)
        data["heldout"] = set_run(engines, HELDOUT, causes=args.causes)
    for engine, _papers in engines.values():
        engine.close()
    if args.causes:
        from episteme.config import load_settings
        from episteme.query.chat import QueryEngine

        engine = QueryEngine(load_settings(wiki, env={}, dotenv=None))
        apply_fit(engine, fit)
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
