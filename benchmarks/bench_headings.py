#!/usr/bin/env python3
"""Heading detection accuracy and split time on the real papers, as markdown tables.

For each paper in ``../shared/data/papers`` with gold headings in ``../shared/data/gold/headings``:
split it with the outline used, and again from a copy whose ``/Outlines`` was stripped (written
to a temporary folder), and compare the detected section titles with the printed headings.
Titles match after folding case, numbering and punctuation; each gold heading can be matched
once (so a heading printed twice, like ResNet's "MS COCO", counts twice).  Time is the median of
``--repeat`` splits per paper.

    .venv/bin/python benchmarks/bench_headings.py [--repeat 3] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared")).resolve()

from episteme.pdf.split import norm_title, split_pdf  # noqa: E402


def strip_outline(src: Path, dst: Path) -> None:
    """Write a copy of ``src`` without /Outlines (and without an outline page mode)."""
    import pypdf
    from pypdf.generic import NameObject

    reader = pypdf.PdfReader(str(src))
    writer = pypdf.PdfWriter(clone_from=reader)
    root = writer._root_object
    for key in ("/Outlines", "/PageMode"):
        if NameObject(key) in root:
            del root[NameObject(key)]
    with open(dst, "wb") as fh:
        writer.write(fh)


def score(found: list[str], gold: list[str]) -> tuple[int, int, int]:
    """(true positives, number found, number gold) with multiset matching."""
    g = Counter(norm_title(t) for t in gold)
    f = Counter(norm_title(t) for t in found if norm_title(t))
    tp = sum(min(c, g[k]) for k, c in f.items())
    return tp, sum(f.values()), sum(g.values())


def structure_agreement(sections, gold_heads: list[dict]) -> tuple[int, int]:
    """How many gold headings were found with the printed number, level and start page."""
    got: dict[tuple[str, str], list] = {}
    for sec in sections:
        got.setdefault((norm_title(sec.title), sec.number), []).append(sec)
    ok = 0
    for h in gold_heads:
        cands = got.get((norm_title(h["title"]), h["number"]), [])
        if any(c.level == h["level"] and c.page_start == h["page"] for c in cands):
            ok += 1
    return ok, len(gold_heads)


def prf(tp: int, nf: int, ng: int) -> tuple[float, float, float]:
    p = tp / nf if nf else 0.0
    r = tp / ng if ng else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


SETS = {"dev": ("papers", "headings"), "more": ("papers-more", "headings-more"),
        "corpus-dev": ("corpus", "dev"), "corpus-heldout": ("corpus", "heldout")}
#: the collected corpus (benchmarks/papers/MANIFEST.tsv; restored by benchmarks/papers/restore.py)
CORPUS = Path(os.environ.get("EPISTEME_PAPERS", Path.home() / ".cache" / "episteme" / "papers"))


def corpus_split(split: str) -> set[str]:
    """The corpus papers of one split ("dev" or "heldout") per the manifest."""
    rows = (REPO / "benchmarks" / "papers" / "MANIFEST.tsv").read_text().splitlines()
    head = rows[0].split("\t")
    return {r.split("\t")[0] for r in rows[1:]
            if r.strip() and r.split("\t")[head.index("split")] == split}


def set_paths(which: str) -> tuple[Path, Path, set[str] | None]:
    """(papers folder, gold folder, papers of the set or None for all with gold)."""
    if SETS[which][0] == "corpus":
        return CORPUS, REPO / "benchmarks" / "gold" / "headings-corpus", corpus_split(SETS[which][1])
    return SHARED / "data" / SETS[which][0], SHARED / "data" / "gold" / SETS[which][1], None


def run(repeat: int, verbose: bool, which: str = "dev", only: str = "") -> str:
    papers, gold_dir, members = set_paths(which)
    rows = []
    totals = {"outline": [0, 0, 0], "stripped": [0, 0, 0]}
    with tempfile.TemporaryDirectory() as tmp:
        for gold_file in sorted(gold_dir.glob("*.json")):
            if only and only not in gold_file.name:
                continue
            gold = json.loads(gold_file.read_text())
            if members is not None and gold["paper"] not in members:
                continue
            pdf = papers / gold["paper"]
            if not pdf.is_file():
                print(f"missing: {pdf} (run benchmarks/papers/restore.py)", file=sys.stderr)
                continue
            gold_titles = [h["title"] for h in gold["headings"]]
            stripped = Path(tmp) / pdf.name
            strip_outline(pdf, stripped)
            row = {"paper": pdf.name}
            for mode, path, use in (("outline", pdf, True), ("stripped", stripped, True)):
                times, cpu = [], []
                for _ in range(repeat):
                    t0, c0 = time.perf_counter(), time.process_time()
                    res = split_pdf(path, use_outline=use)
                    times.append(time.perf_counter() - t0)
                    cpu.append(time.process_time() - c0)
                found = [s.title for s in res.sections if s.kind != "front"]
                tp, nf, ng = score(found, gold_titles)
                totals[mode] = [a + b for a, b in zip(totals[mode], (tp, nf, ng), strict=True)]
                row[mode] = (tp, nf, ng, res.used_outline, statistics.median(times),
                             structure_agreement(res.sections, gold["headings"]),
                             statistics.median(cpu))
                if verbose:
                    fs = Counter(norm_title(t) for t in found)
                    gs = Counter(norm_title(t) for t in gold_titles)
                    extra = [t for t in found if (fs - gs)[norm_title(t)] > 0]
                    missed = [t for t in gold_titles if (gs - fs)[norm_title(t)] > 0]
                    print(f"{pdf.name} [{mode}] false: {extra}\n    missed: {missed}",
                          file=sys.stderr)
            rows.append(row)

    out = ["| paper | outline? | P | R | F1 | P (stripped) | R (stripped) | F1 (stripped) |"
           " number+level+page | split wall s | split CPU s |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    agree = [0, 0]
    for row in rows:
        p1, r1, f1 = prf(*row["outline"][:3])
        p2, r2, f2 = prf(*row["stripped"][:3])
        ok, n = row["outline"][5]
        agree = [agree[0] + ok, agree[1] + n]
        out.append(
            f"| {row['paper']} | {'yes' if row['outline'][3] else 'no'} | {p1:.3f} | {r1:.3f} | "
            f"{f1:.3f} | {p2:.3f} | {r2:.3f} | {f2:.3f} | {ok}/{n} | {row['outline'][4]:.2f} | "
            f"{row['outline'][6]:.2f} |"
        )
    p1, r1, f1 = prf(*totals["outline"])
    p2, r2, f2 = prf(*totals["stripped"])
    out.append(
        f"| **all (micro)** | | **{p1:.3f}** | **{r1:.3f}** | **{f1:.3f}** | **{p2:.3f}** | "
        f"**{r2:.3f}** | **{f2:.3f}** | {agree[0]}/{agree[1]} | | |"
    )
    header = (
        f"Machine: {os.cpu_count()} cores (nproc), Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; median of {repeat} splits; "
        f"load average at the end {os.getloadavg()[0]:.1f}.\n"
        f"Gold headings: {totals['outline'][2]} over {len(rows)} papers. "
        "Targets: F1 ≥ 0.98 with outlines, ≥ 0.96 without (each set).\n"
    )
    return header + "\n" + "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--verbose", action="store_true", help="list false and missed headings")
    ap.add_argument("--set", choices=["dev", "more", "both", "corpus-dev", "corpus-heldout"],
                    default="both",
                    help="dev = the 10 papers, more = papers-more (6 other layouts), corpus-dev /"
                    " corpus-heldout = the collected corpus's splits (heldout: once, at the end)")
    ap.add_argument("--only", default="", help="only papers whose name contains this")
    args = ap.parse_args()
    for which in (["dev", "more"] if args.set == "both" else [args.set]):
        print(f"## {which}: {SETS[which][0]}\n")
        print(run(args.repeat, args.verbose, which, args.only))
    return 0


if __name__ == "__main__":
    sys.exit(main())
