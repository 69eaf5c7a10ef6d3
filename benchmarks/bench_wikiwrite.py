"""Wiki write primitives at scale: per-section write latency (normal, incremental path), the
agent's ``write_section.py`` call, and the full ``rebuild_indexes`` recovery scan.

    .venv/bin/python benchmarks/bench_wikiwrite.py [--sections 5000 10000]

Builds synthetic wikis (pages written directly, indexes by ``rebuild_indexes``) in a temp
folder and prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))

from episteme.wiki.edit import (  # noqa: E402
    WikiWriter,
    check_index_consistency,
    dump_frontmatter,
    rebuild_indexes,
)
from episteme.wiki.sections import WikiSection, format_section_id  # noqa: E402

FILLER = " ".join(["attention weights over keys and values, see [[topic-1]]"] * 40)


def build(wiki: Path, n_sections: int, per_page: int = 4) -> None:
    shutil.copytree(REPO / "wiki", wiki, ignore=shutil.ignore_patterns(".episteme"))
    (wiki / "raw").mkdir(exist_ok=True)
    (wiki / "raw" / "a.pdf").write_bytes(b"x")
    sid = 0
    for p in range(0, n_sections, per_page):
        secs = []
        for _ in range(min(per_page, n_sections - p)):
            sid += 1
            secs.append(WikiSection(id=format_section_id(sid), title=f"Section {sid}",
                                    description=f"What section {sid} covers", sources=["a.pdf"], body=FILLER).render())
        fm = dump_frontmatter({"title": f"Topic {p}", "type": "concept", "sources": ["a.pdf"]})
        folder = wiki / f"f{p % 20}"
        folder.mkdir(exist_ok=True)
        (folder / f"topic-{p}.md").write_text(f"---\n{fm}\n---\n" + "\n".join(secs))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sections", type=int, nargs="+", default=[1000, 5000, 10000])
    ap.add_argument("--writes", type=int, default=30)
    args = ap.parse_args()
    rows = []
    for n in args.sections:
        with tempfile.TemporaryDirectory() as tmp:
            wiki = Path(tmp) / "wiki"
            build(wiki, n)
            t = time.perf_counter()
            rebuild_indexes(wiki)
            t_rebuild = time.perf_counter() - t
            t = time.perf_counter()
            assert check_index_consistency(wiki) == []
            t_check = time.perf_counter() - t
            single = []
            for i in range(args.writes):
                t = time.perf_counter()
                with WikiWriter(wiki, known_sources={"a.pdf"}) as w:
                    if i % 2:
                        w.update_section("f0/topic-0", "sec_001", body=f"v{i} {FILLER}")
                    else:
                        w.create_section(f"new-{i % 5}", title=f"New {i}", description="d", body=FILLER, sources=["a.pdf"])
                single.append(time.perf_counter() - t)
            t = time.perf_counter()
            with WikiWriter(wiki, op="ingest", subject="a.pdf", known_sources={"a.pdf"}) as w:
                for i in range(args.writes):
                    w.create_section(f"batch-{i % 5}", title=f"B {i}", description="d", body=FILLER, sources=["a.pdf"])
            t_batch = (time.perf_counter() - t) / args.writes
            script = []
            for i in range(5):
                t = time.perf_counter()
                subprocess.run([sys.executable, str(REPO / "plugin/scripts/write_section.py"), "--wiki", str(wiki),
                                "--page", "script-page", "--title", f"S {i}", "--description", "d", "--source", "a.pdf"],
                               input=FILLER, capture_output=True, text=True, check=True)
                script.append(time.perf_counter() - t)
            rows.append((n, t_rebuild, t_check, statistics.median(single), t_batch, statistics.median(script)))
    print(f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}\n")
    print("| sections | rebuild_indexes (s) | check_index_consistency (s) | one write, own batch (ms, median) "
          "| write inside a batch (ms/section) | write_section.py call (ms, median) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, rb, ck, one, batch, sc in rows:
        print(f"| {n} | {rb:.2f} | {ck:.2f} | {one * 1000:.1f} | {batch * 1000:.1f} | {sc * 1000:.0f} |")


if __name__ == "__main__":
    main()
