#!/usr/bin/env python3
"""Source-tracing benchmark on ../shared/data/gold/dev_trace.jsonl (+ our unsupported answers).

With all 10 real papers ingested (cached under /tmp, keyed by the papers' sha256, so reruns
skip the ingest), for every supported gold item the whole answer is traced with the scope = all
ingested papers, and we measure, in the same run:

* **ours**: the tracer (claims → dense + BM25 candidates → per-claim support score); the
  answer-level order of the pooled passages (``Pool.answer_order``).
* **seed**: the seed's method: one vector for the whole answer against one vector per whole
  paper section (the model reads the first 256 word pieces of each section).
* **bm25**: plain FTS5 BM25 over passages with the whole answer as the query.
* ablations: whole-answer dense over passages; ours with cosine only / coverage only.

A passage (or section) *hits* when it shares a run of 6 words with a gold quote after
normalising case, whitespace and hyphenation.  hit@1, hit@3 and MRR (rank cut at 20) per
answer; per claim: whether each claim's top passage hits.

Unsupported detection: every claim's support (its best passage's score); a claim below the
threshold is unsupported; an answer counts as flagged when at least half of its claims are.
The threshold is calibrated on this data by one stated rule (maximise flagged-unsupported rate
minus falsely-flagged-supported-claim rate, i.e. Youden's J) and, to show how far that
overfits, the same rule is cross-validated (5 folds by paper; our unsupported items spread
over the folds).

Speed: ``plugin/scripts/trace.py`` as a cold process on a 3-sentence answer, and a warm
in-process ``Tracer.trace``.

Usage: ``.venv/bin/python benchmarks/bench_trace.py [--write]`` (``--write`` updates
benchmarks/RESULTS-trace.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared")).resolve()
GOLD = SHARED / "data" / "gold" / "dev_trace.jsonl"
PAPERS = SHARED / "data" / "papers"
EXTRA_UNSUPPORTED = REPO / "benchmarks" / "trace_unsupported.jsonl"
RETRIEVAL_QUESTIONS = REPO / "benchmarks" / "retrieval_questions.jsonl"
CACHE = Path(os.environ.get("EPISTEME_BENCH_CACHE", "/tmp/episteme-bench-trace"))
RANK_CUT = 20

from episteme.config import load_settings  # noqa: E402
from episteme.query.trace import SUPPORT_THRESHOLD, Tracer, split_claims  # noqa: E402

# ----------------------------------------------------------------------------- the stores


def papers_key(papers: list[Path]) -> str:
    h = hashlib.sha256()
    for p in papers:
        h.update(p.name.encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


def ensure_wiki() -> Path:
    """A wiki with all papers ingested, built once per set of papers (sha256) under /tmp."""
    papers = sorted(PAPERS.glob("*.pdf"))
    target = CACHE / f"papers-{papers_key(papers)}"
    if not (target / "ingest.json").is_file():
        build = CACHE / f".build-{os.getpid()}"
        build.mkdir(parents=True, exist_ok=True)
        print(f"ingesting {len(papers)} papers into {target} (once)...", file=sys.stderr)
        proc = subprocess.run(
            [sys.executable, "-m", "episteme.cli", "ingest", *map(str, papers),
             "--wiki", str(build / "wiki"), "--no-progress"],
            capture_output=True, text=True, cwd=REPO,
            env={k: v for k, v in os.environ.items()
                 if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT")},
        )
        if proc.returncode != 0:
            raise SystemExit(f"ingest failed:\n{proc.stderr}")
        (build / "ingest.json").write_text(proc.stdout, encoding="utf-8")
        os.replace(build, target)
    return target / "wiki"


def ensure_written_wiki(papers_wiki: Path) -> Path:
    """The papers wiki plus pages written by the extractive writer (fixed date), cached by the
    papers and the writer's source, so the retrieval questions always meet the same wiki."""
    import datetime as dt
    import shutil

    h = hashlib.sha256(papers_wiki.parent.name.encode())
    pkg = REPO / "plugin" / "episteme"
    # every module of the paper -> wiki compiler (roles and key terms choose what is quoted),
    # and the wiki files it writes through
    for src in sorted(pkg.glob("compile/*.py")) + [pkg / "wiki" / "edit.py", pkg / "wiki" / "sections.py"]:
        if src.is_file():
            h.update(src.name.encode() + src.read_bytes())
    target = CACHE / f"written-{h.hexdigest()[:16]}"
    if not (target / "done").is_file():
        from episteme.compile.writer import write_paper
        from episteme.stores.sqlite import Store

        build = CACHE / f".written-{os.getpid()}"
        shutil.rmtree(build, ignore_errors=True)
        shutil.copytree(papers_wiki, build / "wiki",
                        ignore=shutil.ignore_patterns("trace_vectors", "wiki_index.db*", "tmp"))
        settings = load_settings(build / "wiki", env={}, dotenv=None)
        with Store(settings.sqlite_path, readonly=True) as st:
            ids = [p["id"] for p in st.papers()]
        print(f"writing the extractive wiki for {len(ids)} papers (once)...", file=sys.stderr)
        for pid in ids:
            write_paper(settings, pid, writer="extractive", today=dt.date(2026, 11, 29))
        (build / "done").write_text("ok\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(build, target)
    return target / "wiki"


def evaluate_retrieval(wiki: Path) -> dict:
    """recall@k of the questions' target sections (matched by paper + section title)."""
    from episteme.query.retrieve import Retriever

    settings = load_settings(wiki, env={}, dotenv=None)
    retriever = Retriever(settings)
    retriever.refresh()
    index = retriever.index
    sections = index.get(index.ids())
    questions = [json.loads(line) for line in RETRIEVAL_QUESTIONS.read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    ranks = {"fused": [], "lexical": [], "semantic": []}
    missing = []
    times = []
    for q in questions:
        titles = {t.lower() for t in q["target_titles"]}
        targets = {sid for sid, s in sections.items()
                   if q["paper"] in s["sources"] and s["title"].lower() in titles}
        if not targets:
            missing.append(q["id"])
            continue
        t = time.perf_counter()
        fused = [s["id"] for s in retriever.retrieve(q["question"], k=10, refresh=False)["sections"]]
        times.append(time.perf_counter() - t)
        lex = [sid for sid, _ in index.lexical(q["question"], 10)]
        sem = [sid for sid, _ in index.semantic(q["question"], 10)]
        for name, ids in (("fused", fused), ("lexical", lex), ("semantic", sem)):
            ranks[name].append(next((i + 1 for i, sid in enumerate(ids) if sid in targets), None))
    out = {}
    for name, rs in ranks.items():
        n = len(rs)
        out[name] = {f"recall@{k}": sum(r is not None and r <= k for r in rs) / n for k in (1, 3, 5)}
        out[name]["MRR@10"] = sum(1.0 / r for r in rs if r) / n
    return {"metrics": out, "n": len(ranks["fused"]), "missing": missing, "sections": len(sections),
            "median_ms": statistics.median(times) * 1000 if times else None}


# ------------------------------------------------------------------------------- matching


def norm_words(text: str) -> list[str]:
    """Lower case, hyphenation undone (``pre-\\ntrain`` → ``pretrain``), other hyphens split."""
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text or "").lower().replace("-", " ")
    return re.findall(r"[^\W_]+", text)


def overlaps(passage: str, quote: str, n: int = 6) -> bool:
    a, b = norm_words(passage), norm_words(quote)
    grams = {tuple(a[i:i + n]) for i in range(len(a) - n + 1)}
    return any(tuple(b[i:i + n]) in grams for i in range(len(b) - n + 1))


def rank_of(hits: list[bool]) -> int | None:
    for i, h in enumerate(hits[:RANK_CUT]):
        if h:
            return i + 1
    return None


def summarise(ranks: list[int | None]) -> dict:
    n = len(ranks)
    return {
        "hit@1": sum(r == 1 for r in ranks) / n,
        "hit@3": sum(r is not None and r <= 3 for r in ranks) / n,
        "MRR": sum(1.0 / r for r in ranks if r) / n,
    }


# ---------------------------------------------------------------------------- evaluation


def load_items() -> tuple[list[dict], list[dict]]:
    gold = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines() if line.strip()]
    extra = [json.loads(line) for line in EXTRA_UNSUPPORTED.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    supported = [g for g in gold if not g.get("unsupported")]
    unsupported = [g for g in gold if g.get("unsupported")] + [{**e, "unsupported": True} for e in extra]
    return supported, unsupported


def section_vectors(tracer: Tracer, cache_dir: Path):
    """The seed baseline's index: one vector per whole section (cached next to the stores)."""
    path = cache_dir / f"seed_sections.{tracer.embedder.name}.npz"
    rows = tracer.store.conn.execute(
        "SELECT section_id, section_text FROM sections WHERE kind != 'references' ORDER BY section_id"
    ).fetchall()
    if path.is_file():
        z = np.load(path, allow_pickle=False)
        if len(z["ids"]) == len(rows):
            return list(z["ids"]), [r[1] for r in rows], z["vectors"]
    vecs = tracer.embedder.encode([r[1] for r in rows], batch_size=16)
    np.savez(path, ids=np.asarray([r[0] for r in rows]), vectors=vecs)
    return [r[0] for r in rows], [r[1] for r in rows], vecs


def evaluate_supported(tracer: Tracer, items: list[dict], wiki: Path) -> dict:
    sec_ids, sec_texts, sec_vecs = section_vectors(tracer, wiki.parent)
    ranks = {k: [] for k in ("ours", "ours_sources", "seed", "bm25", "dense_answer", "ours_cos_only",
                             "ours_lex_only")}
    claim_hits = {"ours": [], "bm25_claim": []}
    supports = []  # (paper, [claim supports])
    misses = []
    for it in items:
        quotes = it["gold_quotes"]
        claims = [c.text for c in split_claims(it["answer"])[0]]
        pool = tracer.score_pool(claims, None)
        gold_hit = [any(overlaps(pool.info[pid]["text"], q) for q in quotes) for pid in pool.ids]
        order = pool.answer_order()
        r = rank_of([gold_hit[j] for j in order])
        ranks["ours"].append(r)
        if r != 1:
            misses.append((it["id"], r, pool.info[pool.ids[order[0]]]["section"]))
        res = tracer.trace(it["answer"])
        ranks["ours_sources"].append(rank_of([any(overlaps(s["passage"], q) for q in quotes)
                                             for s in res["sources"]]))
        pos = {pid: j for j, pid in enumerate(pool.ids)}
        for ci, cands in enumerate(pool.ranked(limit=1)):
            claim_hits["ours"].append(bool(cands) and gold_hit[pos[cands[0]["id"]]])
            bm = tracer.store.search_passages_fts(claims[ci], limit=1)
            claim_hits["bm25_claim"].append(bool(bm) and any(overlaps(bm[0]["text"], q) for q in quotes))
        supports.append((it["paper"], [pool.support(ci) for ci in range(len(claims))]))
        # ablations over the same pool: one feature at a time
        for name, sc in (("ours_cos_only", pool.sim), ("ours_lex_only", pool.cover)):
            agg = sc.max(axis=0) + sc.mean(axis=0)
            o = np.argsort(-agg, kind="stable")
            ranks[name].append(rank_of([gold_hit[j] for j in o]))
        # seed: whole answer vs whole sections
        av = tracer.embedder.encode([it["answer"]])[0]
        o = np.argsort(-(sec_vecs @ av), kind="stable")
        ranks["seed"].append(rank_of([any(overlaps(sec_texts[j], q) for q in quotes) for j in o[:RANK_CUT]]))
        # plain BM25 over passages, whole answer as the query
        bm = tracer.store.search_passages_fts(it["answer"], limit=RANK_CUT)
        ranks["bm25"].append(rank_of([any(overlaps(p["text"], q) for q in quotes) for p in bm]))
        # dense, whole answer vs passages
        ids_all, matrix = tracer._matrix(None, False)
        o = np.argsort(-(matrix @ av), kind="stable")[:RANK_CUT]
        texts = tracer._passages([ids_all[j] for j in o])
        ranks["dense_answer"].append(rank_of([any(overlaps(texts[ids_all[j]]["text"], q) for q in quotes)
                                              for j in o]))
    return {
        "ranks": {k: summarise(v) for k, v in ranks.items()},
        "claims": {k: sum(v) / len(v) for k, v in claim_hits.items()},
        "n_claims": len(claim_hits["ours"]),
        "supports": supports,
        "misses": misses,
    }


def claim_supports(tracer: Tracer, items: list[dict]) -> list[list[float]]:
    out = []
    for it in items:
        claims = [c.text for c in split_claims(it["answer"])[0]]
        pool = tracer.score_pool(claims, None)
        out.append([pool.support(ci) for ci in range(len(claims))])
    return out


def flagged(supports: list[float], t: float) -> bool:
    """An answer is flagged when at least half of its claims are below the threshold."""
    return sum(s < t for s in supports) * 2 >= len(supports)


def rates(sup: list[list[float]], uns: list[list[float]], t: float) -> tuple[float, float, float, float]:
    sup_claims = [s for ss in sup for s in ss]
    false_flag = sum(s < t for s in sup_claims) / len(sup_claims)
    flag_rate = sum(flagged(u, t) for u in uns) / len(uns)
    any_rate = sum(any(s < t for s in u) for u in uns) / len(uns)
    all_rate = sum(all(s < t for s in u) for u in uns) / len(uns)
    return flag_rate, false_flag, any_rate, all_rate


def calibrate(sup: list[list[float]], uns: list[list[float]]) -> float:
    """Youden's J over candidate thresholds (midpoints between observed supports)."""
    values = sorted({round(s, 4) for ss in sup + uns for s in ss})
    cands = [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)] or [SUPPORT_THRESHOLD]
    best_t, best_j = cands[0], -2.0
    for t in cands:
        fr, ff, _a, _l = rates(sup, uns, t)
        j = fr - ff
        if j > best_j + 1e-9:
            best_t, best_j = t, j
    return best_t


def cross_validate(sup_items: list[tuple[str, list[float]]], uns: list[list[float]], folds: int = 5):
    papers = sorted({p for p, _ in sup_items})
    fold_of = {p: i % folds for i, p in enumerate(papers)}
    flags, falses, ts = [], [], []
    for f in range(folds):
        tr_sup = [s for p, s in sup_items if fold_of[p] != f]
        te_sup = [s for p, s in sup_items if fold_of[p] == f]
        tr_uns = [u for i, u in enumerate(uns) if i % folds != f]
        te_uns = [u for i, u in enumerate(uns) if i % folds == f]
        t = calibrate(tr_sup, tr_uns)
        ts.append(t)
        flags.extend(flagged(u, t) for u in te_uns)
        falses.extend(s < t for ss in te_sup for s in ss)
    return sum(flags) / len(flags), sum(falses) / len(falses), ts


# ----------------------------------------------------------------------------------- speed

SPEED_ANSWER = (
    "The big Transformer scored 28.4 BLEU on the English-German WMT'14 test. Training it required "
    "about 3.5 days using eight P100 GPUs. Self-attention connects all positions with a constant "
    "number of sequential operations."
)


def cold_runs(wiki: Path, n: int = 5) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(REPO / "plugin" / "scripts" / "trace.py"), "--wiki", str(wiki),
             "--answer", SPEED_ANSWER],
            capture_output=True, text=True, cwd=REPO,
        )
        times.append(time.perf_counter() - t)
        if proc.returncode != 0:
            raise SystemExit(f"trace.py failed: {proc.stderr}")
    return times


def warm_runs(tracer: Tracer, n: int = 20) -> tuple[list[float], list[float]]:
    """Wall and process-CPU seconds per warm trace (CPU time is less disturbed by other load
    on a shared machine; onnxruntime's 2 threads can make it exceed the wall time)."""
    tracer.trace(SPEED_ANSWER)
    walls, cpus = [], []
    for i in range(n):
        # vary the text so no cache above the embedder could answer from memory
        t, c = time.perf_counter(), time.process_time()
        tracer.trace(SPEED_ANSWER + f" Run {i} is here.")
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return walls, cpus


# ------------------------------------------------------------------------------------ main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write benchmarks/RESULTS-trace.md")
    ap.add_argument("--no-speed", action="store_true")
    args = ap.parse_args()
    if not GOLD.is_file():
        raise SystemExit(f"gold file not found: {GOLD}")
    wiki = ensure_wiki()
    settings = load_settings(wiki, env={}, dotenv=None)
    tracer = Tracer(settings)
    sup_items, uns_items = load_items()
    t0 = time.perf_counter()
    ev = evaluate_supported(tracer, sup_items, wiki)
    uns = claim_supports(tracer, uns_items)
    eval_s = time.perf_counter() - t0
    sup = [s for _p, s in ev["supports"]]
    t_cal = calibrate(sup, uns)
    fr, ff, fr_any, fr_all = rates(sup, uns, t_cal)
    fr_d, ff_d, _a, _l = rates(sup, uns, SUPPORT_THRESHOLD)
    cv_fr, cv_ff, cv_ts = cross_validate(ev["supports"], uns)
    gold_uns = [i for i, it in enumerate(uns_items) if it["id"].startswith("dev")]
    fr_gold = sum(flagged(uns[i], SUPPORT_THRESHOLD) for i in gold_uns) / max(1, len(gold_uns))

    out = []
    out.append("# Source tracing benchmark\n")
    out.append(f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: {os.cpu_count()} cores "
               f"(nproc {len(os.sched_getaffinity(0))}), Python {platform.python_version()}, load average "
               f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} at the end (the machine is shared). "
               f"Data: `../shared/data/gold/dev_trace.jsonl` ({len(sup_items)} supported items, "
               f"{len(gold_uns)} unsupported) + `benchmarks/trace_unsupported.jsonl` "
               f"({len(uns_items) - len(gold_uns)} unsupported answers written for this benchmark); "
               f"all 10 papers ingested, scope = every ingested paper. Evaluation took {eval_s:.0f} s.\n")
    out.append("## Answer → passage (supported items)\n")
    out.append("| method | hit@1 | hit@3 | MRR |")
    out.append("|---|---|---|---|")
    names = {
        "ours": "**tracer** (claims, dense + BM25 pooled, reranked per claim)",
        "ours_sources": "tracer, first of the `sources` it prints (threshold applied)",
        "bm25": "baseline: BM25 over passages, whole answer as query",
        "seed": "baseline: seed method (answer vector vs whole-section vectors)",
        "dense_answer": "ablation: whole-answer vector vs passage vectors",
        "ours_cos_only": "ablation: tracer pool, cosine only",
        "ours_lex_only": "ablation: tracer pool, IDF coverage only",
    }
    for key, label in names.items():
        m = ev["ranks"][key]
        out.append(f"| {label} | {m['hit@1']:.3f} | {m['hit@3']:.3f} | {m['MRR']:.3f} |")
    out.append("")
    out.append(f"Per claim ({ev['n_claims']} claims): the claim's top passage overlaps a gold quote of its "
               f"item for {ev['claims']['ours']:.3f} of claims (BM25 with the claim as query: "
               f"{ev['claims']['bm25_claim']:.3f}). Claims are not individually labelled: a claim whose "
               "support lies outside the quoted sentences counts as a miss, so this is a lower bound.\n")
    if ev["misses"]:
        out.append("Answer-level misses (rank of the first gold passage; section of our top passage): "
                   + "; ".join(f"{i} (rank {r}, top: {s})" for i, r, s in ev["misses"]) + ".\n")
    out.append("## Unsupported answers\n")
    out.append("A claim is unsupported when its best passage's support score is below the threshold; an "
               "answer is flagged when at least half of its claims are.\n")
    out.append("| threshold | unsupported answers flagged | (any claim / all claims) | supported claims falsely flagged |")
    out.append("|---|---|---|---|")
    out.append(f"| {SUPPORT_THRESHOLD:.3f} (shipped default) | {fr_d:.3f} | | {ff_d:.3f} |")
    out.append(f"| {t_cal:.3f} (Youden J on all data, this run) | {fr:.3f} | {fr_any:.3f} / {fr_all:.3f} | {ff:.3f} |")
    out.append(f"| 5-fold cross-validated (thresholds {', '.join(f'{t:.3f}' for t in cv_ts)}) | {cv_fr:.3f} | | {cv_ff:.3f} |")
    out.append("")
    out.append(f"The 8 unsupported items of the gold file alone, at the shipped threshold: {fr_gold:.3f} flagged.\n")
    out.append("How the numbers were obtained, honestly: the tracer's weights (cosine 1.0, coverage 0.5, run "
               "0.1, answer-level BM25 0.25, summary-section penalty 0.06, coherence prior 0.3) were chosen "
               "on this same dev set from a small grid in which several settings tie, so the tracer rows are "
               "in-sample; the two baselines have no parameters. The shipped threshold is the Youden-J "
               "choice on all of this data, rounded; the cross-validated row (threshold chosen on 4/5 of "
               "the papers and unsupported answers, measured on the rest) is the estimate to quote for "
               "unseen data. The 16 extra unsupported answers were written before any threshold was "
               "computed: 10 are near-topic (related methods the papers do not describe: RoBERTa, Swin, "
               "DCGAN, ...), 6 off-topic.\n")
    sup_all = sorted(s for ss in sup for s in ss)
    uns_all = sorted(s for ss in uns for s in ss)
    out.append(f"Support score distribution: supported claims median {statistics.median(sup_all):.3f} "
               f"(5th pct {sup_all[len(sup_all) // 20]:.3f}); unsupported claims median "
               f"{statistics.median(uns_all):.3f} (95th pct {uns_all[(len(uns_all) * 19) // 20]:.3f}).\n")
    written = ensure_written_wiki(wiki)
    rv = evaluate_retrieval(written)
    out.append("## Retrieval (question → wiki section)\n")
    out.append(f"{rv['n']} questions written for this benchmark (`benchmarks/retrieval_questions.jsonl`), each "
               f"with a known target section (paper + section title), on the wiki the extractive writer makes "
               f"from the 10 papers ({rv['sections']} sections). Median retrieve time {rv['median_ms']:.0f} ms "
               "(warm).\n")
    if rv["missing"]:
        out.append(f"Questions whose target section the writer did not produce: {', '.join(rv['missing'])}.\n")
    out.append("| ranking | recall@1 | recall@3 | recall@5 | MRR@10 |")
    out.append("|---|---|---|---|---|")
    for name, label in (("fused", "**fused** (BM25 + embeddings, RRF)"), ("lexical", "BM25 only"),
                        ("semantic", "embeddings only")):
        m = rv["metrics"][name]
        out.append(f"| {label} | {m['recall@1']:.3f} | {m['recall@3']:.3f} | {m['recall@5']:.3f} | {m['MRR@10']:.3f} |")
    out.append("")
    if not args.no_speed:
        cold = cold_runs(wiki)
        warm, warm_cpu = warm_runs(tracer)
        out.append("## Speed (3-sentence answer, scope = all 10 papers)\n")
        out.append("| | median | min | max |")
        out.append("|---|---|---|---|")
        out.append(f"| `trace.py` cold process | {statistics.median(cold):.2f} s | {min(cold):.2f} s | {max(cold):.2f} s |")
        out.append(f"| warm `Tracer.trace` in process | {statistics.median(warm) * 1000:.0f} ms | "
                   f"{min(warm) * 1000:.0f} ms | {max(warm) * 1000:.0f} ms |")
        out.append(f"| warm, process CPU time per trace | {statistics.median(warm_cpu) * 1000:.0f} ms | "
                   f"{min(warm_cpu) * 1000:.0f} ms | {max(warm_cpu) * 1000:.0f} ms |")
        out.append("")
        out.append(f"Load average after the speed runs: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}.\n")
    text = "\n".join(out) + "\n"
    print(text)
    if args.write:
        (REPO / "benchmarks" / "RESULTS-trace.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
