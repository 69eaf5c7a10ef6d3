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
sys.path.insert(0, str(REPO / "plugin"))
sys.path.insert(0, str(REPO / "benchmarks"))
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared")).resolve()
GOLD = SHARED / "data" / "gold" / "dev_verify.jsonl"
UNANSWERABLE = REPO / "benchmarks" / "unanswerable_questions.jsonl"

from bench_trace import ensure_wiki, ensure_written_wiki, evaluate_retrieval, overlaps  # noqa: E402
from episteme.config import load_settings  # noqa: E402
from episteme.query.trace import Tracer, split_claims  # noqa: E402
from episteme.query.verify import EVIDENCE_K, NUMBER_TOPIC_COVER, TOPIC_COVER, Verifier  # noqa: E402

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

    verifier = Verifier(in_scope=lambda name: tracer.names_in_scope(name, None),
                        threshold=SUPPORT_THRESHOLD, topic_cover=topic, number_topic_cover=number)
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
        "top passage gold (true claims)": rate(true, lambda r: r["top_gold"]),
    }
    for kind in ("number", "entity", "comparison", "negation", "unsupported"):
        out[f"false rejected: {kind}"] = rate([r for r in false if r["kind"] == kind],
                                              lambda r: r["verdict"] != "supported")
    for kind in ("number", "comparison", "negation", "method"):
        out[f"true kept: {kind}"] = rate([r for r in true if r["kind"] == kind],
                                         lambda r: r["verdict"] == "supported")
    return out


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
    return {"warm_ms": statistics.median(warm) * 1000, "warm_max_ms": max(warm) * 1000,
            "base_ms": statistics.median(base) * 1000,
            "cold_s": statistics.median(cold)}


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

    un = top_rel(UNANSWERABLE)
    ans = top_rel(REPO / "benchmarks" / "retrieval_questions.jsonl")

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
            "un": sorted(un), "ans": sorted(ans)}


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
    args = ap.parse_args()
    items = load()
    wiki = ensure_wiki()
    tracer = Tracer(load_settings(wiki, env={}, dotenv=None))
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
                   f"{sp['warm_ms'] / sp['base_ms']:.2f}x. Cold `trace.py` process: median {sp['cold_s']:.2f} s. "
                   f"Load average at the end {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (other helpers' "
                   "work on the same 2 cores): absolute times are inflated accordingly.\n")
    text = "\n".join(out) + "\n"
    print(text)
    if args.write:
        (REPO / "benchmarks" / "RESULTS-verify.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
