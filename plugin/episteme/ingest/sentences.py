"""Sentence vectors, computed at ingest and stored, so the offline answerer scores every
candidate sentence densely without embedding anything but the question.

Why: the offline answer picks the sentences of the retrieved papers that answer the question.
Scoring a sentence by its own cosine to the question (not its passage's) is what finds the one
sentence that answers; embedding a few hundred candidates per question costs seconds on two
cores, so before this only the ~28 best by a cheap pre-score were embedded, and the gold
sentence was often not among them.  A paper's sentences do not change after ingest, so they are
embedded once, in one batch with the paper, and stored in SQLite beside the section they belong
to (table ``sentence_vectors``: one row per section, the sentences' character spans in the
section text and their float16 unit vectors).

* **Which sentences**: every sentence of :func:`episteme.pdf.passages.split_sentences` over a
  section's text, in sections that are not references / front matter, whose cleaned text
  (:func:`clean_sentence`) has :data:`MIN_WORDS` to :data:`MAX_WORDS` words (shorter ones are
  fragments no answer quotes; longer ones are run-together text).  The answerer applies its own,
  stricter filter on top; a sentence it wants that has no stored vector is embedded then.
* **Same transaction as the paper**: rows are written by ingest inside the paper's SQLite
  transaction, and deleted with it (``ON DELETE CASCADE``), so they never go stale.
* **Backfill**: a store from before (schema < 4, or papers ingested by an older episteme)
  has no rows; one whose rows were split by an older sentence splitter has rows whose spans
  are not the sentences the answerer now sees.  :func:`backfill` computes both (missing and
  outdated), papers in one batch per group (``episteme rebuild --sentences``, or
  ``python -m episteme.ingest.sentences WIKI``).  Until then the answerer embeds the candidates
  it needs at query time, as before.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence

MIN_WORDS = 6
MAX_WORDS = 70
SKIP_KINDS = frozenset({"references", "front", "table", "figure", "algorithm"})  # no prose
BATCH_SENTENCES = 4096  # sentences embedded per call during a backfill (bounded memory)

_DANGLING_LABEL = re.compile(r"\s*\b(proposition|theorem|lemma|corollary|definition|remark|proof|"
                             r"example|algorithm)\s+\d+(\.\d+)*\s*[.:]?\s*$", re.I)
_LEADING_LABEL = re.compile(r"^(proposition|theorem|lemma|corollary|definition|remark|proof|"
                            r"example)\s+\d+(\.\d+)*\s*[.:]\s*", re.I)


def clean_sentence(text: str) -> str:
    """Whitespace normalised, a theorem label cut off either end ("... generator G.
    Proposition 1." → "... generator G."): the text that is embedded and quoted."""
    s = " ".join(text.split())
    s = _DANGLING_LABEL.sub("", s).strip()
    s = _LEADING_LABEL.sub("", s).strip()
    return s


def section_sentences(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, cleaned text)`` of the sentences of a section worth a vector."""
    from ..pdf.passages import split_sentences

    out = []
    for a, b in split_sentences(text):
        s = clean_sentence(text[a:b])
        if MIN_WORDS <= len(s.split()) <= MAX_WORDS:
            out.append((a, b, s))
    return out


def sentence_rows(paper_id: str, sections: Iterable, embedder) -> list[tuple]:
    """Store rows ``(section_id, paper_id, model, spans, vectors)`` for one paper's sections
    (objects with ``id``, ``kind``, ``text``: the ingest's ``PaperSection``), all sentences
    embedded in one call."""
    return rows_for({paper_id: [(s.id, s.kind, s.text) for s in sections]}, embedder)


def rows_for(papers: dict[str, Sequence[tuple[str, str, str]]], embedder) -> list[tuple]:
    """Rows for ``{paper id: [(section id, kind, text)]}``: every paper's sentences embedded
    in one batch (the embedder sorts by length, so short sentences pad little)."""
    import numpy as np

    plan: list[tuple[str, str, list[tuple[int, int, str]]]] = []
    texts: list[str] = []
    for pid, secs in papers.items():
        for sid, kind, text in secs:
            sents = [] if kind in SKIP_KINDS else section_sentences(text or "")
            plan.append((sid, pid, sents))
            texts.extend(s for _a, _b, s in sents)
    # an embedder that reports progress (the server's jobs) is told these are sentences, so a
    # job's "sections done", counted in passages, does not jump back while they are embedded
    counting = getattr(embedder, "encode_counting", None)
    if not texts:
        vecs = np.zeros((0, embedder.dim), np.float32)
    elif counting is not None:
        vecs = np.asarray(counting(texts, "sentences", 32), dtype=np.float32)
    else:
        vecs = np.asarray(embedder.encode(texts, batch_size=32), dtype=np.float32)
    rows, at = [], 0
    for sid, pid, sents in plan:
        n = len(sents)
        spans = np.asarray([(a, b) for a, b, _s in sents], dtype=np.int32).reshape(n, 2)
        block = vecs[at:at + n]
        at += n
        rows.append((sid, pid, embedder.name, spans.tobytes(), block.astype(np.float16).tobytes()))
    return rows


def missing_papers(store, model: str) -> list[str]:
    """Papers with a section that has no sentence-vector row for ``model``."""
    return store.papers_without_sentence_vectors(model)


def outdated_papers(store, model: str) -> list[str]:
    """Papers with a stored sentence-vector row whose spans are not the sentences
    :func:`section_sentences` finds in its section now (the splitter changed since ingest).
    Reads every section's text and spans: seconds for thousands of papers, and only a
    backfill calls it."""
    import numpy as np

    out: set[str] = set()
    for pid, kind, text, spans in store.sentence_vector_spans(model):
        if pid in out:
            continue
        want = [] if kind in SKIP_KINDS else [(a, b) for a, b, _s in section_sentences(text or "")]
        have = np.frombuffer(spans, dtype=np.int32).reshape(-1, 2).tolist()
        if [tuple(x) for x in have] != want:
            out.add(pid)
    return sorted(out)


def backfill(settings, *, embedder=None, progress: bool = True, papers_per_batch: int = 8) -> dict:
    """Compute the sentence vectors a store lacks or has outdated (the migration of a wiki
    ingested before they existed, or before the sentence splitter changed; see
    :func:`outdated_papers`), ``papers_per_batch`` papers per embedding call and per
    transaction, under the wiki's write lock.  Returns ``{"papers": n filled, "sentences": n,
    "seconds": s}``."""
    import time

    from ..fsutil import wiki_lock
    from ..stores.embedding import get_embedder
    from ..stores.sqlite import open_store

    t0 = time.perf_counter()
    embedder = embedder or get_embedder(settings)
    done = sentences = 0
    with wiki_lock(settings.wiki), open_store(settings) as store:
        todo = sorted(set(missing_papers(store, embedder.name))
                      | set(outdated_papers(store, embedder.name)))
        bar = None
        if progress and todo:
            from tqdm import tqdm

            bar = tqdm(total=len(todo), desc="sentence vectors", unit="paper", file=sys.stderr)
        for i in range(0, len(todo), papers_per_batch):
            group = todo[i:i + papers_per_batch]
            secs = {pid: store.paper_section_texts(pid) for pid in group}
            rows = rows_for(secs, embedder)
            with store.transaction():
                store.write_sentence_vectors(rows)
            done += len(group)
            sentences += sum(len(r[3]) // 8 for r in rows)
            if bar is not None:
                bar.update(len(group))
        if bar is not None:
            bar.close()
    return {"papers": done, "sentences": sentences,
            "seconds": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    """``python -m episteme.ingest.sentences WIKI``: backfill, JSON on stdout."""
    import argparse
    import json

    from ..config import load_settings

    ap = argparse.ArgumentParser(description="compute the missing sentence vectors of a wiki")
    ap.add_argument("wiki")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    print(json.dumps(backfill(load_settings(args.wiki), progress=not args.no_progress)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
