#!/usr/bin/env python3
"""Citations between the shared papers, and reference entries read with title and year.

    PYTHONPATH=plugin .venv/bin/python benchmarks/bench_citations.py [--write]

Gold: ``benchmarks/gold/citations.json``, labelled by hand from the printed reference lists of
the 16 shared papers (``../shared/data/papers`` and ``papers-more``):

* **links**: which of the 16 papers each one's reference list holds; every other ordered pair
  is a non-link.  Precision and recall of :func:`episteme.query.citations.build_graph` (the
  same code ``episteme citations`` runs on a wiki's store), on the papers as the splitter
  reads them (title, authors, year/arXiv id/DOI, the ``references`` sections).
* **entries**: 74 entries sampled at evenly spaced offsets of the 10 dev papers' reference
  text, with the printed title and year.  An entry is read right when some parsed entry of its
  paper has the same title (folded: case, accents, spacing, punctuation) and the same year.

Every paper here was seen while the rules were written (in-sample); held-out figures need the
``benchmarks/papers`` corpus.  Splits are cached under the temp folder by the PDF's sha256.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared"))
if not SHARED.exists():  # a worktree beside the checkout: ../../shared
    SHARED = REPO.parent.parent / "shared"
GOLD = REPO / "benchmarks" / "gold" / "citations.json"
CACHE = Path(tempfile.gettempdir()) / "episteme-bench-citations"

from episteme.pdf.references import fold  # noqa: E402
from episteme.query.citations import build_graph  # noqa: E402


def split_cached(pdf: Path) -> dict:
    """The paper as ingest would store it: title, authors, meta and its sections' kind/text."""
    digest = hashlib.sha256(pdf.read_bytes()).hexdigest()[:16]
    path = CACHE / f"{pdf.stem}-{digest}.json"
    if path.exists():
        return json.loads(path.read_text())
    from episteme.pdf.split import split_pdf

    res = split_pdf(pdf)
    doc = {"id": pdf.name, "title": res.title, "authors": res.authors, "meta": res.meta,
           "sections": [{"kind": s.kind, "section_text": s.text} for s in res.sections]}
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write benchmarks/RESULTS-citations.md")
    args = ap.parse_args()
    gold = json.loads(GOLD.read_text())
    pdfs = sorted((SHARED / "data" / "papers").glob("*.pdf")) + sorted(
        (SHARED / "data" / "papers-more").glob("*.pdf"))
    if not pdfs:
        print("no shared papers", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    docs = [split_cached(p) for p in pdfs]
    t_split = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = build_graph([{k: d[k] for k in ("id", "title", "authors", "meta")} for d in docs],
                        {d["id"]: d["sections"] for d in docs})
    t_graph = time.perf_counter() - t0

    truth = {(a, b) for a, bs in gold["cites"].items() for b in bs}
    found = {(lk.citing, lk.cited) for lk in graph.links}
    tp = len(truth & found)
    precision = tp / len(found) if found else 1.0
    recall = tp / len(truth) if truth else 1.0
    wrong = sorted(found - truth)
    missed = sorted(truth - found)

    by_paper = graph.entries
    rows = []
    t_ok = y_ok = both = 0
    for g in gold["entries"]:
        parsed = by_paper.get(g["paper"], [])
        same_title = [r for r in parsed if r.title and fold(r.title) == fold(g["title"])]
        ok_t = bool(same_title)
        ok_y = any(r.year == g["year"] for r in same_title) if same_title else any(
            fold(g["title"])[:30] in fold(r.raw) and r.year == g["year"] for r in parsed)
        t_ok += ok_t
        y_ok += ok_y
        both += ok_t and ok_y
        if not (ok_t and ok_y):
            rows.append((g["paper"], g["title"], g["year"], ok_t, ok_y))
    n = len(gold["entries"])
    lines = [
        "# Citations between ingested papers (issue 35)",
        "",
        f"{dt.date.today()} · {platform.machine()}, {os.cpu_count()} cores, load "
        f"{os.getloadavg()[0]:.1f} · `benchmarks/bench_citations.py` on the 16 shared papers "
        "(all in-sample: the rules were written reading them).",
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| citation links, precision | {precision:.3f} ({tp}/{len(found)}) | ≥ 0.95 |",
        f"| citation links, recall | {recall:.3f} ({tp}/{len(truth)}) | ≥ 0.90 |",
        f"| sampled entries with title right | {t_ok / n:.3f} ({t_ok}/{n}) | |",
        f"| sampled entries with year right | {y_ok / n:.3f} ({y_ok}/{n}) | |",
        f"| sampled entries with title and year right | {both / n:.3f} ({both}/{n}) | ≥ 0.90 |",
        f"| entries parsed, all 16 papers | {sum(len(v) for v in by_paper.values())} | |",
        f"| time: split 16 papers (cached after the first run) / build the graph | "
        f"{t_split:.1f} s / {t_graph * 1000:.0f} ms | |",
        "",
        "Links found: " + ", ".join(f"{a} → {b} ({lk.how})" for lk in graph.links
                                    for a, b in [(lk.citing, lk.cited)]) + ".",
        "",
    ]
    if wrong:
        lines.append("Wrong links: " + ", ".join(f"{a} → {b}" for a, b in wrong) + ".")
    if missed:
        lines.append("Missed links: " + ", ".join(f"{a} → {b}" for a, b in missed) + ".")
    if rows:
        lines += ["", "Entries not read right (paper, gold title, year, title ok, year ok):", ""]
        lines += [f"- {p}: “{t}” ({y}) title {'ok' if a else 'wrong'}, year {'ok' if b else 'wrong'}"
                  for p, t, y, a, b in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        (REPO / "benchmarks" / "RESULTS-citations.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
