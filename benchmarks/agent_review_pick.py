"""Pick the 40 review-path claims of verify_corpus.jsonl and hide their labels (issue 31 measurement).

Per paper (sorted): true `-Na` claims at indices 1,4,7(,10) -- four for the first two papers,
three for the rest (20) -- and false ones: `-Nb` at indices 2,5(,8) (three for the first two
papers, two for the rest: 14) plus the first `-Nu` of each paper (6). Shuffled with seed 31 and
numbered, so the reviewer judges `q01..q40` without seeing ids or labels. Writes
OUT/blind.jsonl (n, paper, claim) and OUT/key.jsonl (n, id, label).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path


def main(corpus: str, out: str) -> None:
    """Write the blind claim list and its key."""
    rows = [json.loads(line) for line in Path(corpus).read_text().splitlines() if line.strip()]
    papers = sorted({r["paper"] for r in rows})
    by_id = {r["id"]: r for r in rows}
    picked = []
    for i, paper in enumerate(papers):
        stem = paper.removesuffix(".pdf")
        true_idx = [1, 4, 7, 10] if i < 2 else [1, 4, 7]
        false_idx = [2, 5, 8] if i < 2 else [2, 5]
        picked += [by_id[f"{stem}-{n}a"] for n in true_idx]
        picked += [by_id[f"{stem}-{n}b"] for n in false_idx]
        picked.append(next(r for r in rows if r["paper"] == paper and r["id"].endswith("u")))
    random.Random(31).shuffle(picked)
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    with open(outdir / "blind.jsonl", "w") as b, open(outdir / "key.jsonl", "w") as k:
        for n, r in enumerate(picked, 1):
            b.write(json.dumps({"n": n, "paper": r["paper"], "claim": r["claim"]}) + "\n")
            k.write(json.dumps({"n": n, "id": r["id"], "label": r["label"], "kind": r["kind"]}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
