#!/usr/bin/env python3
"""Ingest speed and memory on this machine (issue 3 targets), printed as markdown.

    .venv/bin/python benchmarks/bench_ingest.py [--runs 3] [--write benchmarks/RESULTS-ingest.md]

- end-to-end ``episteme ingest`` of the 15-page Attention paper in a fresh process and a fresh
  wiki (split + embed + SQLite + Chroma), median of N runs, with the process's peak RSS;
- a cold process embedding one sentence (import + model load + encode), median of N;
- the ONNX embedder vs sentence-transformers on the same passages in the same run (warm, median
  of N) and the largest 1 - cos between their vectors.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAPER = REPO.parent / "shared" / "data" / "papers" / "attention_1706.03762v5.pdf"
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_", "EMBEDDING_"))}


def run_measured(cmd: list[str], env: dict | None = None) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS MiB, stdout, CPU seconds user+sys) of one child process.  CPU
    time is reported too because wall time on this shared machine depends on the neighbours."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env or CLEAN_ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd} failed: {err.read().decode(errors='replace')[-2000:]}")
        cpu = usage.ru_utime + usage.ru_stime
        return wall, usage.ru_maxrss / 1024.0, out.read().decode(), cpu


def bench_ingest(runs: int, engine: str | None = None) -> dict:
    walls, rss, reported, cpus = [], [], [], []
    passages = sections = 0
    env = {**CLEAN_ENV, "EPISTEME_PDF_CHARS": engine} if engine else None
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            wall, peak, stdout, cpu = run_measured(
                [sys.executable, "-m", "episteme.cli", "ingest", str(PAPER), "--wiki",
                 str(Path(tmp) / "wiki"), "--no-progress"], env)
            data = json.loads(stdout)
            walls.append(wall)
            cpus.append(cpu)
            rss.append(peak)
            reported.append(data["seconds"])
            passages, sections = data["passages"], data["sections_indexed"]
    return {"wall": walls, "rss": rss, "inside": reported, "cpu": cpus, "passages": passages,
            "sections": sections}


def bench_stages() -> dict:
    """One in-process ingest split into stages (where the time goes)."""
    from episteme.config import load_settings
    from episteme.pdf.passages import make_passages
    from episteme.pdf.split import split_pdf
    from episteme.stores.embedding import load_embedder

    t0 = time.perf_counter()
    emb = load_embedder()
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = split_pdf(PAPER)
    t_split = time.perf_counter() - t0
    t0 = time.perf_counter()
    texts = [p.text for s in res.sections if s.kind != "references"
             for p in make_passages(s, emb.count_tokens, max_tokens=200)]
    t_chunk = time.perf_counter() - t0
    t0 = time.perf_counter()
    emb.encode(texts)
    t_embed = time.perf_counter() - t0
    from episteme.ingest.pipeline import ingest_paper

    with tempfile.TemporaryDirectory() as tmp:
        s = load_settings(Path(tmp) / "w", env={}, dotenv=None)
        t0 = time.perf_counter()
        ingest_paper(s, PAPER, progress=False, embedder=emb)
        t_all = time.perf_counter() - t0
    return {"model load": t_load, "split": t_split, "passages": t_chunk,
            "embed": t_embed, "whole ingest_paper, warm": t_all, "texts": texts}


def bench_cold_sentence(runs: int) -> tuple[list[float], list[float]]:
    code = ("from episteme.stores.embedding import load_embedder\n"
            "load_embedder().encode(['Attention is all you need.'])\n")
    res = [run_measured([sys.executable, "-c", code]) for _ in range(runs)]
    return [r[0] for r in res], [r[3] for r in res]


def bench_models(texts: list[str], runs: int) -> dict:
    import numpy as np
    from episteme.stores.embedding import SentenceTransformerEmbedder, load_embedder

    onnx = load_embedder()
    t0 = time.perf_counter()
    st = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    st_load = time.perf_counter() - t0
    times: dict[str, list[float]] = {"onnx": [], "st": []}
    cpu: dict[str, list[float]] = {"onnx": [], "st": []}
    vecs = {}
    for _ in range(runs):
        for key, model in (("onnx", onnx), ("st", st)):
            t0, c0 = time.perf_counter(), time.process_time()
            vecs[key] = model.encode(texts, batch_size=32)
            times[key].append(time.perf_counter() - t0)
            cpu[key].append(time.process_time() - c0)
    worst = float((1.0 - (vecs["onnx"] * vecs["st"]).sum(axis=1)).max())
    return {"times": times, "cpu": cpu, "st_load": st_load, "worst": worst, "n": len(texts),
            "same_nn": bool(np.all(np.argmax(vecs["onnx"] @ vecs["onnx"][:5].T, 0)
                                   == np.argmax(vecs["st"] @ vecs["st"][:5].T, 0)))}


LONG = REPO.parent / "shared" / "data" / "papers-more" / "jss_timp_v18i03_2007.pdf"  # 46 pages


def bench_engines(runs: int) -> str:
    """pypdf's visitor vs PDFium's text page as the splitter's character source, in one run
    (interleaved, so the machine's load hits both alike): split CPU/wall of the 15-page
    Attention paper and a 46-page journal report, and end-to-end ``episteme ingest``."""
    from episteme.pdf.split import split_pdf

    engines = ("pypdf", "pdfium")
    split: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(runs):
        for pdf in (PAPER, LONG):
            for eng in engines:
                os.environ["EPISTEME_PDF_CHARS"] = eng
                t0, c0 = time.perf_counter(), time.process_time()
                split_pdf(pdf)
                split.setdefault((pdf.name, eng), []).append(
                    (time.perf_counter() - t0, time.process_time() - c0))
    os.environ.pop("EPISTEME_PDF_CHARS", None)
    ing = {eng: {"wall": [], "cpu": []} for eng in engines}
    for _ in range(runs):
        for eng in engines:
            got = bench_ingest(1, eng)
            ing[eng]["wall"] += got["wall"]
            ing[eng]["cpu"] += got["cpu"]
    med = statistics.median
    rows = ["| measure | pypdf visitor (baseline) | PDFium text page | ratio pypdf / PDFium "
            "(wall; CPU) | target |", "|---|---|---|---|---|"]
    for name, pages, target in ((PAPER.name, 15, ""), (LONG.name, 46, "≤ 5 s")):
        a, b = split[(name, "pypdf")], split[(name, "pdfium")]
        aw, ac = med(x[0] for x in a), med(x[1] for x in a)
        bw, bc = med(x[0] for x in b), med(x[1] for x in b)
        rows.append(f"| `split` {name} ({pages} pages), wall (CPU) | {aw:.2f} s ({ac:.2f} s) | "
                    f"{bw:.2f} s ({bc:.2f} s) | {aw / bw:.2f}×; {ac / bc:.2f}× | {target} |")
    a, b = ing["pypdf"], ing["pdfium"]
    rows.append(f"| `episteme ingest` Attention, fresh process, wall (CPU) | {med(a['wall']):.2f} s "
                f"({med(a['cpu']):.2f} s) | {med(b['wall']):.2f} s ({med(b['cpu']):.2f} s) | "
                f"{med(a['wall']) / med(b['wall']):.2f}×; {med(a['cpu']) / med(b['cpu']):.2f}× "
                "| ≤ 20 s |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", type=Path, default=None, help="also write the table to this file")
    ap.add_argument("--engines", action="store_true",
                    help="only compare the splitter's character sources (pypdf vs PDFium)")
    args = ap.parse_args()
    if not PAPER.exists():
        print(f"missing {PAPER}", file=sys.stderr)
        return 2
    if args.engines:
        load_before = os.getloadavg()
        t_start = time.perf_counter()
        table = bench_engines(args.runs)
        text = "\n".join([
            "# Splitter character source: pypdf visitor vs PDFium text page", "",
            f"Produced by `PYTHONPATH=plugin .venv/bin/python benchmarks/bench_ingest.py --engines "
            f"--runs {args.runs}`. Machine: {os.cpu_count()} cores, Python "
            f"{platform.python_version()}; {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after "
            f"({time.perf_counter() - t_start:.0f} s). Medians of {args.runs} interleaved runs; "
            "the ratios are the figures to read on this shared machine.", "", table, ""])
        print(text)
        if args.write:
            args.write.write_text(text, encoding="utf-8")
        return 0
    load_before = os.getloadavg()
    t_start = time.perf_counter()
    ing = bench_ingest(args.runs)
    cold, cold_cpu = bench_cold_sentence(args.runs)
    stages = bench_stages()
    models = bench_models(stages.pop("texts"), args.runs)
    med = statistics.median
    lines = [
        "# Ingest benchmark",
        "",
        f"Machine: {os.cpu_count()} cores (`nproc` = {len(os.sched_getaffinity(0))}), "
        f"Python {platform.python_version()}, {platform.machine()}; "
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; load average before the run "
        f"{load_before[0]:.1f} (the machine is shared and noisy). Median of {args.runs} runs.",
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| `episteme ingest` Attention (15 pages, {ing['sections']} sections, {ing['passages']} "
        f"passages), fresh process + fresh wiki, wall | {med(ing['wall']):.2f} s "
        f"(runs: {', '.join(f'{x:.1f}' for x in ing['wall'])}) | ≤ 20 s |",
        f"| same, time inside `ingest_paper` | {med(ing['inside']):.2f} s | |",
        f"| same, CPU time of the process (user+sys, both cores) | {med(ing['cpu']):.2f} s | |",
        f"| peak RSS of that process | {max(ing['rss']):.0f} MiB | reported |",
        f"| cold process: import + load + embed one sentence | {med(cold):.2f} s "
        f"(runs: {', '.join(f'{x:.2f}' for x in cold)}; CPU {med(cold_cpu):.2f} s) | ≤ 1.5 s |",
        f"| embed {models['n']} passages, ONNX (warm) | {med(models['times']['onnx']):.2f} s "
        f"(CPU {med(models['cpu']['onnx']):.2f} s) | |",
        f"| embed {models['n']} passages, sentence-transformers (warm) | "
        f"{med(models['times']['st']):.2f} s (CPU {med(models['cpu']['st']):.2f} s) | |",
        f"| speed ratio sentence-transformers / ONNX, wall (CPU) | "
        f"{med(models['times']['st']) / med(models['times']['onnx']):.2f}× "
        f"({med(models['cpu']['st']) / med(models['cpu']['onnx']):.2f}×) | |",
        f"| sentence-transformers model load (in a process that had not imported torch) | "
        f"{models['st_load']:.2f} s | |",
        f"| max 1 − cos(ONNX, sentence-transformers) over those passages | {models['worst']:.1e} "
        f"| ≤ 1e-4 |",
        "",
        f"Load average after the run: {os.getloadavg()[0]:.1f} "
        f"(benchmark took {time.perf_counter() - t_start:.0f} s).",
        "",
        "Where the time goes (one in-process run, warm imports):",
        "",
        "| stage | seconds |",
        "|---|---|",
        *[f"| {k} | {v:.2f} |" for k, v in stages.items()],
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
