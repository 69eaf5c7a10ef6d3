#!/usr/bin/env python3
"""Claim-verification benchmark on ../shared/data/gold/dev_verify.jsonl (+ abstention).

With the 10 dev papers ingested (the wiki ``bench_trace.py`` builds and caches), every claim is
traced alone with the scope = every ingested paper — as a user piping one sentence to
``trace.py`` — and its ``verdict`` compared with the gold label:

* **true kept**: supported claims whose verdict is ``supported``;
* **false rejected**: contradicted or unsupported claims whose verdict is not ``supported``
  (per kind of edit: number, entity, comparison, negation, and the plausible-but-absent ones);
* **contradicted called contradicted**: contradicted claims whose verdict is ``contradicted``;
* **top passage gold**: true claims whose first cited passage overlaps a gold quote (6 shared
  words after normalising case, whitespace and hyphenation, as bench_trace does).

The verifier's two topic-share thresholds (``TOPIC_COVER``, ``NUMBER_TOPIC_COVER``) were set
by hand before this benchmark existed; to show what fitting them would buy and cost, the same
figures are given for the grid choice fitted on all data (in-sample) and 5-fold
cross-validated by paper (each fold's thresholds chosen on the other 8 papers).

Abstention: ``benchmarks/unanswerable_questions.jsonl`` (questions over the dev papers that
they do not answer, written for this benchmark) through ``retrieve``: answered "not covered"
when ``covered`` is false; the 50 retrieval questions keep their recall@5.

Speed: a 5-claim answer traced warm in process and as a cold ``trace.py`` process.

Usage: ``.venv/bin/python benchmarks/bench_verify.py [--write]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLUGIN = Path(os.environ.get("EPISTEME_BENCH_PLUGIN", REPO / "plugin"))
sys.path.insert(0, str(PLUGIN))
sys.path.insert(0, str(REPO / "benchmarks"))
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared")).resolve()
GOLD = SHARED / "data" / "gold" / "dev_verify.jsonl"
UNANSWERABLE = REPO / "benchmarks" / "unanswerable_questions.jsonl"

from bench_trace import ensure_wiki, ensure_written_wiki, evaluate_retrieval, overlaps  # noqa: E402
from episteme.config import load_settings  # noqa: E402
from episteme.query import verify as _verify_mod  # noqa: E402
from episteme.query.trace import Tracer, split_claims  # noqa: E402
from episteme.query.verify import EVIDENCE_K, NUMBER_TOPIC_COVER, TOPIC_COVER, Verifier  # noqa: E402

VerifyTuning = getattr(_verify_mod, "VerifyTuning", None)  # None in older code (--reference)

FOLDS = 5
GRID_TOPIC = (0.4, 0.5, 0.6, 0.7)
GRID_NUMBER = (0.3, 0.45, 0.6)


def load() -> list[dict]:
    return [json.loads(x) for x in GOLD.read_text(encoding="utf-8").splitlines() if x.strip()]


def candidates(tracer: Tracer, items: list[dict]) -> list[tuple[list[dict], float]]:
    """Each claim's ranked passages and support, computed once (the verifier is re-run on them
    for every threshold setting)."""
    out = []
    for it in items:
        claims = [c.text for c in split_claims(it["claim"])[0]]
        pool = tracer.score_pool(claims[:1], None)
        out.append((pool.candidates(0, EVIDENCE_K), pool.support(0)))
    return out


def run(tracer: Tracer, items: list[dict], cands, topic: float, number: float) -> list[dict]:
    from episteme.query.trace import SUPPORT_THRESHOLD

    kw = dict(in_scope=lambda name: tracer.names_in_scope(name, None), threshold=SUPPORT_THRESHOLD,
              grid_of=tracer.table_grid)
    try:
        verifier = Verifier(**kw, tuning=VerifyTuning(topic_cover=topic, number_topic_cover=number))
    except TypeError:  # older code (--reference): the thresholds as keywords
        verifier = Verifier(**kw, topic_cover=topic, number_topic_cover=number)
    res = []
    for it, (hits, support) in zip(items, cands, strict=True):
        v = verifier.verify(it["claim"], hits, support=support)
        order = v["order"] + [i for i in range(len(hits)) if i not in v["order"]]
        top = hits[order[0]]["text"] if hits else ""
        res.append({"id": it["id"], "paper": it["paper"], "label": it["label"], "kind": it["kind"],
                    "verdict": v["verdict"], "reason": v["reason"],
                    "top_gold": any(overlaps(top, q) for q in it["gold_quotes"])})
    return res


def measures(rows: list[dict]) -> dict:
    def rate(sel, ok):
        sel = list(sel)
        return (sum(ok(r) for r in sel) / len(sel), len(sel)) if sel else (float("nan"), 0)

    true = [r for r in rows if r["label"] == "supported"]
    false = [r for r in rows if r["label"] != "supported"]
    contra = [r for r in rows if r["label"] == "contradicted"]
    out = {
        "true kept": rate(true, lambda r: r["verdict"] == "supported"),
        "false rejected": rate(false, lambda r: r["verdict"] != "supported"),
        "contradicted called contradicted": rate(contra, lambda r: r["verdict"] == "contradicted"),
        # precision of the red mark: of the claims called contradicted, the share that are false
        "red mark right": rate([r for r in rows if r["verdict"] == "contradicted"],
                               lambda r: r["label"] != "supported"),
        "top passage gold (true claims)": rate(true, lambda r: r["top_gold"]),
    }
    extra = [k for k in ("setting", "direction") if any(r["kind"] == k for r in false)]
    for kind in ("number", "entity", "comparison", "negation", "unsupported", *extra):
        out[f"false rejected: {kind}"] = rate([r for r in false if r["kind"] == kind],
                                              lambda r: r["verdict"] != "supported")
    for kind in ("number", "comparison", "negation", "method"):
        out[f"true kept: {kind}"] = rate([r for r in true if r["kind"] == kind],
                                         lambda r: r["verdict"] == "supported")
    return out


#: The papers whose misses were read while building the table / language-pair / specificity
#: rules of session 4 ("tuned"); the other half is reported apart ("held out" as far as those
#: rules go — earlier sessions' rules were built on all ten).
TUNED_PAPERS = ("attention_1706.03762v5.pdf", "bert_1810.04805v2.pdf", "citesee_2302.07302v1.pdf",
                "s2orc_acl2020.pdf", "resnet_1512.03385v1.pdf")
HELDOUT = REPO / "benchmarks" / "verify_heldout.jsonl"
PARAPHRASES = REPO / "benchmarks" / "paraphrase_questions.jsonl"
MORE = SHARED / "data" / "papers-more"


HELDOUT2 = REPO / "benchmarks" / "verify_heldout2.jsonl"


def papers_wiki(papers: list[Path], tag: str) -> Path:
    """A wiki of ``papers`` ingested once into the bench cache (keyed by their names and bytes)."""
    import bench_trace as bt

    target = bt.CACHE / f"{tag}-{bt.papers_key(papers)}"
    if not (target / "ingest.json").is_file():
        build = bt.CACHE / f".build-{tag}-{os.getpid()}"
        build.mkdir(parents=True, exist_ok=True)
        print(f"ingesting {len(papers)} {tag} papers into {target} (once)...", file=sys.stderr)
        proc = subprocess.run([sys.executable, "-m", "episteme.cli", "ingest", *map(str, papers),
                               "--wiki", str(build / "wiki"), "--no-progress"],
                              capture_output=True, text=True, cwd=REPO)
        if proc.returncode != 0:
            raise SystemExit(f"ingest failed:\n{proc.stderr}")
        (build / "ingest.json").write_text(proc.stdout, encoding="utf-8")
        os.replace(build, target)
    return target / "wiki"


#: Where ``benchmarks/papers/restore.py`` (corpus branch) puts the collected papers.
CORPUS_PAPERS = Path(os.environ.get("EPISTEME_PAPERS", Path.home() / ".cache" / "episteme" / "papers"))


def corpus(path: Path) -> list[dict]:
    """Claims over collected papers of other fields (``verify_corpus.jsonl``: written by hand
    on unseen prose, never read while building the rules), each traced alone with scope = the
    file's papers, as ``run`` does for dev_verify.  The papers come from :data:`CORPUS_PAPERS`."""
    items = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    names = sorted({it["paper"] for it in items})
    missing = [n for n in names if not (CORPUS_PAPERS / n).is_file()]
    if missing:
        raise SystemExit(f"corpus papers missing in {CORPUS_PAPERS}: {', '.join(missing)} "
                         "(run benchmarks/papers/restore.py of the corpus branch)")
    wiki = papers_wiki([CORPUS_PAPERS / n for n in names], "corpus")
    tracer = Tracer(load_settings(wiki, env={}, dotenv=None))
    cands = candidates(tracer, items)
    for it in items:
        it.setdefault("gold_quotes", [])
    return run(tracer, items, cands, TOPIC_COVER, NUMBER_TOPIC_COVER)


def more_wiki() -> Path:
    """The ingested ``papers-more`` wiki (built once into the bench cache)."""
    import bench_trace as bt

    papers = sorted(MORE.glob("*.pdf"))
    target = bt.CACHE / f"more-{bt.papers_key(papers)}"
    if not (target / "ingest.json").is_file():
        build = bt.CACHE / f".build-more-{os.getpid()}"
        build.mkdir(parents=True, exist_ok=True)
        print(f"ingesting {len(papers)} papers-more into {target} (once)...", file=sys.stderr)
        proc = subprocess.run([sys.executable, "-m", "episteme.cli", "ingest", *map(str, papers),
                               "--wiki", str(build / "wiki"), "--no-progress"],
                              capture_output=True, text=True, cwd=REPO)
        if proc.returncode != 0:
            raise SystemExit(f"ingest failed:\n{proc.stderr}")
        (build / "ingest.json").write_text(proc.stdout, encoding="utf-8")
        os.replace(build, target)
    return target / "wiki"


def heldout_rates(rows: list[dict]) -> dict:
    """True kept, false rejected and false called contradicted over traced held-out rows."""
    true = [r for r in rows if r["label"] == "supported"]
    false = [r for r in rows if r["label"] != "supported"]
    return {"true_kept": sum(r["verdict"] == "supported" for r in true) / len(true),
            "false_rejected": sum(r["verdict"] != "supported" for r in false) / len(false),
            "contradicted": sum(r["verdict"] == "contradicted" for r in false) / len(false),
            "n_true": len(true), "n_false": len(false), "rows": rows}


def heldout_tables(dev_tracer: Tracer | None = None) -> dict | None:
    """``benchmarks/verify_heldout2.jsonl``: claims written (session 5) from tables of the dev
    papers that dev_verify does not use and of papers-more tables the first held-out set does not
    use, half true, half with a row or column name swapped; each traced alone with scope = the
    claim's paper set (the 10 dev papers, or the 6 papers-more).  Measured once before and once
    after the x-position table reading; never tuned on."""
    if not HELDOUT2.is_file() or not MORE.is_dir():
        return None
    tracers = {"papers": dev_tracer or Tracer(load_settings(ensure_wiki(), env={}, dotenv=None)),
               "papers-more": Tracer(load_settings(more_wiki(), env={}, dotenv=None))}
    rows = []
    for x in HELDOUT2.read_text(encoding="utf-8").splitlines():
        if x.strip():
            it = json.loads(x)
            c = tracers[it["set"]].trace(it["claim"])["claims"][0]
            rows.append({**it, "verdict": c["verdict"], "code": c["reason"]["code"],
                         "why": c["reason"]["text"]})
    return heldout_rates(rows)


def heldout_more() -> dict | None:
    """Entity-swap claims written for this benchmark over ``papers-more`` (6 papers of other
    fields and layouts, never read while building the verifier), traced with scope = those
    papers.  First measured before any rule was changed after reading them."""
    if not HELDOUT.is_file() or not MORE.is_dir():
        return None
    tracer = Tracer(load_settings(more_wiki(), env={}, dotenv=None))
    rows = []
    for x in HELDOUT.read_text(encoding="utf-8").splitlines():
        if x.strip():
            it = json.loads(x)
            c = tracer.trace(it["claim"])["claims"][0]
            rows.append({**it, "verdict": c["verdict"], "code": c["reason"]["code"],
                         "why": c["reason"]["text"]})
    return heldout_rates(rows)


def objective(rows: list[dict]) -> float:
    m = measures(rows)
    return m["true kept"][0] + m["false rejected"][0] + 0.5 * m["contradicted called contradicted"][0]


def cross_validate(tracer, items, cands) -> tuple[list[dict], list[tuple[float, float]]]:
    papers = sorted({it["paper"] for it in items})
    fold_of = {p: i % FOLDS for i, p in enumerate(papers)}
    grid = {g: run(tracer, items, cands, *g) for g in itertools.product(GRID_TOPIC, GRID_NUMBER)}
    test_rows: list[dict] = []
    chosen = []
    for f in range(FOLDS):
        def score(g, f=f):
            return objective([r for r in grid[g] if fold_of[r["paper"]] != f])
        g = max(grid, key=lambda g: (score(g), -abs(g[0] - TOPIC_COVER) - abs(g[1] - NUMBER_TOPIC_COVER)))
        chosen.append(g)
        test_rows.extend(r for r in grid[g] if fold_of[r["paper"]] == f)
    best_all = max(grid, key=lambda g: (objective(grid[g]),
                                        -abs(g[0] - TOPIC_COVER) - abs(g[1] - NUMBER_TOPIC_COVER)))
    return test_rows, chosen + [best_all], grid


SPEED_ANSWER = (
    "The big Transformer scored 28.4 BLEU on the English-German WMT 2014 test. Training it took "
    "3.5 days on eight P100 GPUs. BERT-LARGE reaches 60.5 on CoLA. Adversarial nets were trained "
    "with dropout in the discriminator. ResNet-152 has lower complexity than VGG-16."
)


def speed(tracer: Tracer, wiki: Path) -> dict:
    tracer.trace(SPEED_ANSWER)
    warm, base = [], []
    for i in range(15):
        text = SPEED_ANSWER + f" Run {i} took place."
        t = time.perf_counter()
        tracer.trace(text)
        warm.append(time.perf_counter() - t)
        # baseline in the same run: the similarity tracer's own work (embed, pool, rank), no verdicts
        t = time.perf_counter()
        tracer.score_pool([c.text for c in split_claims(text + " Base.")[0]], None).ranked(limit=3)
        base.append(time.perf_counter() - t)
    cold = []
    for _ in range(3):
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, str(REPO / "plugin" / "scripts" / "trace.py"), "--wiki",
                               str(wiki), "--answer", SPEED_ANSWER], capture_output=True, text=True)
        cold.append(time.perf_counter() - t)
        if proc.returncode != 0:
            raise SystemExit(f"trace.py failed: {proc.stderr}")
    # this code and the reference alternately, twice each (the box's load drifts within minutes)
    rounds, refs = [], []
    for _ in range(2):
        rounds.append(warm_measures(tracer))
        r = reference_speed(wiki)
        if r:
            refs.append(r)
    wm = {k: statistics.median(x[k] for x in rounds) for k in rounds[0]}
    ref = {k: (statistics.median(x[k] for x in refs) if k != "path" else refs[0][k]) for k in refs[0]} \
        if refs else None
    embed = []
    for i in range(9):
        t = time.perf_counter()
        tracer.embedder.encode([f"{x} (embedding check {i})" for x in SPEED_ANSWER.split(". ")])
        embed.append(time.perf_counter() - t)
    return {"warm_ms": statistics.median(warm) * 1000, "warm_max_ms": max(warm) * 1000,
            "base_ms": statistics.median(base) * 1000, "fresh_ms": wm["fresh_ms"],
            "fresh_cpu_ms": wm.get("fresh_cpu_ms", float("nan")),
            "warm_alt_ms": wm["warm_ms"], "embed_ms": statistics.median(embed) * 1000,
            "cold_s": statistics.median(cold), "ref": ref}


def warm_measures(tracer: Tracer) -> dict:
    """Warm 5-claim traces: one claim new per trace (the others repeat, as when a server
    re-traces an edited answer), and every claim new."""
    tracer.trace(SPEED_ANSWER)
    rep, fresh, fresh_cpu = [], [], []
    for i in range(9):
        t = time.perf_counter()
        tracer.trace(SPEED_ANSWER + f" Run {i} took place.")
        rep.append(time.perf_counter() - t)
        text = " ".join(f"{x.rstrip('.')} in trial {i}." for x in SPEED_ANSWER.split(". "))
        t, c = time.perf_counter(), time.process_time()
        tracer.trace(text)
        fresh.append(time.perf_counter() - t)
        fresh_cpu.append(time.process_time() - c)
    return {"warm_ms": statistics.median(rep) * 1000, "fresh_ms": statistics.median(fresh) * 1000,
            "fresh_cpu_ms": statistics.median(fresh_cpu) * 1000}


def reference_speed(wiki: Path) -> dict | None:
    """The same measures with another checkout's code (``--reference PLUGIN_DIR``, e.g. the
    main branch before this work), in the same run: speed as a ratio on a noisy box."""
    ref = os.environ.get("EPISTEME_REF_PLUGIN")
    if not ref:
        return None
    env = {**os.environ, "EPISTEME_BENCH_PLUGIN": ref, "PYTHONPATH": ref}
    out = json.loads(subprocess.run([sys.executable, __file__, "--speed-json"], capture_output=True,
                                    text=True, env=env, check=True).stdout)
    cold = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, str(Path(ref) / "scripts" / "trace.py"), "--wiki", str(wiki),
                        "--answer", SPEED_ANSWER], capture_output=True, text=True, env=env, check=True)
        cold.append(time.perf_counter() - t)
    return {**out, "cold_s": statistics.median(cold), "path": ref}


def abstention(written: Path) -> dict | None:
    """Max section relevance per question, for the unanswerable questions and the answerable
    retrieval questions; "not covered" = no section reaches the threshold.  The threshold is
    shown as shipped, fitted on all questions (Youden's J) and 5-fold cross-validated."""
    if not UNANSWERABLE.is_file():
        return None
    from episteme.query.retrieve import COVERED_THRESHOLD, Retriever

    settings = load_settings(written, env={}, dotenv=None)
    retriever = Retriever(settings)
    retriever.refresh()

    def top_rel(path: Path) -> list[float]:
        qs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        out = []
        for q in qs:
            r = retriever.retrieve(q["question"], k=5, refresh=False)
            out.append(max((s["relevance"] for s in r["sections"]), default=0.0))
        return out

    import dataclasses

    import episteme.query.retrieve as R

    shipped = retriever
    # the weighting before session 4: every absent term in full, no name factor
    retriever = Retriever(settings, index=shipped.index, tuning=dataclasses.replace(
        R.DEFAULT_TUNING, absent_word_weight=1.0, name_floor=1.0))
    before = {k: top_rel(p) for k, p in (("un", UNANSWERABLE), ("para", PARAPHRASES),
              ("ans", REPO / "benchmarks" / "retrieval_questions.jsonl"))}
    retriever = shipped
    un = top_rel(UNANSWERABLE)
    ans = top_rel(REPO / "benchmarks" / "retrieval_questions.jsonl")
    para = top_rel(PARAPHRASES)

    def rates(t, u, a):
        return sum(x < t for x in u) / len(u), sum(x >= t for x in a) / len(a)

    def fit(u, a):
        cands = sorted(set(u) | set(a))
        mids = [(x + y) / 2 for x, y in zip(cands, cands[1:], strict=False)] or [COVERED_THRESHOLD]
        return max(mids, key=lambda t: (sum(rates(t, u, a)), -abs(t - COVERED_THRESHOLD)))

    t_fit = fit(un, ans)
    cv_u, cv_a, ts = [], [], []
    for f in range(FOLDS):
        t = fit([x for i, x in enumerate(un) if i % FOLDS != f], [x for i, x in enumerate(ans) if i % FOLDS != f])
        ts.append(t)
        cv_u += [x < t for i, x in enumerate(un) if i % FOLDS == f]
        cv_a += [x >= t for i, x in enumerate(ans) if i % FOLDS == f]
    rv = evaluate_retrieval(written)
    return {"n": len(un), "n_answerable": len(ans), "shipped": (COVERED_THRESHOLD, *rates(COVERED_THRESHOLD, un, ans)),
            "fitted": (t_fit, *rates(t_fit, un, ans)),
            "cv": (ts, sum(cv_u) / len(cv_u), sum(cv_a) / len(cv_a)),
            "recall@5": rv["metrics"]["fused"]["recall@5"],
            "un": sorted(un), "ans": sorted(ans), "para": sorted(para),
            "para_covered": sum(x >= COVERED_THRESHOLD for x in para) / len(para),
            "before": {k: (sum(x < COVERED_THRESHOLD for x in v) / len(v) if k == "un" else
                           sum(x >= COVERED_THRESHOLD for x in v) / len(v)) for k, v in before.items()},
            "weights": (R.DEFAULT_TUNING.absent_word_weight, R.DEFAULT_TUNING.name_floor)}


def dev_trace(tracer: Tracer, wiki: Path) -> dict:
    """``dev_trace.jsonl`` (answers, not single claims) through the verifier: passage ranking
    as bench_trace measures it, and how the verdicts flag whole answers."""
    import bench_trace as bt

    sup, uns = bt.load_items()
    ev = bt.evaluate_supported(tracer, sup, wiki)

    def verdicts(items):
        return [[c["verdict"] for c in tracer.trace(it["answer"])["claims"]] for it in items]

    vs, vu = verdicts(sup), verdicts(uns)

    def flag(v):
        return sum(x != "supported" for x in v) * 2 >= len(v)

    return {"ranks": ev["ranks"]["ours"], "n_sup": len(sup), "n_uns": len(uns),
            "uns_flagged": sum(map(flag, vu)) / len(vu),
            "sup_claims_rejected": sum(x != "supported" for v in vs for x in v) / sum(map(len, vs)),
            "sup_answers_flagged": sum(map(flag, vs)) / len(vs)}


def self_consistency(dev_tracer: Tracer, sample: int = 300, seed: int = 7) -> dict:
    """Every stored sentence verified as a claim against its own passage: a passage cannot
    contradict what it says itself, so anything but ``supported`` is a misreading by one of the
    checks.  Over the 10 dev papers and the 6 papers-more, prose sentences (6 words or more, not
    table text) and table text apart; with the checks alone (``verbatim=False``: the quote rule
    off) and as shipped.  Then ``sample`` prose sentences (drawn with ``seed``) traced as a user
    would (retrieval over their paper set, the K best passages, the support threshold)."""
    import random
    from collections import Counter

    from episteme.query.trace import SUPPORT_THRESHOLD
    from episteme.query.verify import sentence_spans, tabular

    tracers = {"papers": dev_tracer}
    if MORE.is_dir():
        tracers["papers-more"] = Tracer(load_settings(more_wiki(), env={}, dotenv=None))
    out: dict = {"sets": list(tracers)}
    prose: list[tuple[str, str]] = []  # (set, sentence) for the traced sample
    for kind in ("prose", "table"):
        for mode in ("checks", "shipped"):
            out[(kind, mode)] = {"n": 0, "not": Counter(), "examples": []}
    t0 = time.perf_counter()
    for name, tr in tracers.items():
        ids = [r[0] for r in tr.store.conn.execute("SELECT id FROM passages ORDER BY id")]
        ps = tr._passages(ids)
        vs = {mode: _verifier(tr, None, mode) for mode in ("checks", "shipped")}
        for pid in ids:
            p = {**ps[pid], "score": 1.0}
            for a, b in sentence_spans(p["text"]):
                sent = p["text"][a:b].strip()
                if len(sent.split()) < 6:
                    continue
                kind = "table" if tabular(sent) else "prose"
                if kind == "prose":
                    prose.append((name, sent))
                for mode, v in vs.items():
                    r = v.verify(sent, [p])
                    rec = out[(kind, mode)]
                    rec["n"] += 1
                    if r["verdict"] != "supported":
                        rec["not"][f"{r['verdict']}/{r['reason']['code']}"] += 1
                        rec["examples"].append((pid, r["reason"]["text"], sent))
    out["own_s"] = time.perf_counter() - t0
    rng = random.Random(seed)
    picked = rng.sample(prose, min(sample, len(prose)))
    for mode in ("checks", "shipped"):
        traced = {"n": 0, "not": Counter(), "examples": []}
        for name in tracers:
            tr = tracers[name]
            v = _verifier(tr, SUPPORT_THRESHOLD, mode)
            for _set, sent in (x for x in picked if x[0] == name):
                pool = tr.score_pool([sent], None)
                r = v.verify(sent, pool.candidates(0, EVIDENCE_K), support=pool.support(0))
                traced["n"] += 1
                if r["verdict"] != "supported":
                    traced["not"][f"{r['verdict']}/{r['reason']['code']}"] += 1
                    traced["examples"].append((name, r["reason"]["text"], sent))
        out[("traced", mode)] = traced
    return out


def _verifier(tr: Tracer, threshold: float | None, mode: str) -> Verifier:
    """The tracer's verifier, with the quote rule (``shipped``) or without it (``checks``);
    older code (``EPISTEME_BENCH_PLUGIN`` = a checkout before the rule) has no rule to turn off."""
    kw = dict(in_scope=lambda n: tr.names_in_scope(n, None), threshold=threshold,
              grid_of=tr.table_grid)
    try:
        return Verifier(**kw, verbatim=mode == "shipped")
    except TypeError:
        return Verifier(**kw)


def self_consistency_lines(sc: dict) -> list[str]:
    def why(rec):
        return ", ".join(f"{k} {c}" for k, c in rec["not"].most_common()) or "—"

    out = ["## Self-consistency: every stored sentence against its own passage\n",
           "Each sentence of every stored passage (" + " and ".join(f"`{s}`" for s in sc["sets"])
           + ": the 10 dev papers and the 6 papers-more), verified as a claim against its own "
           "passage alone: a passage cannot contradict itself, so every one must come out "
           "supported. **checks alone** = the quote rule off (`Verifier(verbatim=False)`: what the "
           "number, name, binding, table, negation and comparison checks make of a sentence the "
           "passage states); **shipped** = with it (a claim copying a sentence, or a clause-aligned "
           f"part of one, is supported). {sc['own_s']:.0f} s for all of it.\n",
           "| sentences | n | not supported, checks alone | why | not supported, shipped |",
           "|---|---|---|---|---|"]
    for kind, label in (("prose", "prose (6+ words)"), ("table", "table text (6+ words)")):
        c, s = sc[(kind, "checks")], sc[(kind, "shipped")]
        out.append(f"| {label} | {c['n']} | {sum(c['not'].values())} | {why(c)} | "
                   f"{sum(s['not'].values())} |")
    tc, ts = sc[("traced", "checks")], sc[("traced", "shipped")]
    out.append("")
    out.append(f"Through retrieval (as a user tracing the sentence: scope = its paper set, the "
               f"{EVIDENCE_K} best passages, the support threshold), a random sample of {tc['n']} prose "
               f"sentences: not supported {sum(tc['not'].values())} with the checks alone ({why(tc)}), "
               f"{sum(ts['not'].values())} shipped ({why(ts)}).\n")
    ex = sc[("prose", "checks")]["examples"][:6] + tc["examples"][:6]
    if ex:
        out.append("Left with the checks alone (first few): " + "; ".join(
            f"`{p}` “{x[:90]}” ({w[:70]})" for p, w, x in ex) + ".\n")
    return out


def table(title: str, cols: list[tuple[str, dict]]) -> list[str]:
    out = [f"### {title}\n", "| measure | " + " | ".join(c for c, _ in cols) + " | n |",
           "|---|" + "---|" * (len(cols) + 1)]
    for key in cols[0][1]:
        vals = " | ".join(f"{m[key][0]:.3f}" for _, m in cols)
        out.append(f"| {key} | {vals} | {cols[0][1][key][1]} |")
    return out + [""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write benchmarks/RESULTS-verify.md")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--quick", action="store_true", help="shipped thresholds only, print misses")
    ap.add_argument("--heldout", action="store_true", help="only the held-out table sets, per claim")
    ap.add_argument("--corpus", metavar="JSONL", default=None,
                    help="only the claims of this file over collected papers (verify_corpus.jsonl), per claim")
    ap.add_argument("--corpus-tuned", metavar="PAPERS", default=None,
                    help="with --corpus: the papers whose misses were read (comma-separated), measured apart")
    ap.add_argument("--self-consistency", action="store_true",
                    help="only the self-consistency scan (every stored sentence against its passage)")
    ap.add_argument("--speed-json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--reference", metavar="PLUGIN_DIR",
                    help="also time another checkout's plugin/ (e.g. ../main/plugin) in the same run")
    args = ap.parse_args()
    if args.reference:
        os.environ["EPISTEME_REF_PLUGIN"] = str(Path(args.reference).resolve())
    if args.corpus:
        rows = corpus(Path(args.corpus))
        for r in rows:
            ok = (r["verdict"] == "supported") == (r["label"] == "supported")
            if not ok or (r["label"] == "contradicted" and r["verdict"] != "contradicted"):
                print(f"{'MISS' if not ok else 'weak'} {r['id']:38} {r['label']:12} {r['kind']:11} -> "
                      f"{r['verdict']:12} {r['reason']['code']}: {r['reason']['text'][:90]}")
        for k, (v, n) in measures(rows).items():
            print(f"{k:40} {v:.3f} (n={n})")
        if args.corpus_tuned:
            tuned = set(args.corpus_tuned.split(","))
            for name, part in (("tuned half", [r for r in rows if r["paper"] in tuned]),
                               ("other half", [r for r in rows if r["paper"] not in tuned])):
                m = measures(part)
                print(f"{name}: " + ", ".join(f"{k} {m[k][0]:.3f} (n={m[k][1]})" for k in (
                    "true kept", "false rejected", "contradicted called contradicted", "red mark right")))
        return 0
    wiki = ensure_wiki()
    tracer = Tracer(load_settings(wiki, env={}, dotenv=None))
    if args.heldout:
        for name, res in (("verify_heldout.jsonl", heldout_more()),
                          ("verify_heldout2.jsonl", heldout_tables(tracer))):
            if not res:
                continue
            for r in res["rows"]:
                ok = (r["verdict"] == "supported") == (r["label"] == "supported")
                print(f"{'ok  ' if ok else 'MISS'} {r['id']} {r['label']:12} -> {r['verdict']:12} "
                      f"{r['code']}: {r.get('why', '')[:80]} | {r['claim'][:70]}")
            print(f"{name}: true kept {res['true_kept']:.3f} (n={res['n_true']}), swaps rejected "
                  f"{res['false_rejected']:.3f}, called contradicted {res['contradicted']:.3f} "
                  f"(n={res['n_false']})")
        return 0
    if args.self_consistency:
        sc = self_consistency(tracer)
        print("\n".join(self_consistency_lines(sc)))
        for kind, mode in (("prose", "checks"), ("table", "checks")):
            for pid, why, sent in sc[(kind, mode)]["examples"]:
                print(f"{kind:5} {pid}: {why[:90]} | {sent[:160]}")
        for name, why, sent in sc[("traced", "checks")]["examples"] + sc[("traced", "shipped")]["examples"]:
            print(f"traced {name}: {why[:90]} | {sent[:160]}")
        return 0
    if args.speed_json:
        print(json.dumps(warm_measures(tracer)))
        return 0
    items = load()
    t0 = time.perf_counter()
    cands = candidates(tracer, items)
    shipped = run(tracer, items, cands, TOPIC_COVER, NUMBER_TOPIC_COVER)
    eval_s = time.perf_counter() - t0
    if args.quick:
        for r in shipped:
            ok = (r["verdict"] == "supported") == (r["label"] == "supported")
            if not ok or (r["label"] == "contradicted" and r["verdict"] != "contradicted"):
                print(f"{'MISS' if not ok else 'weak'} {r['id']:34} {r['label']:12} {r['kind']:11} -> "
                      f"{r['verdict']:12} {r['reason']['code']}: {r['reason']['text'][:90]}")
        for k, (v, n) in measures(shipped).items():
            print(f"{k:40} {v:.3f} (n={n})")
        return 0
    cv_rows, chosen, grid = cross_validate(tracer, items, cands)
    best = chosen[-1]
    out = ["# Claim verification benchmark\n"]
    out.append(f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: {os.cpu_count()} cores, "
               f"Python {platform.python_version()}, shared with other work (load average "
               f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}). Data: "
               f"`../shared/data/gold/dev_verify.jsonl` ({len(items)} claims over 10 papers); each claim "
               f"traced alone, scope = all 10 ingested papers. Retrieval + verification of all claims: "
               f"{eval_s:.1f} s.\n")
    out.append("## Verdicts vs gold\n")
    out.append("Columns: **shipped** = the thresholds in `verify.py`; "
               f"**fitted in-sample** = the grid choice best on all 90 claims (topic {best[0]}, number "
               f"{best[1]}); **5-fold CV** = each fold's claims verified with the thresholds best on the other "
               f"folds (by paper; chosen: {', '.join(f'{a}/{b}' for a, b in chosen[:-1])}).\n")
    out.append("Honestly: the verifier's rules were developed while reading this set's misses, so every "
               "column is in-sample as far as the rules go; the cross-validation covers only the two "
               "topic-share thresholds (the only fitted numbers). The `dev_trace` section below (its "
               "false rejections were read once, late, and prompted the “than” rule, verbs of absence and "
               "hedged rounding) is a partly held-out check; the hidden set is the fair test.\n")
    out += table("All claims", [("shipped", measures(shipped)), ("fitted in-sample", measures(grid[best])),
                                ("5-fold CV", measures(cv_rows))])
    tuned = [r for r in shipped if r["paper"] in TUNED_PAPERS]
    held = [r for r in shipped if r["paper"] not in TUNED_PAPERS]
    out.append("Split by paper (shipped): **tuned** = the 5 papers whose misses were read while "
               "building this session's rules (line-laid table columns, language pairs by code, "
               "value specificity, table row labels): " + ", ".join(f"`{p}`" for p in TUNED_PAPERS)
               + "; **other half** = the other 5 (number misses of four of them were seen once, when a "
               "looser anchoring rule broke them — that sets the specificity floor of 4 digits).\n")
    out += table("By paper half", [("tuned half", measures(tuned)), ("other half", measures(held)),
                                   ("all", measures(shipped))])
    hm = heldout_more()
    if hm:
        out.append("### Held-out entity swaps on other papers\n")
        out.append(f"`benchmarks/verify_heldout.jsonl`: {hm['n_true']} true claims and {hm['n_false']} "
                   "with a swapped row or column name (dataset, tool, compound, gene, parameter), written for "
                   "this benchmark from the tables of the 6 `papers-more` papers (IR, security, biology, "
                   "distributed systems), scope = those papers. First measurement (session 4), before reading "
                   "any miss: true kept 10/11, swaps rejected 4/11; session 4 then fixed the one true-claim miss "
                   "and left 7 swaps; session 5 built the x-position table reading (`pdf/tablegrid.py`) while "
                   "reading those 7: this set is development data now.\n")
        out.append("| measure | value |\n|---|---|")
        out.append(f"| true kept | {hm['true_kept']:.3f} |")
        out.append(f"| swapped rejected | {hm['false_rejected']:.3f} |")
        out.append(f"| swapped called contradicted | {hm['contradicted']:.3f} |\n")
        miss = [r for r in hm["rows"] if (r["verdict"] == "supported") != (r["label"] == "supported")]
        if miss:
            out.append("Misses: " + "; ".join(f"`{r['id']}` {r['claim']} → {r['verdict']}" for r in miss)
                       + ".\n")
    h2 = heldout_tables(tracer)
    if h2:
        out.append("### Held-out table swaps, second set (session 5)\n")
        out.append(f"`benchmarks/verify_heldout2.jsonl`: {h2['n_true']} true claims and {h2['n_false']} with a "
                   "swapped row or column name, written before the table-grid work from 16 tables nobody had "
                   "read closely (dev papers' tables that dev_verify does not use: BERT, ResNet, PaSa, S2ORC; "
                   "papers-more tables the first set does not use: graph-of-word, wheat, epidemics); scope = "
                   "the claim's paper set. **Before** = measured once before any change (commit "
                   "`verify_heldout2.jsonl: 32 table claims`); **first after** = once with the grid's first "
                   "form (its misses were seen: two general corrections followed, a header over the label "
                   "column never names a value's column, and a column the claim names for one of its values "
                   "does not count against another — so **now** is not fully held out); **now** = this run.\n")
        out.append("| measure | before | first after | now |\n|---|---|---|---|")
        out.append(f"| true kept | 0.750 | 0.750 | {h2['true_kept']:.3f} |")
        out.append(f"| swapped rejected | 0.625 | 0.812 | {h2['false_rejected']:.3f} |")
        out.append(f"| swapped called contradicted | 0.625 | 0.812 | {h2['contradicted']:.3f} |\n")
        miss = [r for r in h2["rows"] if (r["verdict"] == "supported") != (r["label"] == "supported")]
        if miss:
            out.append("Misses now: " + "; ".join(f"`{r['id']}` {r['claim']} → {r['verdict']} ({r['code']})"
                                                  for r in miss) + ".\n")
    out.append("### Reasons given (shipped)\n")
    out.append("| gold label | verdict | count | reason codes |")
    out.append("|---|---|---|---|")
    from collections import Counter
    cells = Counter((r["label"], r["verdict"]) for r in shipped)
    for (lab, ver), n in sorted(cells.items()):
        codes = Counter(r["reason"]["code"] for r in shipped if r["label"] == lab and r["verdict"] == ver)
        out.append(f"| {lab} | {ver} | {n} | {', '.join(f'{c} {k}' for c, k in codes.most_common())} |")
    out.append("")
    misses = [r for r in shipped if (r["verdict"] == "supported") != (r["label"] == "supported")]
    if misses:
        out.append("Misses (shipped): " + "; ".join(
            f"`{r['id']}` {r['label']}/{r['kind']} → {r['verdict']} ({r['reason']['code']})" for r in misses)
            + ".\n")
    out += self_consistency_lines(self_consistency(tracer))
    dt = dev_trace(tracer, wiki)
    out.append("## dev_trace.jsonl through the verifier\n")
    out.append(f"{dt['n_sup']} supported answers (several paraphrased claims each) and {dt['n_uns']} unsupported "
               "answers (gold + `benchmarks/trace_unsupported.jsonl`), scope = all papers. Nothing was fitted "
               "on these.\n")
    out.append("| measure | value |\n|---|---|")
    out.append(f"| answer → passage hit@1 / hit@3 / MRR | {dt['ranks']['hit@1']:.3f} / {dt['ranks']['hit@3']:.3f} / "
               f"{dt['ranks']['MRR']:.3f} |")
    out.append(f"| unsupported answers flagged (half or more claims not supported) | {dt['uns_flagged']:.3f} |")
    out.append(f"| claims of supported answers rejected | {dt['sup_claims_rejected']:.3f} |")
    out.append(f"| supported answers flagged | {dt['sup_answers_flagged']:.3f} |\n")
    ab = abstention(ensure_written_wiki(wiki))
    if ab:
        out.append("## Abstention\n")
        out.append(f"{ab['n']} unanswerable questions over the dev papers' subjects "
                   "(`benchmarks/unanswerable_questions.jsonl`, written for this benchmark: 6 near-topic, "
                   f"14 off-topic) and the {ab['n_answerable']} answerable retrieval questions, through "
                   "`retrieve` on the extractive wiki of the 10 papers. A question is answered \"not covered\" "
                   "when no retrieved section's `relevance` reaches the threshold (then `chat` says so and "
                   "names the closest topics).\n")
        out.append("| threshold | unanswerable → not covered | answerable still covered |\n|---|---|---|")
        t, u, a = ab["shipped"]
        out.append(f"| {t:.3f} (shipped) | {u:.3f} | {a:.3f} |")
        t, u, a = ab["fitted"]
        out.append(f"| {t:.3f} (fitted on all, in-sample) | {u:.3f} | {a:.3f} |")
        ts, u, a = ab["cv"]
        out.append(f"| 5-fold CV (thresholds {', '.join(f'{x:.3f}' for x in ts)}) | {u:.3f} | {a:.3f} |\n")
        bf = ab["before"]
        out.append(f"Relevance weighting (session 4): an absent ordinary word weighs "
                   f"{ab['weights'][0]} of its IDF, an absent name (by form) in full, and a section lacking "
                   f"a question's name (unless its page names it) is scaled by {ab['weights'][1]} + "
                   f"{1 - ab['weights'][1]:.1f} × the share of the names it has. "
                   f"Paraphrased answerable questions (`benchmarks/paraphrase_questions.jsonl`, 20 written "
                   "for this benchmark to avoid the papers' words) covered, at the shipped threshold:\n")
        out.append("| weighting | unanswerable → not covered | answerable covered | paraphrases covered |")
        out.append("|---|---|---|---|")
        out.append(f"| before (all absent terms in full) | {bf['un']:.3f} | {bf['ans']:.3f} | {bf['para']:.3f} |")
        out.append(f"| shipped | {ab['shipped'][1]:.3f} | {ab['shipped'][2]:.3f} | {ab['para_covered']:.3f} |\n")
        out.append("The two weights were chosen on a small grid over these three sets (in-sample; the "
                   "threshold's cross-validation above does not cover them). The demo wiki's question "
                   "\"Why should a whole section never be embedded as one vector?\" (not in any set) goes "
                   "from 0.29 (not covered) to 0.53 (covered); the stemmer now reads \"embeddings\" and "
                   "\"embedded\" alike.\n")
        out.append(f"Retrieval recall@5 on the 50 questions (ranking unchanged by the signal): "
                   f"{ab['recall@5']:.3f}. Top relevance, unanswerable: "
                   f"{', '.join(f'{x:.2f}' for x in ab['un'])}; answerable (lowest 10): "
                   f"{', '.join(f'{x:.2f}' for x in ab['ans'][:10])}.\n")
    if not args.no_speed:
        sp = speed(tracer, wiki)
        out.append("## Speed (5-claim answer, scope = all 10 papers)\n")
        out.append(f"Warm in-process `Tracer.trace` (verification included): median {sp['warm_ms']:.0f} ms "
                   f"(max {sp['warm_max_ms']:.0f} ms), against {sp['base_ms']:.0f} ms for the similarity "
                   f"tracer's own work in the same run (embed + pool + rank, no verdicts): "
                   f"{sp['warm_ms'] / sp['base_ms']:.2f}x; every claim new (no cached claim vector): "
                   f"{sp['fresh_ms']:.0f} ms ({sp['fresh_cpu_ms']:.0f} ms CPU), of which embedding the claims "
                   f"alone takes {sp['embed_ms']:.0f} ms. "
                   f"Cold `trace.py` process: median {sp['cold_s']:.2f} s. "
                   f"Load average at the end {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (other helpers' "
                   "work on the same 2 cores): absolute times are inflated accordingly.\n")
        ref = sp.get("ref")
        if ref:
            out.append(f"Same run, reference code `{ref['path']}` (main, before this change): warm "
                       f"{ref['warm_ms']:.0f} ms, every claim new {ref['fresh_ms']:.0f} ms, cold "
                       f"{ref['cold_s']:.2f} s; this code in the rounds alternating with it: warm "
                       f"{sp['warm_alt_ms']:.0f} ms, every claim new {sp['fresh_ms']:.0f} ms. Ratios (this / "
                       f"reference): warm {sp['warm_alt_ms'] / ref['warm_ms']:.2f}x, all-new "
                       f"{sp['fresh_ms'] / ref['fresh_ms']:.2f}x, "
                       f"cold {sp['cold_s'] / ref['cold_s']:.2f}x.\n")
    text = "\n".join(out) + "\n"
    print(text)
    if args.write:
        (REPO / "benchmarks" / "RESULTS-verify.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
