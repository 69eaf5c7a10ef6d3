#!/usr/bin/env python3
"""Tables, figures, algorithms and footnotes found by the splitter, against the gold objects.

For each paper with gold in ``../shared/data/gold/objects`` (the 10 dev papers): split it and
compare ``SplitResult.objects`` with the gold list.

* found: a gold caption object (table / figure / algorithm) is found when an object of the same
  kind and label exists; a gold footnote when a footnote on the same page starts with the same
  words (the first five, folded).
* left in body: a gold object whose first eight words (folded) still occur in a section's text
  (references excluded) -- caption or footnote text that pollutes the prose.
* quotes kept: the verbatim body-text quotes of ``gold/dev_trace.jsonl`` and of the non-table
  claims of ``gold/dev_verify.jsonl`` that still occur in some section's text: taking objects
  out must not take prose with them.  (One dev_trace quote is a table's rows, printed without
  an in-table flag: GAN's Table 1; it is lost from the prose when the table takes its rows.)
* number-run sentences in prose: sentences of the section texts (references excluded) of 8+
  words, at least 40% of them with a digit -- table rows and plot labels left in the running
  text, where they interrupt sentences and turn up in answers.  A proxy (no gold marks table
  cells), also counted on the 6 ``papers-more`` papers.

    .venv/bin/python benchmarks/bench_objects.py [--verbose]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared")).resolve()

from episteme.pdf.split import split_pdf  # noqa: E402
from episteme.pdf.text import normalize_text  # noqa: E402


def fold(s: str) -> str:
    s = normalize_text(s).lower()
    s = re.sub(r"-\s+", "", s)  # a word hyphenated at a line break, joined or not
    return re.sub(r"[^a-z0-9]+", "", s)


def words(s: str, n: int) -> str:
    return fold(" ".join(s.split()[:n]))


def number_runs(res) -> int:
    """Prose sentences (references excluded) of 8+ words, at least 40% of them with a digit:
    table rows and plot labels left in the running text (a proxy: no gold marks table cells)."""
    from episteme.pdf.passages import split_sentences

    n = 0
    for s in res.sections:
        if s.kind == "references":
            continue
        for a, b in split_sentences(s.text):
            ws = s.text[a:b].split()
            n += len(ws) >= 8 and sum(any(c.isdigit() for c in w) for w in ws) >= 0.4 * len(ws)
    return n


def run(verbose: bool) -> str:
    gold_dir = SHARED / "data" / "gold" / "objects"
    papers = SHARED / "data" / "papers"
    quotes: dict[str, list[str]] = {}
    for name in ("dev_trace.jsonl", "dev_verify.jsonl"):
        for line in (SHARED / "data" / "gold" / name).read_text().splitlines():
            d = json.loads(line)
            if d.get("in_table") or not d.get("gold_quotes"):
                continue
            if re.match(r"^(Table|Figure|Algorithm|footnote)", d.get("section") or ""):
                continue
            quotes.setdefault(d["paper"], []).extend(d["gold_quotes"])
    rows = []
    tot = dict(gold=0, found=0, leaked=0, q=0, qk=0, ours=0, t=0.0, nr=0)
    for gf in sorted(gold_dir.glob("*.json")):
        gold = json.loads(gf.read_text())
        t0 = time.perf_counter()
        res = split_pdf(papers / gold["paper"])
        dt = time.perf_counter() - t0
        body = fold(" ".join(s.text for s in res.sections if s.kind != "references"))
        labels = {(o.kind, o.label) for o in res.objects}
        fns = [(o.page, fold(o.caption)) for o in res.objects if o.kind == "footnote"]
        found = leaked = 0
        missed = []
        for g in gold["objects"]:
            if g["kind"] == "footnote":
                key = words(g["caption"], 5)
                ok = any(p == g["page"] and t.startswith(key[: max(len(key) - 2, 4)])
                         for p, t in fns)
            else:
                ok = (g["kind"], g["label"]) in labels
            found += ok
            if not ok:
                missed.append(g["label"] + f" p{g['page']}")
            if words(g["caption"], 8) and words(g["caption"], 8) in body:
                leaked += 1
                if verbose:
                    print(f"  left in body: {g['label']} p{g['page']}: {g['caption'][:60]}",
                          file=sys.stderr)
        qs = quotes.get(gold["paper"], [])
        kept = sum(fold(q) in body for q in qs)
        if verbose:
            for q in qs:
                if fold(q) not in body:
                    print(f"  quote lost: {q[:90]}", file=sys.stderr)
        n = len(gold["objects"])
        nr = number_runs(res)
        rows.append((gold["paper"], n, len(res.objects), found, leaked, len(qs), kept, nr, dt))
        for k, v in zip(("gold", "ours", "found", "leaked", "q", "qk", "nr", "t"),
                        (n, len(res.objects), found, leaked, len(qs), kept, nr, dt), strict=True):
            tot[k] += v
        if verbose:
            print(f"{gold['paper']}: missed {missed}", file=sys.stderr)
    out = ["| paper | gold objects | ours | found | left in body | body quotes kept "
           "| number-run sentences in prose | split s |",
           "|---|---|---|---|---|---|---|---|"]
    for p, n, ours, f, lk, q, qk, nr, dt in rows:
        out.append(f"| {p} | {n} | {ours} | {f / n:.3f} | {lk / n:.3f} | {qk}/{q} | {nr} "
                   f"| {dt:.2f} |")
    out.append(
        f"| **all** | {tot['gold']} | {tot['ours']} | **{tot['found'] / tot['gold']:.3f}** | "
        f"**{tot['leaked'] / tot['gold']:.3f}** | {tot['qk']}/{tot['q']} | {tot['nr']} "
        f"| {tot['t']:.1f} |")
    more = sorted((SHARED / "data" / "papers-more").glob("*.pdf"))
    if more:  # no object gold for these: only the proxy
        out += ["", "| papers-more paper | number-run sentences in prose |", "|---|---|"]
        counts = [(p.name, number_runs(split_pdf(p))) for p in more]
        out += [f"| {name} | {nr} |" for name, nr in counts]
        out.append(f"| **all** | {sum(nr for _n, nr in counts)} |")
    header = (
        f"Machine: {os.cpu_count()} cores (nproc), Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end "
        f"{os.getloadavg()[0]:.1f}.\nTargets: found >= 0.90, left in body <= 0.03.\n"
    )
    return header + "\n" + "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", action="store_true", help="list the gold objects missed")
    args = ap.parse_args()
    print(run(args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
