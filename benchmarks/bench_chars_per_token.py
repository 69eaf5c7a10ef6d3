"""Characters per token of paper text: the figure behind ``episteme.llm.budget.CHARS_PER_TOKEN``,
which turns ``LLM_CONTEXT`` (tokens) into characters of evidence per model call.

No language model's tokenizer ships with episteme (and none may be fetched for this), so the
count uses the embedding model's WordPiece tokenizer (30k-word vocabulary) as a proxy: the BPE
tokenizers of current chat models (100k+ vocabularies) split English into fewer pieces, so a
ratio chosen under the proxy's lowest paper leaves a margin for them.

    PYTHONPATH=plugin .venv/bin/python benchmarks/bench_chars_per_token.py [PAPERS_DIR]

Prints one row per paper (characters of its sections' text, tokens, characters per token) and
the minimum / median / maximum; results in benchmarks/RESULTS-llm-budget.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))


def main(argv: list[str]) -> int:
    from episteme.pdf.split import split_pdf
    from episteme.stores.embedding import prepare
    from tokenizers import Tokenizer

    papers = Path(argv[0]) if argv else REPO.parent / "shared" / "data" / "papers"
    tok = Tokenizer.from_file(str(prepare() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    ratios = []
    for pdf in sorted(papers.glob("*.pdf")):
        result = split_pdf(str(pdf))
        sections = result["sections"] if isinstance(result, dict) else getattr(result, "sections", result)
        text = "\n\n".join(s["text"] if isinstance(s, dict) else s.text for s in sections)
        n = len(tok.encode(text).ids)
        ratios.append(len(text) / max(n, 1))
        print(f"{pdf.name[:44]:44s} {len(text):8d} chars {n:7d} tokens {ratios[-1]:.2f}")
    ratios.sort()
    print(f"papers {len(ratios)}: min {ratios[0]:.2f}, median {ratios[len(ratios) // 2]:.2f}, max {ratios[-1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
