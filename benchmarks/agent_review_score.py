"""Score the review-path judgments of benchmarks/RESULTS-agent-path.md (issue 31 measurement).

Reads benchmarks/agent-path/review_judgments.jsonl (the agent's verdict per claim, from the
compact output alone and after the skill's --full retry), tool_verdicts.jsonl (trace.py's
verdict and output size per claim) and the labels of benchmarks/verify_corpus.jsonl, and prints
true kept / false rejected for the agent and for the tool alone, red-mark precision and sizes.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> None:
    """Print the figures."""
    labels = {r["id"]: r["label"] for r in _rows(HERE / "verify_corpus.jsonl")}
    judged = {r["n"]: r for r in _rows(HERE / "agent-path" / "review_judgments.jsonl")}
    tool = {r["n"]: r for r in _rows(HERE / "agent-path" / "tool_verdicts.jsonl")}
    true_ns = [n for n, r in judged.items() if labels[r["id"]] == "supported"]
    false_ns = [n for n in judged if n not in true_ns]
    for col in ("agent_compact", "agent_after_retry"):
        kept = sum(judged[n][col] == "true" for n in true_ns)
        rejected = sum(judged[n][col] == "false" for n in false_ns)
        print(f"{col}: true kept {kept}/{len(true_ns)}, false rejected {rejected}/{len(false_ns)}")
    kept = sum(tool[n]["verdict"] == "supported" for n in true_ns)
    rejected = sum(tool[n]["verdict"] != "supported" for n in false_ns)
    red = [n for n in tool if tool[n]["verdict"] == "contradicted"]
    red_right = sum(labels[judged[n]["id"]] == "contradicted" for n in red)
    print(f"tool alone: true kept {kept}/{len(true_ns)}, false rejected {rejected}/{len(false_ns)}, "
          f"red marks right {red_right}/{len(red)}")
    sizes = [tool[n]["bytes"] for n in tool]
    print(f"compact output per claim: median {statistics.median(sizes)} B, max {max(sizes)} B "
          f"(~{statistics.median(sizes) / 4:.0f} / {max(sizes) / 4:.0f} tokens)")


if __name__ == "__main__":
    main()
