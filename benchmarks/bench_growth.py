#!/usr/bin/env python3
"""How ingest, chat, retrieval, lint, graph and rebuild grow with the library (issue 15 item 3).

    PYTHONPATH=plugin .venv/bin/python benchmarks/bench_growth.py build     # grow the library once
    PYTHONPATH=plugin .venv/bin/python benchmarks/bench_growth.py measure [--write]

**build** grows one wiki, resumably, under ``$EPISTEME_GROWTH_DIR`` (default
``/tmp/episteme-growth``): it starts from the 10 real dev papers ingested and written by the
extractive writer, then ingests generated papers (``benchmarks/growth_corpus.py``) up to 100
and 300 papers, snapshotting the wiki at 10, 100 and 300 (``level-N/``).  Every paper up to 100
is ingested with ``--write`` (extractive writer); beyond 100 only every ``--write-every``-th
paper is written, the rest are stored only (what a 2-core machine shared with other work can
afford; RESULTS says which).  The filler papers are capped at ``--filler-pages`` pages.

**measure** then, for each snapshot and with the code on ``PYTHONPATH``:

* ingest seconds per paper: the same probe papers (generated, 4-20 pages, seeds apart from the
  filler) ingested into a scratch copy of the snapshot, store only and then with the extractive
  writer; per-paper costs are compared as a ratio to the 10-paper level in the same run;
* chat warm p50/p95 (offline, the warm :class:`~episteme.query.chat.QueryEngine`) on the dev
  questions of ``../shared/data/gold/dev_trace.jsonl``;
* retrieve latency and recall@5 on the 50 written retrieval questions of the dev papers
  (``benchmarks/retrieval_questions.jsonl``, as ``bench_trace.evaluate_retrieval``);
* ``lint`` and ``graph stats`` time (fresh processes, as a user runs them);
* ``rebuild`` (stores from raw/) where affordable (``--rebuild-max``);
* disk used per paper (the whole wiki folder over the paper count).

The counters of :mod:`episteme.wiki.index` / :mod:`episteme.query.wikisearch` (pages read and
hashed per write and per query) are printed beside the timings: they do not depend on the
machine's load, so they show flat-or-growing more reliably than seconds on 2 shared cores.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the package from PYTHONPATH when one is given (to measure another checkout's code), else ours
sys.path.insert(len(sys.path) if os.environ.get("PYTHONPATH") else 0, str(REPO / "plugin"))
sys.path.insert(0, str(REPO / "benchmarks"))

import growth_corpus  # noqa: E402

ROOT = Path(os.environ.get("EPISTEME_GROWTH_DIR", "/tmp/episteme-growth"))
LEVELS = (10, 100, 300)
SNAPSHOTS = (10, 50, 100, 150, 200, 250, 300)  # levels measurable if the build is cut short
PROBE_SEEDS = range(5000, 5003)
TODAY = dt.date(2026, 12, 1)
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_", "EMBEDDING_", "ANTHROPIC_"))}


def _settings(wiki: Path):
    from episteme.config import load_settings

    return load_settings(wiki, env={}, dotenv=None)


def _real_base() -> Path:
    """The 10 real papers ingested and written (bench_trace's cache when present)."""
    cache = Path(os.environ.get("EPISTEME_BENCH_CACHE", "/tmp/episteme-bench-trace"))
    done = sorted((p.parent for p in cache.glob("written-*/done")), key=lambda p: p.stat().st_mtime)
    if done:
        return done[-1] / "wiki"
    import bench_trace

    return bench_trace.ensure_written_wiki(bench_trace.ensure_wiki())


# ---------------------------------------------------------------------------------- build


def build(args) -> None:
    """Grow the library to 300 papers in batches (``ingest_batch``, ``--jobs`` split workers, the
    extractive writer after each commit, as ``episteme ingest DIR --write --jobs N`` runs),
    one batch per snapshot level so each ``level-N/`` holds exactly N papers.  Resumable: a
    paper stored and written is skipped; one stored but not written is written on the re-run."""
    from episteme.compile.writer import write_paper
    from episteme.ingest.batch import ingest_batch
    from episteme.stores.embedding import get_embedder

    wiki = ROOT / "wiki"
    state_path = ROOT / "state.json"
    if not state_path.is_file():
        shutil.rmtree(ROOT, ignore_errors=True)
        ROOT.mkdir(parents=True)
        shutil.copytree(_real_base(), wiki, ignore=shutil.ignore_patterns("*.lock", "tmp"))
        state = {"done": [], "written": [], "seconds": {}, "batches": []}
        state_path.write_text(json.dumps(state), encoding="utf-8")
    state = json.loads(state_path.read_text(encoding="utf-8"))
    state.setdefault("batches", [])
    settings = _settings(wiki)
    emb = get_embedder(settings)
    top = max(LEVELS)
    filler = growth_corpus.corpus(top - 10, max_pages=args.filler_pages)
    _snapshot(10)
    bounds = [n for n in SNAPSHOTS if n > 10]
    lo = 10
    for hi in bounds:
        chunk = filler[lo - 10:hi - 10]
        lo = hi
        todo = [p for p in chunk if p.stem not in state["done"] and p.name not in state["done"]]
        if todo:
            def after(row: dict) -> dict:
                n = 10 + len(state["done"]) + 1
                write = n <= args.write_until or (
                    args.write_every > 0 and (n - args.write_until) % args.write_every == 0)
                t, c = time.perf_counter(), time.process_time()
                out = {}
                if write:
                    out = write_paper(settings, row["paper"], writer="extractive", embedder=emb,
                                      today=TODAY)
                name = row["paper"]
                state["seconds"][name] = [row.get("seconds"), round(time.perf_counter() - t, 3),
                                          round(time.process_time() - c, 3), row.get("passages")]
                state["done"].append(name)
                if write:
                    state["written"].append(name)
                state_path.write_text(json.dumps(state), encoding="utf-8")
                return {"write_status": out.get("write_status", "written" if write else "stored")}

            t, c = time.perf_counter(), time.process_time()
            res = ingest_batch(settings, [], files=todo, jobs=args.jobs, progress=True,
                               embedder=emb, after_commit=after)
            state["batches"].append({"to": hi, "files": len(todo), "wall": round(time.perf_counter() - t, 1),
                                     "cpu_parent": round(time.process_time() - c, 1),
                                     "load": os.getloadavg(), "failed": res["failed"]})
            state_path.write_text(json.dumps(state), encoding="utf-8")
            if res["failed"]:
                raise SystemExit(f"batch to {hi} had failures: {res['failed'][:3]}")
        _snapshot(hi)


def _snapshot(n: int) -> None:
    target = ROOT / f"level-{n}"
    if (target / "done").is_file():
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(ROOT / "wiki", target / "wiki", ignore=shutil.ignore_patterns("*.lock", "tmp"))
    (target / "done").write_text("ok\n", encoding="utf-8")


# -------------------------------------------------------------------------------- measure


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _pages(wiki: Path) -> int:
    """Wiki pages: every ``*.md`` of the wiki (paper pages are under ``papers/``), not raw/ or
    the derived ``.episteme/``."""
    return sum(1 for p in wiki.rglob("*.md")
               if not {".episteme", "raw"} & set(p.relative_to(wiki).parts[:1]))


def _run(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a fresh process (its own and its children's: a rebuild's
    worker processes are waited for, so their time is counted)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=CLEAN_ENV, cwd=cwd)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # lint exits 1 when it finds problems
        raise RuntimeError(f"{cmd} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "episteme.cli", *args]


def probe_ingest(level_wiki: Path, emb) -> dict:
    """The probe papers ingested into a scratch copy of the level's wiki: seconds per paper,
    store only and the extractive write, plus the work counters of the write."""
    from episteme.compile.writer import write_paper
    from episteme.ingest.pipeline import ingest_paper

    scratch = ROOT / f"scratch-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(level_wiki, scratch / "wiki", ignore=shutil.ignore_patterns("*.lock", "tmp"))
    settings = _settings(scratch / "wiki")
    probes = [growth_corpus.corpus(1, start=s)[0] for s in PROBE_SEEDS]
    store, write, pages, store_cpu, write_cpu = [], [], [], [], []
    work = {"rows_read": 0, "entries_parsed": 0}
    with _counting(work):
        for pdf in probes:
            t, c = time.perf_counter(), time.process_time()
            res = ingest_paper(settings, pdf, progress=False, embedder=emb)
            store.append(time.perf_counter() - t)
            store_cpu.append(time.process_time() - c)
            t, c = time.perf_counter(), time.process_time()
            write_paper(settings, res["paper"], writer="extractive", embedder=emb, today=TODAY)
            write.append(time.perf_counter() - t)
            write_cpu.append(time.process_time() - c)
            pages.append(growth_corpus.page_count(pdf))
    shutil.rmtree(scratch, ignore_errors=True)
    return {"store": statistics.mean(store), "write": statistics.mean(write), "probe_pages": pages,
            "store_cpu": statistics.mean(store_cpu), "write_cpu": statistics.mean(write_cpu),
            "write_rows_read": work["rows_read"] / len(probes),
            "write_entries_parsed": work["entries_parsed"] / len(probes)}


@contextlib.contextmanager
def _counting(work: dict):
    """Count, while the block runs, the section-index rows each refresh reads and the
    ``index.md`` entries parsed: the work that used to grow with the wiki."""
    from episteme.query import wikisearch
    from episteme.wiki import edit, index

    real_refresh, real_parse = wikisearch.WikiSectionIndex._refresh_locked, index.parse_index_md

    def refresh(self):
        out = real_refresh(self)
        work["rows_read"] += out.get("rows_read", out["unchanged"] + out["updated"] + out["removed"])
        return out

    def parse(text):
        out = real_parse(text)
        work["entries_parsed"] += len(out.entries)
        return out

    wikisearch.WikiSectionIndex._refresh_locked = refresh
    index.parse_index_md = edit.parse_index_md = parse
    try:
        yield
    finally:
        wikisearch.WikiSectionIndex._refresh_locked = real_refresh
        index.parse_index_md = edit.parse_index_md = real_parse


CHAT_QUESTIONS = 24  # the first N dev questions (all 48 cost minutes per level on a loaded machine)


def chat_and_retrieve(wiki: Path) -> dict:
    import bench_trace
    from episteme.query.chat import QueryEngine

    settings = _settings(wiki)
    items = [json.loads(x) for x in bench_trace.GOLD.read_text(encoding="utf-8").splitlines()
             if x.strip()][:CHAT_QUESTIONS]
    engine = QueryEngine(settings)
    engine.chat("warm up the engine", mode="offline")
    times, cpu = [], []
    for it in items:
        t, c = time.perf_counter(), time.process_time()
        engine.chat(it["question"], mode="offline")
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    engine.close()
    times.sort()
    rv = bench_trace.evaluate_retrieval(wiki)
    return {"chat_p50": statistics.median(times), "chat_cpu_p50": statistics.median(cpu), "chat_p95": times[int(0.95 * (len(times) - 1))],
            "n_chat": len(times), "recall5": rv["metrics"]["fused"]["recall@5"], "n_recall": rv["n"],
            "retrieve_ms": rv["median_ms"], "wiki_sections": rv["sections"]}


def chroma_costs(wiki: Path, emb, repeat: int = 5) -> dict:
    """What Chroma's passage collection costs at this library size, on a scratch copy of the
    level's store (median ms of ``repeat``): opening the client and the collection (a fresh
    process's first call), ``count()``, reading one paper's vectors (what an ingest stages for
    its undo), deleting them and adding them back (an ingest's replace), and a query over the
    whole library.  The paper is the same at every level (the smallest real one)."""
    import numpy as np
    from chromadb.api.client import SharedSystemClient
    from episteme.stores.vectors import forget_clients, open_vectors

    scratch = ROOT / "chroma-probe" / "wiki"
    shutil.rmtree(scratch.parent, ignore_errors=True)
    shutil.copytree(wiki / ".episteme" / "chroma", scratch / ".episteme" / "chroma")
    s = _settings(scratch)
    timings: dict[str, list[float]] = {k: [] for k in ("open", "count", "get_paper",
                                                       "replace_paper", "query")}
    try:
        from episteme.stores.sqlite import open_store

        with open_store(_settings(wiki), readonly=True) as st:
            sizes = {pid: n for pid, n in st.conn.execute(
                "SELECT paper_id, count(*) FROM passages GROUP BY paper_id")}
        # the same paper at every level: the smallest of the 10 real ones (in every level)
        real = sorted((n, pid) for pid, n in sizes.items() if not pid.startswith("gen"))
        paper = real[0][1] if real else None
        qvec = emb.encode(["how does the estimate depend on the window size"])[0]
        for _ in range(repeat):
            forget_clients()
            SharedSystemClient.clear_system_cache()
            t = time.perf_counter()
            vec = open_vectors(s, emb)
            vec.collection()
            timings["open"].append(time.perf_counter() - t)
            t = time.perf_counter()
            n = vec.count()
            timings["count"].append(time.perf_counter() - t)
            if paper is not None:
                t = time.perf_counter()
                got = vec.paper_vectors(paper)
                timings["get_paper"].append(time.perf_counter() - t)
                t = time.perf_counter()
                vec.delete_paper(paper)
                vec.add(got["ids"], np.asarray(got["embeddings"]), got["metadatas"],
                        got["documents"])
                timings["replace_paper"].append(time.perf_counter() - t)
            t = time.perf_counter()
            vec.query_passages([qvec], 10)
            timings["query"].append(time.perf_counter() - t)
        assert vec.count() == n
    finally:
        forget_clients()
        SharedSystemClient.clear_system_cache()
        shutil.rmtree(scratch.parent, ignore_errors=True)
    out = {f"chroma_{k}_ms": 1000 * statistics.median(v) for k, v in timings.items() if v}
    out["chroma_vectors"] = n
    out["chroma_paper_passages"] = len(got["ids"]) if paper is not None else 0
    return out


PARTS = ("probe", "chat", "lint", "rebuild", "chroma")


def measure_level(n: int, emb, rebuild_max: int, parts=PARTS, rebuild_jobs: int = 2) -> dict:
    """Measure ``parts`` of level ``n``; what was measured before (``measure-N.json``) is kept
    for the parts not asked for, so ``--parts chat`` re-times chat alone."""
    wiki = ROOT / f"level-{n}" / "wiki"
    if not wiki.is_dir():
        raise SystemExit(f"no snapshot {wiki}: run `bench_growth.py build` first")
    from episteme.stores.sqlite import open_store

    with open_store(_settings(wiki)) as st:  # read-write: migrates an older snapshot's schema
        papers = len(st.papers())
        passages = st.conn.execute("SELECT count(*) FROM passages").fetchone()[0]
    old = ROOT / f"measure-{n}.json"
    out = json.loads(old.read_text(encoding="utf-8")) if old.is_file() else {}
    out.update({"level": n, "papers": papers, "passages": passages, "pages": _pages(wiki),
                "disk_per_paper_mb": _du(wiki) / papers / 2**20})
    if "probe" in parts:
        print(f"[{n}] probing ingest...", file=sys.stderr)
        out.update(probe_ingest(wiki, emb))
    if "chat" in parts:
        print(f"[{n}] chat and retrieval...", file=sys.stderr)
        out.update(chat_and_retrieve(wiki))
        out["chat_load"] = os.getloadavg()[0]
    if "lint" in parts:
        print(f"[{n}] lint, graph stats...", file=sys.stderr)
        out["lint"], out["lint_cpu"] = _run(_cli("lint", "--wiki", str(wiki)))
        out["graph_stats"], out["graph_stats_cpu"] = _run(
            _cli("graph", "--mode", "stats", "--wiki", str(wiki)))
    if "chroma" in parts:
        print(f"[{n}] chroma...", file=sys.stderr)
        out.update(chroma_costs(wiki, emb))
    _save(out)  # what is measured so far survives a failure of the rebuild
    if "rebuild" in parts and papers <= rebuild_max:
        print(f"[{n}] rebuild --jobs {rebuild_jobs}...", file=sys.stderr)
        tmp = ROOT / "rebuild"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(wiki, tmp / "wiki", ignore=shutil.ignore_patterns("*.lock", "tmp"))
        load0 = os.getloadavg()[0]
        out["rebuild"], out["rebuild_cpu"] = _run(_cli(
            "rebuild", "--wiki", str(tmp / "wiki"), "--no-progress", "--jobs", str(rebuild_jobs)))
        out["rebuild_jobs"], out["rebuild_load"] = rebuild_jobs, [load0, os.getloadavg()[0]]
        shutil.rmtree(tmp, ignore_errors=True)
        _save(out)
    return out


def _save(row: dict) -> None:
    row["load"] = os.getloadavg()
    row["measured_at"] = dt.datetime.now(dt.timezone.utc).strftime("%H:%M UTC")
    (ROOT / f"measure-{row['level']}.json").write_text(json.dumps(row), encoding="utf-8")


def _f(r: dict, key: str, fmt: str = "{:.1f} s") -> str:
    return fmt.format(r[key]) if r.get(key) is not None else "not run"


def report(rows: list[dict], machine: str, load: str, notes: list[str]) -> str:
    base = rows[0]
    lines = [
        "# Growth: 10, 100, 300 papers (issue 15 item 3)",
        "",
        f"Machine: {machine}. Load while measuring (`uptime`): {load}.",
        "Produced by `benchmarks/bench_growth.py build` then `measure --write` (see the reading "
        "below for the exact commands).",
        "",
        *notes,
        "",
        "| papers | wiki pages / sections | ingest s/paper, store only (× at 10) "
        "| + extractive write s/paper (× at 10) | chat warm p50 / p95 (CPU p50; load) | retrieve median "
        "| recall@5 | disk/paper | index rows read / index.md entries parsed per paper write |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['papers']} | {r['pages']} / {r['wiki_sections']} "
            f"| {r['store']:.2f} ({r['store'] / base['store']:.2f}×) "
            f"| {r['write']:.2f} ({r['write'] / base['write']:.2f}×) "
            f"| {r['chat_p50']:.2f} s / {r['chat_p95']:.2f} s ({r.get('chat_cpu_p50', float('nan')):.2f} s; "
            f"{r.get('chat_load', float('nan')):.1f}) "
            f"| {r['retrieve_ms']:.0f} ms | {r['recall5']:.3f} (n={r['n_recall']}) "
            f"| {r['disk_per_paper_mb']:.2f} MB "
            f"| {r.get('write_rows_read', float('nan')):.0f} / {r.get('write_entries_parsed', float('nan')):.0f} |")
    lines += ["", "Wall and CPU seconds (CPU: the process and its worker processes; the figure to "
              "read on a loaded machine).", "",
              "| papers | probe CPU s/paper store / write | lint wall / CPU | graph stats wall / CPU "
              "| rebuild wall / CPU (--jobs) | rebuild s/paper wall / CPU | rebuild CPU ms/passage "
              "| load during rebuild |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rb = (f"{r['rebuild']:.0f} s / {r['rebuild_cpu']:.0f} s ({r.get('rebuild_jobs', 1)})"
              if r.get("rebuild_cpu") is not None else "not run")
        per = (f"{r['rebuild'] / r['papers']:.2f} / {r['rebuild_cpu'] / r['papers']:.2f}"
               if r.get("rebuild_cpu") is not None else "not run")
        pp = (f"{1000 * r['rebuild_cpu'] / r['passages']:.0f} ({r['passages']} passages)"
              if r.get("rebuild_cpu") is not None and r.get("passages") else "not run")
        rl = (" → ".join(f"{x:.1f}" for x in r["rebuild_load"]) if r.get("rebuild_load")
              else "")
        lines.append(f"| {r['papers']} | {r['store_cpu']:.2f} / {r['write_cpu']:.2f} "
                     f"| {_f(r, 'lint')} / {_f(r, 'lint_cpu')} "
                     f"| {_f(r, 'graph_stats')} / {_f(r, 'graph_stats_cpu')} | {rb} | {per} | {pp} | {rl} |")
    if any(r.get("chroma_count_ms") is not None for r in rows):
        lines += ["", "Chroma's passage collection (embedded store; median ms of 5, on a scratch "
                  "copy of the level's store): what a process pays to open it, `count()`, and "
                  "an ingest's steps for one paper, the same at every level (read its vectors for the undo, "
                  "delete them, add them back), and a top-10 query over the library.", "",
                  "| papers | vectors | open ms | count() ms | read paper ms | replace paper ms "
                  "(passages) | query ms |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            if r.get("chroma_count_ms") is None:
                continue
            lines.append(f"| {r['papers']} | {r['chroma_vectors']} | {r['chroma_open_ms']:.0f} "
                         f"| {r['chroma_count_ms']:.1f} | {r['chroma_get_paper_ms']:.1f} "
                         f"| {r['chroma_replace_paper_ms']:.0f} ({r['chroma_paper_passages']}) "
                         f"| {r['chroma_query_ms']:.1f} |")
    last = rows[-1]
    total = [(r["store"] + r["write"]) for r in rows]
    cpu = [(r["store_cpu"] + r["write_cpu"]) for r in rows]
    lines += [
        "",
        f"Per-paper ingest + write, {last['papers']} papers vs {base['papers']}: wall "
        f"{total[-1] / total[0]:.2f}×, CPU {cpu[-1]:.2f} s / {cpu[0]:.2f} s = {cpu[-1] / cpu[0]:.2f}×.",
        "",
        f"Targets (the largest level measured here: {last['papers']} papers): per-paper ingest "
        f"cost at 300 ≤ 1.2× at 10 (here {cpu[-1] / cpu[0]:.2f}× CPU, "
        f"{total[-1] / total[0]:.2f}× wall); chat warm p50 ≤ 1.5 s at 300 (here "
        f"{last['chat_p50']:.2f} s wall, {last.get('chat_cpu_p50', float('nan')):.2f} s CPU); "
        f"recall@5 ≥ 0.92 (here {last['recall5']:.3f}).",
        "",
    ]
    return "\n".join(lines)


def measure(args) -> None:
    """Measure the requested levels (each row saved as ``measure-N.json``), then report every
    level measured so far (``--report-only``: just the report)."""
    from episteme.stores.embedding import get_embedder

    if args.probe_only:  # the write path alone, e.g. with another checkout's code on PYTHONPATH
        emb = get_embedder(_settings(ROOT / f"level-{SNAPSHOTS[0]}" / "wiki"))
        for n in args.levels:
            row = {"level": n, "code": args.probe_only, **probe_ingest(ROOT / f"level-{n}" / "wiki", emb)}
            (ROOT / f"probe-{n}-{args.probe_only}.json").write_text(json.dumps(row), encoding="utf-8")
            print(json.dumps(row))
        return
    if not args.report_only:
        emb = get_embedder(_settings(ROOT / f"level-{SNAPSHOTS[0]}" / "wiki"))
        for n in args.levels:
            row = measure_level(n, emb, args.rebuild_max, args.parts, args.rebuild_jobs)
            print(json.dumps(row), file=sys.stderr)
    rows = sorted((json.loads(p.read_text(encoding="utf-8")) for p in ROOT.glob("measure-*.json")),
                  key=lambda r: r["level"])
    rows = [r for r in rows if all(k in r for k in ("store", "chat_p50", "lint"))]  # complete
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    load = "; ".join(f"{r['level']} papers at {r['measured_at']}: load {r['load'][0]:.1f}" for r in rows)
    state = json.loads((ROOT / "state.json").read_text(encoding="utf-8"))
    written = len(state["written"])
    notes = [
        f"- The library: the 10 real dev papers (written by the extractive writer), then "
        f"{len(state['done'])} generated papers (`benchmarks/growth_corpus.py`, capped at "
        f"{args.filler_pages} pages for the filler), "
        + ("every one of them also written by the extractive writer (ingested in batches, "
           "`ingest_batch` with 2 split workers and the writer after each commit, one batch per "
           "snapshot level)." if written == len(state["done"]) else
           f"{written} of them also written (the rest stored only)."),
        f"- Ingest per paper: the mean over {len(PROBE_SEEDS)} probe papers (generated, "
        f"{', '.join(map(str, rows[0]['probe_pages']))} pages) ingested into a copy of each level's "
        "wiki, in-process with a warm embedder.",
        "- Chat: the first 24 dev questions, warm offline engine; rebuild: `episteme rebuild "
        "--jobs N` on a copy of the level's wiki (all its papers from raw/).",
    ]
    text = report(rows, machine, load, notes)
    print(text)
    if args.write:
        (REPO / "benchmarks" / "RESULTS-growth.md").write_text(text, encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--filler-pages", type=int, default=5)
    b.add_argument("--write-every", type=int, default=0, help="beyond --write-until, write every Nth (0: none)")
    b.add_argument("--write-until", type=int, default=300, help="write every paper up to this many")
    b.add_argument("--jobs", type=int, default=2, help="split worker processes of each batch")
    m = sub.add_parser("measure")
    m.add_argument("--write", action="store_true", help="write benchmarks/RESULTS-growth.md")
    m.add_argument("--levels", type=int, nargs="+", default=list(LEVELS))
    m.add_argument("--report-only", action="store_true")
    m.add_argument("--probe-only", metavar="TAG", help="only the probe ingests, saved as probe-N-TAG.json")
    m.add_argument("--rebuild-max", type=int, default=300, help="rebuild only levels up to N papers")
    m.add_argument("--rebuild-jobs", type=int, default=2, help="rebuild's --jobs")
    m.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                   help="what to measure (the rest of a level's row is kept from before)")
    m.add_argument("--filler-pages", type=int, default=5)
    m.add_argument("--write-every", type=int, default=0)
    m.add_argument("--write-until", type=int, default=300)
    args = ap.parse_args()
    (build if args.cmd == "build" else measure)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
