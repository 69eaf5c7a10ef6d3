"""How often a quote is placed on its page: every sentence-pair quote of every paper.

For each paper, split it as ingest does (pypdf), cut each body section into sentences, and
quote pairs of consecutive sentences (what the tracer quotes) dated by the page their first
character is on.  ``quote_boxes`` must find them (found %), on the dated page or the next
(page ok %), and the text under the boxes (PDFium's bounded extraction) must contain the
quote's words in order (words ok %); searched in another paper (every page), it must not be
placed at all (the false-placement rate).  The shared papers were used while building the matcher;
papers-more never were: the figures are reported per set.

    PYTHONPATH=plugin python benchmarks/bench_highlight.py [--limit 60]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
for cand in (Path("/work/shared/data"), DATA):
    if cand.is_dir():
        DATA = cand
        break


def run(paths: list[Path], limit: int, seed: int) -> dict:
    from episteme.pdf.highlight import quote_boxes, text_in_box, words_in_order
    from episteme.pdf.passages import split_sentences
    from episteme.pdf.split import split_pdf

    rnd = random.Random(seed)
    n = found = page_ok = words_ok = foreign = 0
    secs = 0.0
    for k, pdf in enumerate(paths):
        other = paths[(k + 1) % len(paths)]
        split = split_pdf(pdf)
        cands = []
        for s in split.sections:
            if s.kind not in ("body", "abstract", "appendix"):
                continue
            sents = split_sentences(s.text)
            for i in range(len(sents) - 1):
                a, b = sents[i][0], sents[i + 1][1]
                q = s.text[a:b]
                if 60 <= len(q) <= 500 and len(re.findall(r"[A-Za-z]{3,}", q)) >= 8:
                    cands.append((s.page_at(a), q))
        rnd.shuffle(cands)
        for page, q in cands[:limit]:
            n += 1
            t = time.perf_counter()
            boxes = quote_boxes(pdf, page, q)
            secs += time.perf_counter() - t
            if other != pdf and quote_boxes(other, None, q):  # another paper: must find nothing
                foreign += 1
            if not boxes:
                continue
            found += 1
            if boxes[0]["page"] in (page, page + 1):
                page_ok += 1
            under = " ".join(text_in_box(pdf, b["page"], b["bbox"]) for b in boxes)
            if words_in_order(q, under) >= 0.9:
                words_ok += 1
    return {"quotes": n, "found": found, "foreign": foreign, "page_ok": page_ok, "words_ok": words_ok,
            "ms_per_quote": 1000 * secs / max(1, n)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=60, help="quotes per paper")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rows = []
    for name in ("papers", "papers-more"):
        paths = sorted((DATA / name).glob("*.pdf"))
        r = run(paths, args.limit, args.seed)
        rows.append((name, len(paths), r))
        print(f"{name}: {r}", file=sys.stderr)
    print("| set | papers | quotes | found | on its page (or next) | words under boxes ≥ 90% in order "
          "| placed in another paper (any page) | ms / quote |")
    print("|---|---|---|---|---|---|---|---|")
    for name, k, r in rows:
        q = max(1, r["quotes"])
        print(f"| {name} | {k} | {r['quotes']} | {100 * r['found'] / q:.1f}% | "
              f"{100 * r['page_ok'] / q:.1f}% | {100 * r['words_ok'] / q:.1f}% | "
              f"{100 * r['foreign'] / q:.1f}% | {r['ms_per_quote']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
