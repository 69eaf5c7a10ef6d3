"""Step 1 of a query: the wiki sections relevant to a question.

The heavy lifting is :class:`episteme.wikisearch.WikiSectionIndex` (BM25 over title +
``index.md`` description + section text, fused with embedding similarity); this module adds
what a query needs around it: refreshing the index from the pages before searching (cheap when
nothing changed, so the files stay the source of truth), clear errors for an empty or missing
wiki, and the JSON shape the skill, ``chat`` and the server share.
"""

from __future__ import annotations

import threading

from .errors import EpistemeError, UsageError

DEFAULT_K = 5
MAX_K = 50
MAX_QUESTION_CHARS = 4000  # a question longer than this is cut (bounded work)


class Retriever:
    """Retrieval over one wiki.  Thread-safe; keeps the index open between calls."""

    def __init__(self, settings, embedder=None, index=None):
        self.settings = settings
        if index is None:
            from .wikisearch import WikiSectionIndex

            index = WikiSectionIndex(settings, embedder)
        self.index = index
        self._lock = threading.Lock()

    def refresh(self) -> dict:
        if not self.settings.wiki.is_dir():
            raise EpistemeError(f"wiki folder does not exist: {self.settings.wiki}")
        with self._lock:
            return self.index.refresh()

    def retrieve(self, question: str, k: int = DEFAULT_K, *, refresh: bool = True) -> dict:
        """``{"question", "sections": [{id, page, title, heading, description, text, score,
        sources}], "index": refresh counts}``."""
        question = " ".join((question or "").split())
        if not question:
            raise UsageError("the question is empty")
        if not 1 <= int(k) <= MAX_K:
            raise UsageError(f"k must be between 1 and {MAX_K}")
        stats = self.refresh() if refresh else {}
        if self.index.count() == 0:
            raise EpistemeError(
                f"the wiki at {self.settings.wiki} has no sections yet: ingest papers with "
                "`episteme ingest PAPER.pdf --write` (or let the agent write them) first"
            )
        hits = self.index.search(question[:MAX_QUESTION_CHARS], k=int(k))
        sections = []
        for h in hits:
            sections.append({
                "id": h["id"],
                "page": h["page"],
                "title": h["title"],
                "heading": h["title"],
                "description": h["description"],
                "text": h["text"],
                "score": h["score"],
                "sources": h["sources"],
            })
        return {"question": question, "sections": sections, "index": stats}


def format_retrieve_text(result: dict, width: int = 300) -> str:
    """A retrieval result for people: one block per section."""
    from .trace import quote

    lines = [f"Question: {result['question']}", ""]
    for i, s in enumerate(result["sections"], 1):
        src = ", ".join(s["sources"]) or "no sources"
        lines.append(f"{i}. [{s['id']}] {s['title']}  ({s['page']}; {src}; score {s['score']:.4f})")
        if s["description"]:
            lines.append(f"   {s['description']}")
        lines.append(f"   > {quote(s['text'], width)}")
    return "\n".join(lines) + "\n"
