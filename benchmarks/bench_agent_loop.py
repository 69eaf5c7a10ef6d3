"""The wiki-ingest skill's loop inside Claude Code: script calls and seconds per paper, and the
plan's time on a wiki of 40+ sections.

    python benchmarks/bench_agent_loop.py [--papers DIR]

For each of three real papers, in order, into one fresh wiki: ingest.py -> plan_ingest.py ->
write_section.py --batch (the paper page and every topic section; from the second paper on,
also an update and an append of the best related sections) -> wiki_lint.py, exactly as the
skill teaches (the batch is built from the plan's JSON the way tests/test_agent_loop.py does).
Then the plan of a fourth paper against the grown wiki, 3 runs.  The baseline is the old
loop's measured cost from issue 12 (15-40 calls per paper, ~5.5 s per `plan --section`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "plugin"))

from helpers.agent import batch_for, script_env, sections_to_read  # noqa: E402

SCRIPTS = REPO / "plugin" / "scripts"
PAPERS = ["attention_1706.03762v5.pdf", "gan_1406.2661v1.pdf", "bert_1810.04805v2.pdf"]
FOURTH = "resnet_1512.03385v1.pdf"


def call(script: str, *args: str, stdin: str | None = None) -> tuple[subprocess.CompletedProcess, float]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, str(SCRIPTS / script), *args], input=stdin,
                       capture_output=True, text=True, env=script_env(), timeout=1200)
    if p.returncode not in (0,):
        raise SystemExit(f"{script}: {p.stderr[-2000:]}")
    return p, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--papers", type=Path, default=REPO.parent / "shared" / "data" / "papers")
    args = ap.parse_args()
    wiki = Path(tempfile.mkdtemp()) / "wiki"
    print("| paper | calls | ingest s | plan s | batch write s | lint s | total s | writes |")
    print("|---|---|---|---|---|---|---|---|")
    for i, name in enumerate(PAPERS):
        times = []
        p, t = call("ingest.py", str(args.papers / name), "--wiki", str(wiki), "--no-progress")
        times.append(t)
        paper = json.loads(p.stdout)["paper"]
        p, t = call("plan_ingest.py", paper, "--wiki", str(wiki))
        plan = json.loads(p.stdout)
        q, t2 = call("plan_ingest.py", paper, "--wiki", str(wiki), "--section",
                     ",".join(sections_to_read(plan, n_topics=None)))
        times.append(t + t2)
        lines, _ = batch_for(plan, json.loads(q.stdout), update_one=i > 0, n_topics=None,
                             fallback_ids=sorted(json.loads((wiki / "index.json").read_text())) if i else [])
        p, t = call("write_section.py", "--wiki", str(wiki), "--batch", "--subject", paper,
                    stdin="\n".join(map(json.dumps, lines)))
        times.append(t)
        _, t = call("wiki_lint.py", "--wiki", str(wiki))
        times.append(t)
        print(f"| {paper} | 5 | " + " | ".join(f"{x:.2f}" for x in times)
              + f" | {sum(times):.1f} | {len(lines)} |")
    p, _ = call("ingest.py", str(args.papers / FOURTH), "--wiki", str(wiki), "--no-progress")
    paper = json.loads(p.stdout)["paper"]
    runs = []
    for _ in range(3):
        p, t = call("plan_ingest.py", paper, "--wiki", str(wiki))
        runs.append(t)
    plan = json.loads(p.stdout)
    print()
    print("| plan of a 4th paper | wiki sections | paper sections | median of 3 | target |")
    print("|---|---|---|---|---|")
    print(f"| {paper} | {plan['wiki_sections']} | {len(plan['sections'])} | "
          f"{statistics.median(runs):.2f} s | <= 2 s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
