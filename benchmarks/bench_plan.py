"""What the agent reads to plan a paper, before and after the outline-first plan (issue 34).

Two measures, each with one checkout as "before" (``--base``, e.g. /work/base) and this one:

* ``tokens``: per paper, the bytes ``plan PAPER`` prints (old: every section's text in one
  reply; new: the outline), and what the agent reads in all when it then asks for the text of
  every writable section (new: outline + ``--section`` all), against the paper's own text (the
  writable sections' characters).  Tokens are bytes / 4, the convention of the issue's table.
* ``related``: the (paper section, wiki section) pairs each plan lists as related, on a wiki
  written from one paper with the others only stored, against pairs labelled by hand in
  ``plan_related_labels.jsonl``: every same-topic pair found by reading every section of these
  papers against every topic page of the wiki (a closed list: any other pair is not the same
  topic).  Precision = true pairs listed / pairs listed; recall = true pairs listed / true pairs.

    python benchmarks/bench_plan.py tokens --wiki W --base /work/base PAPER...
    python benchmarks/bench_plan.py related --wiki W --base /work/base PAPER...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "benchmarks" / "plan_related_labels.jsonl"


def plan(tree: Path, wiki: Path, paper: str, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIKI_", "ANTHROPIC_", "LLM_"))}
    env["PYTHONPATH"] = str(tree / "plugin")
    p = subprocess.run([sys.executable, "-m", "episteme.cli", "plan", paper, "--wiki", str(wiki), *args],
                       capture_output=True, env=env, check=True)
    return p.stdout


def tokens(args) -> None:
    print("| paper | paper text | before: plan | after: outline | after: outline + all text | after / paper text |")
    print("|---|---|---|---|---|---|")
    for paper in args.papers:
        old = plan(args.base, args.wiki, paper)
        outline = plan(REPO, args.wiki, paper)
        data = json.loads(outline)
        names = ",".join(s["name"] for s in data["sections"])
        text = plan(REPO, args.wiki, paper, "--section", names)
        own = sum(s["chars"] for s in data["sections"])
        t = lambda n: round(n / 4)  # noqa: E731
        both = len(outline) + len(text)
        print(f"| {paper} | {t(own):,} | {t(len(old)):,} | {t(len(outline)):,} | {t(both):,} | {both / own:.2f} |")


def _pairs_old(raw: bytes, paper: str) -> list[tuple[str, str, str]]:
    data = json.loads(raw)
    out = []
    for s in data["sections"]:
        name = s.get("name") or s["section_id"].split("#", 1)[-1]
        for r in s["related"]:
            out.append((paper, name, r["title"], r["page"]))
    return out


def related(args) -> None:
    labels: dict[tuple[str, str, str], bool] = {}
    if LABELS.exists():
        for line in LABELS.read_text(encoding="utf-8").splitlines():
            if line.strip():
                x = json.loads(line)
                labels[(x["paper"], x["section"], x["wiki_page"])] = bool(x["same_topic"])
    lists: dict[str, set[tuple[str, str, str]]] = {"before": set(), "after": set()}
    per_paper: dict[str, dict[str, set]] = {}
    for paper in args.papers:
        for version, tree, extra in (("before", args.base, ["--brief", "--k", "5"]), ("after", REPO, ["--k", "5"])):
            got = {(p, n, page) for p, n, _t, page in _pairs_old(plan(tree, args.wiki, paper, *extra), paper)}
            lists[version] |= got
            per_paper.setdefault(paper, {})[version] = got
    # the labels are closed: they list every same-topic pair found by reading the titles (and,
    # when unsure, the text) of every section of these papers against every topic page of the
    # wiki; a listed pair not in them is not the same topic
    true = {k for k, v in labels.items() if v and k[0] in args.papers}
    labels.update({k: False for k in lists["before"] | lists["after"] if k not in labels})
    print("| version | paper | pairs listed | labelled | same topic | precision | recall |")
    print("|---|---|---|---|---|---|---|")
    for version in ("before", "after"):
        for paper in [*args.papers, "all"]:
            got = lists[version] if paper == "all" else per_paper[paper][version]
            lab = [k for k in got if k in labels]
            hit = [k for k in lab if labels[k]]
            t = true if paper == "all" else {k for k in true if k[0] == paper}
            prec = f"{len(hit) / len(lab):.2f}" if lab else "-"
            rec = f"{len(hit) / len(t):.2f}" if t else "-"
            print(f"| {version} | {paper} | {len(got)} | {len(lab)} | {len(hit)} | {prec} | {rec} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("tokens", "related"))
    ap.add_argument("papers", nargs="+")
    ap.add_argument("--wiki", type=Path, required=True)
    ap.add_argument("--base", type=Path, required=True, help="the checkout measured as 'before'")
    args = ap.parse_args()
    (tokens if args.what == "tokens" else related)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
