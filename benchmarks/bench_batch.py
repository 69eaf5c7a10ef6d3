#!/usr/bin/env python3
"""Batch ingest vs one ingest per paper, same 20 papers, same run (issue 15: a batch of 20
papers >= 1.6x faster than 20 single ingests).  Prints a markdown table.

    .venv/bin/python benchmarks/bench_batch.py [--papers 20] [--pages 0] [--jobs 2] \\
        [--write benchmarks/RESULTS-batch.md]

Corpus: the 10 dev papers, the 6 of papers-more, and generated papers (tests/pdfgen.py, varied
topic words, 4-8 sections, a numeric results line) up to ``--papers``; ``--pages N`` cuts every real paper to
its first N pages (0: whole papers).  Three ways, each into a fresh wiki:

- **single**: ``episteme ingest PAPER.pdf`` once per paper, one process each (a shell loop);
- **batch --jobs 1**: ``episteme ingest DIR --jobs 1`` (one process, no worker processes);
- **batch --jobs N**: ``episteme ingest DIR --jobs N`` (N spawned splitter processes, passages
  embedded across papers in the parent).

Order: batch --jobs N, then single, then batch --jobs 1 (the baseline in the middle, so a drift
in the neighbours' load does not favour one side; the load is printed for each).  Wall time is
what the target is about; CPU time (user + sys of the process and its children)
is printed beside it because this machine is shared and wall time depends on the neighbours.
The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_", "EMBEDDING_", "EPISTEME_CRASH"))}
CLEAN_ENV["PYTHONPATH"] = os.pathsep.join([str(REPO / "plugin"), CLEAN_ENV.get("PYTHONPATH", "")])


def run(cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the process and its reaped children, stdout)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=CLEAN_ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise RuntimeError(f"{cmd} failed ({code}): {err.read().decode(errors='replace')[-2000:]}")
        return wall, usage.ru_utime + usage.ru_stime, out.read().decode()


def _cut(src: Path, dest: Path, pages: int) -> Path:
    import pypdf

    if not pages:
        dest.write_bytes(src.read_bytes())
        return dest
    reader = pypdf.PdfReader(src)
    writer = pypdf.PdfWriter()
    for i in range(min(pages, len(reader.pages))):
        writer.add_page(reader.pages[i])
    buf = io.BytesIO()
    writer.write(buf)
    dest.write_bytes(buf.getvalue())
    return dest


def _generated(path: Path, seed: int) -> Path:
    """A generated paper: topic words by seed, 4-8 sections of several paragraphs, a results line with numbers."""
    sys.path.insert(0, str(REPO / "tests"))
    from pdfgen import Paper, Section, make_paper_pdf

    rng = random.Random(seed)
    words = ("signal", "model", "layer", "record", "estimate", "sample", "window", "graph",
             "error", "measure", "station", "vector", "channel", "source", "filter", "kernel",
             "bound", "series", "label", "corpus", "index", "query", "token", "budget")

    def para() -> str:
        return "".join(" ".join(rng.choice(words) for _ in range(rng.randint(10, 18))).capitalize()
                       + f" in trial {rng.randint(2, 999)}. " for _ in range(rng.randint(5, 9)))

    sections = [Section(str(i + 1), f"The {rng.choice(words).title()} {rng.choice(words).title()}",
                        [para() for _ in range(rng.randint(3, 6))])
                for i in range(rng.randint(4, 8))]
    sections[-1].paragraphs.append("Table 1: Results per " + rng.choice(words) + ". "
                                   + " ".join(f"{rng.choice(words)} {rng.random():.3f}"
                                              for _ in range(12)))
    paper = Paper(title=f"On {rng.choice(words).title()} {rng.choice(words).title()} Data",
                  authors=[f"Ana {rng.choice(words).title()}"], affiliations=["Dept. of Data"],
                  abstract=para(), sections=sections,
                  references=[f"A. Author. A {rng.choice(words)} paper. {rng.randint(1990, 2024)}."])
    return make_paper_pdf(path, paper)


def corpus(folder: Path, n: int, pages: int) -> list[Path]:
    real = sorted((SHARED / "papers").glob("*.pdf")) + sorted((SHARED / "papers-more").glob("*.pdf"))
    out = [_cut(p, folder / p.name, pages) for p in real[:n]]
    seed = 0
    while len(out) < n:
        out.append(_generated(folder / f"generated_{seed:03d}.pdf", 1500 + seed))
        seed += 1
    return out


def load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", type=int, default=20)
    ap.add_argument("--pages", type=int, default=0, help="cut real papers to N pages (0: whole)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--write", default=None, help="also write the markdown to this file")
    args = ap.parse_args()
    py = sys.executable
    load_before = load()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / "papers"
        src.mkdir()
        pdfs = corpus(src, args.papers, args.pages)
        n_pages = 0
        import pypdf

        for p in pdfs:
            n_pages += len(pypdf.PdfReader(p).pages)
        # warm the OS file cache and the model files once, outside every timing
        run([py, "-m", "episteme.cli", "ingest", str(pdfs[-1]), "--wiki", str(tmp / "warm"),
             "--no-progress"])

        def single() -> tuple:
            wall = cpu = 0.0
            passages = 0
            for p in pdfs:
                w, c, out = run([py, "-m", "episteme.cli", "ingest", str(p), "--wiki",
                                 str(tmp / "single"), "--no-progress"])
                wall, cpu = wall + w, cpu + c
                passages += json.loads(out)["passages"]
            return wall, cpu, passages

        def batch(jobs: int) -> tuple:
            w, c, out = run([py, "-m", "episteme.cli", "ingest", str(src), "--wiki",
                             str(tmp / f"batch{jobs}"), "--jobs", str(jobs), "--no-progress"])
            res = json.loads(out)
            assert res["counts"]["ingested"] == len(pdfs), res["failed"]
            return w, c, sum(p["passages"] for p in res["papers"])

        # the baseline runs between the two batches, so a change in the neighbours' load
        # during the run does not favour one side; the load is recorded around each
        measured = {}
        for name, fn in ((f"batch --jobs {args.jobs}", lambda: batch(args.jobs)),
                         ("single (one process per paper)", single),
                         ("batch --jobs 1", lambda: batch(1))):
            before = load().split()[0]
            measured[name] = (*fn(), f"{before} → {load().split()[0]}")
        order = ("single (one process per paper)", "batch --jobs 1", f"batch --jobs {args.jobs}")
        rows = [(name, *measured[name]) for name in order]
    base_wall, base_cpu = rows[0][1], rows[0][2]
    lines = [
        "# Batch ingest vs single ingests (issue 15)",
        "",
        f"{dt.date.today().isoformat()} · {platform.machine()} · {os.cpu_count()} cores · "
        f"Python {platform.python_version()} · load average before {load_before}, after {load()}",
        "",
        f"Corpus: {len(pdfs)} papers ({n_pages} pages): the dev papers and papers-more"
        + (f" cut to their first {args.pages} pages" if args.pages else " (whole)")
        + f", then generated papers (tests/pdfgen.py). Store only (no --write). Command: "
        f"`benchmarks/bench_batch.py --papers {args.papers} --pages {args.pages} --jobs {args.jobs}`.",
        "",
        "| way | wall s | CPU s | passages | speed-up (wall) | CPU ratio | load (1 min) during |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, w, c, n, ld in rows:
        lines.append(f"| {name} | {w:.1f} | {c:.1f} | {n} | {base_wall / w:.2f}× | "
                     f"{base_cpu / c:.2f}× | {ld} |")
    best = base_wall / measured[f"batch --jobs {args.jobs}"][0]
    lines += ["", f"Target: batch ≥ 1.6× faster than 20 single ingests (wall): "
              f"**{best:.2f}×** ({'met' if best >= 1.6 else 'NOT met'})."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
