#!/usr/bin/env python3
"""Paper metadata (title, authors, year, BibTeX type, arXiv id, DOI) against hand-written records.

Gold records, one JSON object a line, written by reading each paper's first pages:
``benchmarks/gold/metadata-shared.jsonl`` (the 16 shared papers in ``../shared/data/papers`` and
``papers-more``; ``set`` says which) and ``benchmarks/gold/metadata-corpus.jsonl`` (the collected
corpus, ``benchmarks/papers/MANIFEST.tsv``, split into ``dev`` and ``heldout``).  Each paper is
split once (:func:`episteme.pdf.split.split_pdf`) and its BibTeX entry written
(:func:`episteme.pdf.meta.bibtex`).

Scores: **title exact** (after folding case, accents kept, spacing, dashes and quotes, a final
period); **authors** precision/recall/F1, micro over the set (a name matches a gold name with
the same last name and first initial, accents and dots folded; each gold name once); **year
right** (the record's year or one of its ``year_also_accepted``); BibTeX **type right**; arXiv
id and DOI right where either side has one.

    .venv/bin/python benchmarks/bench_metadata.py [--set shared|corpus-dev|corpus-heldout|all]
        [--verbose]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared")).resolve()
CORPUS = Path(os.environ.get("EPISTEME_PAPERS", Path.home() / ".cache" / "episteme" / "papers"))
GOLD = REPO / "benchmarks" / "gold"

from episteme.pdf.meta import bibtex  # noqa: E402
from episteme.pdf.split import split_pdf  # noqa: E402


def fold_title(t: str) -> str:
    t = unicodedata.normalize("NFKC", t or "").casefold()
    t = re.sub(r"[‐-―−]", "-", t).replace("’", "'").replace("“", '"').replace("”", '"')
    t = re.sub(r"\s+", " ", t).strip()
    t = re.sub(r"\s+([,.:;!?)])", r"\1", t)
    return t.rstrip(".").strip()


def _ascii(s: str) -> str:
    s = s.replace("Ł", "L").replace("ł", "l").replace("ß", "ss")
    return unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode().casefold()


def name_key(name: str) -> tuple[str, str]:
    """(last name, first initial), accents and dots folded: 'Daniel S. Weld' -> ('weld', 'd')."""
    words = [w for w in re.split(r"[\s.]+", _ascii(name)) if w]
    if not words:
        return ("", "")
    return (words[-1], words[0][0] if len(words) > 1 else "")


def author_counts(got: list[str], gold: list[str]) -> tuple[int, int, int]:
    """(matched, found, gold) with each gold name matched once."""
    left = [name_key(g) for g in gold]
    tp = 0
    for n in got:
        k = name_key(n)
        if k in left:
            left.remove(k)
            tp += 1
    return tp, len(got), len(gold)


def entry_type(entry: str) -> str:
    m = re.match(r"@(\w+)\{", entry)
    return m.group(1) if m else ""


def _base_arxiv(a: str) -> str:
    return re.sub(r"v\d+$", "", (a or "").strip().lower())


def manifest_split() -> dict[str, str]:
    rows = (REPO / "benchmarks" / "papers" / "MANIFEST.tsv").read_text().splitlines()
    head = rows[0].split("\t")
    return {r.split("\t")[0]: r.split("\t")[head.index("split")] for r in rows[1:] if r.strip()}


def records(which: str) -> list[tuple[dict, Path]]:
    """(gold record, PDF path) of one set."""
    out = []
    if which == "shared":
        for line in (GOLD / "metadata-shared.jsonl").read_text().splitlines():
            if line.strip():
                g = json.loads(line)
                folder = "papers" if g["set"] == "dev" else "papers-more"
                out.append((g, SHARED / "data" / folder / g["paper"]))
        return out
    split = manifest_split()
    want = which.split("-", 1)[1]
    for line in (GOLD / "metadata-corpus.jsonl").read_text().splitlines():
        if line.strip():
            g = json.loads(line)
            if split.get(g["paper"]) == want:
                out.append((g, CORPUS / g["paper"]))
    return out


def run(which: str, verbose: bool) -> str:
    rows = []
    tot = {"title": 0, "year": 0, "type": 0, "n": 0, "a": [0, 0, 0], "arxiv": [0, 0],
           "doi": [0, 0]}
    cpu = 0.0
    for g, pdf in records(which):
        if not pdf.is_file():
            print(f"missing: {pdf}", file=sys.stderr)
            continue
        c0 = time.process_time()
        res = split_pdf(pdf)
        cpu += time.process_time() - c0
        meta = res.meta or {}
        entry = bibtex({"title": res.title, "authors": res.authors, "meta": meta})
        t_ok = fold_title(res.title) == fold_title(g["title"])
        tp, nf, ng = author_counts(res.authors, g["authors"])
        years = {g.get("year"), *g.get("year_also_accepted", [])} - {None}
        y_ok = meta.get("year") in years if years else not meta.get("year")
        k_ok = entry_type(entry) == g.get("entry_type", "")
        tot["n"] += 1
        tot["title"] += t_ok
        tot["year"] += y_ok
        tot["type"] += k_ok
        tot["a"] = [a + b for a, b in zip(tot["a"], (tp, nf, ng), strict=True)]
        ids = []
        for key, mkey, norm in (("arxiv", "arxiv_id", _base_arxiv), ("doi", "doi", str.lower)):
            want, got = norm(g.get(key) or ""), norm(meta.get(mkey) or "")
            if want or got:
                tot[key][1] += 1
                tot[key][0] += want == got
                ids.append("ok" if want == got else f"{got or '-'} (gold {want or '-'})")
            else:
                ids.append("")
        rows.append(
            f"| {pdf.name} | {'yes' if t_ok else 'no'} | {tp}/{nf} | {tp}/{ng} | "
            f"{meta.get('year', '-')}{'' if y_ok else ' (gold ' + str(g.get('year')) + ')'} | "
            f"{entry_type(entry)}{'' if k_ok else ' (gold ' + g.get('entry_type', '') + ')'} | "
            f"{ids[0]} | {ids[1]} |")
        if verbose:
            print(f"{pdf.name}\n  title: {res.title!r}\n  gold:  {g['title']!r}\n"
                  f"  authors: {res.authors}\n  gold:    {g['authors']}\n  meta: {meta}",
                  file=sys.stderr)
    n = max(tot["n"], 1)
    tp, nf, ng = tot["a"]
    p = tp / nf if nf else 0.0
    r = tp / ng if ng else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    head = (
        f"Machine: {os.cpu_count()} cores (nproc), Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end "
        f"{os.getloadavg()[0]:.1f}; split CPU {cpu:.1f} s over {tot['n']} papers.\n\n"
        f"**title exact {tot['title'] / n:.3f}** ({tot['title']}/{tot['n']}), "
        f"**authors P {p:.3f} / R {r:.3f} / F1 {f1:.3f}** ({tp} of {nf} found, {ng} gold), "
        f"**year right {tot['year'] / n:.3f}** ({tot['year']}/{tot['n']}), "
        f"BibTeX type right {tot['type'] / n:.3f} ({tot['type']}/{tot['n']}), "
        f"arXiv id right {tot['arxiv'][0]}/{tot['arxiv'][1]}, DOI right "
        f"{tot['doi'][0]}/{tot['doi'][1]} (where either side has one).\n"
    )
    table = ["| paper | title exact | authors right/found | authors right/gold | year | "
             "BibTeX type | arXiv | DOI |", "|---|---|---|---|---|---|---|---|", *rows]
    return head + "\n" + "\n".join(table) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=["shared", "corpus-dev", "corpus-heldout", "all"],
                    default="shared", help="corpus-heldout: measure once, at the end")
    ap.add_argument("--verbose", action="store_true", help="print each paper's values")
    args = ap.parse_args()
    sets = ["shared", "corpus-dev", "corpus-heldout"] if args.set == "all" else [args.set]
    for which in sets:
        print(f"## {which}\n")
        print(run(which, args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
