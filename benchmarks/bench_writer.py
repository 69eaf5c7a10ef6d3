#!/usr/bin/env python3
"""Benchmark the extractive wiki writer on a sequence of papers written into one wiki.

    python benchmarks/bench_writer.py [--papers attention_1706.03762v5.pdf,bert_1810.04805v2.pdf,...]
                                      [--shared ../shared] [--work /tmp/episteme-bench-writer]
                                      [--out benchmarks/RESULTS-writer.md]

For each paper, in order (the shipped ``examples/sample-paper.pdf`` first): the time to store it
(``ingest_paper``) and to write it (``write_paper``, extractive), the sections written and
skipped, sections created and updated (an update = the paper merged into an existing topic),
and the share of quoted sentences found verbatim in the paper (must be 100 %: the mode never
invents text).  Then, for the whole wiki: index/page consistency problems, wiki-lint errors
and warnings, the link graph (pages, edges, connected components, whether every paper page
reaches every other), and whether a second run from the same stores gives byte-identical pages.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))
DEFAULT_PAPERS = "attention_1706.03762v5.pdf,bert_1810.04805v2.pdf,vit_2010.11929.pdf,resnet_1512.03385v1.pdf"
TODAY = dt.date(2026, 11, 29)


def quote_fidelity(wiki: Path, settings) -> tuple[int, int]:
    from episteme.stores.sqlite import open_store
    from episteme.wiki.edit import iter_page_paths
    from episteme.wiki.sections import parse_page

    with open_store(settings, readonly=True) as store:
        texts = {p["id"]: " ".join(" ".join(s["section_text"] for s in store.sections(p["id"])).split())
                 for p in store.papers()}
    total = ok = 0
    for rel in iter_page_paths(wiki):
        for sec in parse_page((wiki / rel).read_text(encoding="utf-8")).sections:
            for line in sec.body.split("\n"):
                m = re.match(r"^> (.+)$", line) or re.match(r"^- “(.+)” \(", line)
                if m:
                    total += 1
                    ok += any(m.group(1) in texts.get(p, "") for p in sec.sources)
    return ok, total


def topic_sections(wiki: Path) -> list[tuple[str, str, list[str]]]:
    """``(page, heading, sources)`` of every section on a top-level topic page (not a paper's
    page or a page under it, nor the wiki's own index pages)."""
    from episteme.wiki.edit import iter_page_paths
    from episteme.wiki.sections import parse_page

    out = []
    for rel in iter_page_paths(wiki):
        if "/" in rel or rel in ("index.md", "log.md", "SCHEMA.md", "home.md"):
            continue
        for sec in parse_page((wiki / rel).read_text(encoding="utf-8")).sections:
            out.append((rel, sec.title, list(sec.sources)))
    return out


def all_caps_titles(wiki: Path) -> list[str]:
    """Page and section headings written in capitals ("ENCODER", "INTRODUCTION"): every word in
    capitals and one of them 7 letters or more (a dataset's acronyms, "PASCAL VOC", "MS COCO",
    are its name)."""
    from episteme.wiki.edit import iter_page_paths

    out = []
    for rel in iter_page_paths(wiki):
        for title in re.findall(r"^#+ (.+)$", (wiki / rel).read_text(encoding="utf-8"), re.M):
            words = re.findall(r"[A-Za-z]{2,}", title)
            if words and all(w.isupper() for w in words) and max(map(len, words)) >= 7:
                out.append(f"{rel}: {title}")
    return out


def snapshot(wiki: Path) -> str:
    from episteme.wiki.edit import iter_page_paths

    h = hashlib.sha256()
    for rel in [*iter_page_paths(wiki), "index.md", "index.json", "log.md"]:
        h.update(rel.encode())
        h.update((wiki / rel).read_bytes())
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", default=DEFAULT_PAPERS)
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    ap.add_argument("--work", default="/tmp/episteme-bench-writer")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "RESULTS-writer.md"))
    args = ap.parse_args()

    from episteme.compile.writer import write_paper
    from episteme.config import load_settings
    from episteme.graph import WikiGraph
    from episteme.ingest.pipeline import ingest_paper
    from episteme.stores.embedding import load_embedder
    from episteme.wiki.edit import check_index_consistency

    pdfs = [REPO / "examples" / "sample-paper.pdf"]
    pdfs += [Path(args.shared) / "data" / "papers" / name for name in args.papers.split(",") if name]
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    wiki = work / "wiki"
    settings = load_settings(wiki, env={}, dotenv=None)
    embedder = load_embedder()
    rows = []
    stored = []
    for pdf in pdfs:
        t0 = time.perf_counter()
        ing = ingest_paper(settings, pdf, progress=False, embedder=embedder)
        stored.append((ing, time.perf_counter() - t0))
    shutil.copytree(wiki, work / "stores")  # the stores only, for the determinism check
    for ing, t_ingest in stored:
        t1 = time.perf_counter()
        out = write_paper(settings, ing["paper"], writer="extractive", today=TODAY, embedder=embedder)
        t2 = time.perf_counter()
        rows.append((ing["paper"], ing["sections_indexed"], len(out["skipped_sections"]), len(out["new_sections"]),
                     len(out["updated_sections"]), len(out["wiki_pages_updated"]), t_ingest, t2 - t1))
        print(f"{ing['paper']}: ingest {t_ingest:.1f}s, write {t2 - t1:.1f}s", file=sys.stderr)

    ok, total = quote_fidelity(wiki, settings)
    problems = check_index_consistency(wiki)
    lint = subprocess.run([sys.executable, str(REPO / "plugin/scripts/wiki_lint.py"), "--wiki", str(wiki), "--format", "json"],
                          capture_output=True, text=True)
    findings = json.loads(lint.stdout).get("findings", []) if lint.stdout.strip() else []
    sev: dict[str, int] = {}
    for f in findings:
        sev[f.get("severity", "?")] = sev.get(f.get("severity", "?"), 0) + 1
    g = WikiGraph.build(wiki)
    n = len(g.ids)
    papers = [i for i, pid in enumerate(g.ids) if pid.startswith("papers/")]
    comp_of: dict[int, int] = {}
    label = 0
    for start in range(n):
        if start in comp_of:
            continue
        stack = [start]
        comp_of[start] = label
        while stack:
            u = stack.pop()
            for v in [*g.out_edges[u], *g.in_edges[u]]:
                if v not in comp_of:
                    comp_of[v] = label
                    stack.append(v)
        label += 1
    comps = label
    papers_connected = len({comp_of[i] for i in papers}) == 1
    edges = sum(len(e) for e in g.out_edges)

    topic = topic_sections(wiki)
    multi = [x for x in topic if len(x[2]) >= 2]
    caps = all_caps_titles(wiki)
    n_top = len({page for page, _, _ in topic})

    # determinism: the same papers into a fresh copy of the stores give the same bytes
    first = snapshot(wiki)
    wiki2 = work / "stores"
    settings2 = load_settings(wiki2, env={}, dotenv=None)
    for paper, *_ in rows:
        write_paper(settings2, paper, writer="extractive", today=TODAY, embedder=embedder)
    same = snapshot(wiki2) == first

    nproc = os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "# Extractive wiki writer",
        "",
        f"Produced by `.venv/bin/python benchmarks/bench_writer.py` on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"machine: {nproc} cores (nproc), Python {platform.python_version()}, load average at the end {load} "
        "(other jobs running: times are pessimistic).",
        "",
        "Papers stored, then written one after the other into one wiki (the shipped sample paper first).",
        "",
        "| paper | sections | skipped | created | updated (merged) | pages touched | ingest s | write s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for paper, secs, skipped, created, updated, pages, ti, tw in rows:
        lines.append(f"| {paper} | {secs} | {skipped} | {created} | {updated} | {pages} | {ti:.1f} | {tw:.1f} |")
    lines += [
        "",
        "| whole wiki | value |",
        "|---|---|",
        f"| quoted sentences found verbatim in their source | {ok}/{total} ({100 * ok / max(1, total):.1f} %) |",
        f"| index.md / index.json / pages disagreements | {len(problems)} |",
        f"| wiki-lint findings | {', '.join(f'{k}: {v}' for k, v in sorted(sev.items())) or 'none'} |",
        f"| pages / links / connected components | {n} / {edges} / {comps} |",
        f"| every paper page reaches every other | {'yes' if papers_connected else 'no'} |",
        f"| second run from the same stores byte-identical | {'yes' if same else 'NO'} |",
        f"| top-level topic pages per paper | {n_top / max(1, len(rows)):.2f} ({n_top} pages) |",
        f"| topic sections drawing on >= 2 papers | {len(multi)}/{len(topic)} "
        f"({100 * len(multi) / max(1, len(topic)):.1f} %) |",
        f"| headings in ALL CAPS | {len(caps)} |",
    ]
    if multi:
        lines += ["", "Topic sections drawing on two or more papers (each merge labelled by hand in "
                  "`benchmarks/writer_merge_labels.jsonl`):", ""]
        lines += [f"- `{page}` {title!r}: {', '.join(srcs)}" for page, title, srcs in multi]
    report = "\n".join(lines) + "\n"
    print(report)
    Path(args.out).write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
