"""The whole query pipeline: retrieve wiki sections → answer from them → trace the answer's
claims to source passages.  :class:`QueryEngine` is the warm, in-process API (the HTTP server
holds one); ``episteme chat`` / ``chat.py`` run it once.

Response (the seed's, plus what a reader needs to check it)::

    {"answer": "...", "wiki_sections_used": ["sec_002"],
     "sources": [{"paper", "section", "passage", "similarity", "page", "claim", ...}],
     "unsupported_claims": ["..."], "mode": "claude" | "offline", ...}

Thread-safety: the index and the tracer guard their SQLite connections with locks, the
embedder (onnxruntime) is safe to share, and the lazy construction below is locked, so one
engine serves concurrent requests.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, TypedDict

from ..errors import EpistemeError
from .answer import answer as make_answer
from .answer import cited_ids
from .trace import TOP_PER_CLAIM


class ChatSource(TypedDict):
    """One quoted passage of a chat result (the seed's fields plus ``page``, ``claim``, ...)."""

    paper: str
    section: str
    passage: str
    similarity: float
    page: int | None
    claim: str
    score: float
    passage_id: str
    quote: str


class ChatResult(TypedDict, total=False):
    """What :meth:`QueryEngine.chat` returns (``chat`` prints it as JSON; the server's ``/chat``
    and MCP return it).  Always: ``question``, ``answer``, ``wiki_sections_used``, ``sources``,
    ``unsupported_claims``, ``mode``, ``covered``; the rest when they apply."""

    question: str
    answer: str
    wiki_sections_used: list[str]
    sources: list[ChatSource]
    unsupported_claims: list[str]
    contradicted_claims: list[str]
    claims: list[dict]
    mode: str  # "claude" | "offline" | "not_covered"
    covered: bool
    scope: Any
    llm_usage: dict
    citations: list[dict]
    closest_topics: list
    abstained: bool
    dropped_claims: list[str]
    note: str
    warning: str
    trace_error: str


class MemoEmbedder:
    """An embedder that remembers the vectors of the texts it has encoded (bounded, least
    recently used first out).  One chat embeds the same texts several times: the question for
    retrieval, for the passage pool and for sentence scoring; the answer's sentences for
    scoring and again as the trace's claims.  Shared by the engine's retriever, tracer and
    offline answerer, each text is embedded once.  Large batches (an ingest's passages) go
    straight through without filling the memo.  Thread-safe."""

    MAX_ITEMS = 20_000
    MAX_BATCH = 256  # bigger calls are bulk work: not memoised

    def __init__(self, inner: Any):
        self.inner = inner
        self._memo: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts, *args, **kwargs):
        import numpy as np

        texts = list(texts)
        if not texts or len(texts) > self.MAX_BATCH:
            return self.inner.encode(texts, *args, **kwargs)
        with self._lock:
            have = {t: self._memo[t] for t in texts if t in self._memo}
            for t in have:
                self._memo.move_to_end(t)
        todo = [t for t in dict.fromkeys(texts) if t not in have]
        if todo:
            vecs = self.inner.encode(todo, *args, **kwargs)
            with self._lock:
                for t, v in zip(todo, vecs, strict=True):
                    have[t] = v
                    self._memo[t] = v
                while len(self._memo) > self.MAX_ITEMS:
                    self._memo.popitem(last=False)
        return np.vstack([have[t] for t in texts])

    def prime(self, texts, vectors) -> None:
        """Remember vectors computed elsewhere (the sentence vectors stored at ingest): the
        trace of an offline answer then embeds none of the answer's sentences again."""
        with self._lock:
            for t, v in zip(texts, vectors, strict=True):
                if t not in self._memo:
                    self._memo[t] = v
            while len(self._memo) > self.MAX_ITEMS:
                self._memo.popitem(last=False)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class QueryEngine:
    """Stores, index, embedder and (optionally) a Claude client for one wiki, kept warm."""

    def __init__(self, settings, *, embedder=None, llm_client=None, memo: bool = True):
        """``memo=False`` embeds every text each time it is met (the benchmark's baseline)."""
        self.settings = settings
        self._memo = memo
        self._embedder = embedder
        self._llm_client = llm_client
        self._retriever = None
        self._tracer = None
        self._offline = None
        self._lock = threading.Lock()

    # -- lazily built parts -------------------------------------------------------------------

    @property
    def embedder(self):
        with self._lock:
            if self._embedder is None:
                from ..stores.embedding import get_embedder

                self._embedder = get_embedder(self.settings)
            if self._memo and not isinstance(self._embedder, MemoEmbedder):
                self._embedder = MemoEmbedder(self._embedder)
            return self._embedder

    @property
    def retriever(self):
        emb = self.embedder
        with self._lock:
            if self._retriever is None:
                from .retrieve import Retriever

                self._retriever = Retriever(self.settings, emb)
            return self._retriever

    @property
    def tracer(self):
        emb = self.embedder
        with self._lock:
            if self._tracer is None:
                from .trace import Tracer

                self._tracer = Tracer(self.settings, embedder=emb)
            return self._tracer

    @property
    def offline(self):
        """The offline answerer (warm: its caches of paper sections live as long as the engine);
        ``None`` when the wiki has no paper stores."""
        emb = self.embedder
        try:
            tracer = self.tracer
        except EpistemeError:
            return None
        with self._lock:
            if self._offline is None:
                from .answer_offline import OfflineAnswerer

                self._offline = OfflineAnswerer(self.settings, emb, tracer)
            return self._offline

    def reload(self) -> None:
        """Pick up papers ingested or removed since the engine was built."""
        with self._lock:
            tracer = self._tracer
        if tracer is not None:
            tracer.reload()

    def close(self) -> None:
        with self._lock:
            if self._retriever is not None:
                self._retriever.index.close()
            if self._tracer is not None:
                self._tracer.store.close()
            self._retriever = self._tracer = self._offline = None

    # -- the three steps ----------------------------------------------------------------------

    def retrieve(self, question: str, k: int = 5) -> dict:
        return self.retriever.retrieve(question, k=k)

    def answer(self, question: str, sections: list[dict], *, mode: str = "auto",
               covered: bool = True) -> dict:
        from ..llm.client import llm_mode

        offline = None
        if (mode if mode != "auto" else llm_mode(self.settings)) == "offline":
            offline = self.offline
        return make_answer(self.settings, question, sections, mode=mode, embedder=self.embedder,
                           client=self._llm_client, offline=offline, covered=covered)

    def trace(self, answer: str, *, sections=None, papers=None, top: int = TOP_PER_CLAIM,
              threshold: float | None = None, include_references: bool = False) -> dict:
        return self.tracer.trace(answer, sections=sections, papers=papers, top=top,
                                 threshold=threshold, include_references=include_references)

    def chat(self, question: str, *, k: int = 5, mode: str = "auto",
             top: int = TOP_PER_CLAIM) -> ChatResult:
        """Retrieve, answer, trace: the seed's ``/chat`` response plus ``page``/``claim`` per
        source, ``unsupported_claims``, the per-claim detail and the answer mode."""
        retrieved = self.retrieve(question, k=k)
        sections = retrieved["sections"]
        covered = retrieved.get("covered", True)
        if not covered and mode != "offline":
            from ..llm.client import llm_mode

            if mode == "claude" or llm_mode(self.settings) == "claude":
                # no section is relevant: say so and name the closest topics, without asking
                # Claude to answer from neighbouring sections (the offline answerer abstains
                # by itself below)
                from .answer import not_covered

                return {"question": retrieved["question"], "covered": False,
                        "answer": not_covered(retrieved.get("closest_topics") or []),
                        "closest_topics": retrieved.get("closest_topics") or [],
                        "wiki_sections_used": [], "sources": [], "unsupported_claims": [],
                        "contradicted_claims": [], "claims": [], "mode": "not_covered",
                        "abstained": True, "note": "no wiki section is relevant to the question"}
        ans = self.answer(question, sections, mode=mode, covered=covered)
        text = ans["answer"]
        used = [sid for sid in (cited_ids(text) or ans.get("sections_used") or []) if sid in
                {s["id"] for s in sections}]
        if not used:
            used = [s["id"] for s in sections]
        result: ChatResult = {
            "question": retrieved["question"],
            "answer": text,
            "wiki_sections_used": used,
            "sources": [],
            "unsupported_claims": [],
            "mode": ans["mode"],
            "covered": covered,
        }
        if ans.get("usage"):
            result["llm_usage"] = ans["usage"]
        for key in ("citations", "closest_topics", "abstained", "model"):
            if key in ans:
                result[key] = ans[key]
        if not ans.get("sections_used"):
            result["unsupported_claims"] = []
            result["note"] = "no wiki section answered the question; nothing to trace"
            result["claims"] = []
            return result
        index_json = {s["id"]: list(s["sources"]) for s in sections}
        # the offline answer traced itself, with the tracer's default passages per claim
        traced = ans.get("trace") if top == TOP_PER_CLAIM else None
        try:
            if traced is None:
                traced = self.tracer.trace(text, sections=used, top=top, index_json=index_json)
        except EpistemeError as e:
            result["trace_error"] = e.message
            return result
        if ans["mode"] == "offline":
            # the offline answer never states a claim its own trace rejects
            from .answer import keep_verified, not_covered

            kept, dropped = keep_verified(text, traced)
            if dropped:
                result["dropped_claims"] = dropped
                result["answer"] = kept or not_covered([s["title"] for s in sections])
                traced = {**traced, "claims": [c for c in traced["claims"] if c["supported"]],
                          "unsupported_claims": [], "contradicted_claims": []}
        result["covered"] = covered
        result["sources"] = [
            {"paper": s["paper"], "section": s["section"], "passage": s["passage"],
             "similarity": s["similarity"], "page": s["page"], "claim": s["claim"],
             "score": s["score"], "passage_id": s["passage_id"], "quote": s["quote"]}
            for s in traced["sources"]
        ]
        result["unsupported_claims"] = traced["unsupported_claims"]
        result["contradicted_claims"] = traced.get("contradicted_claims", [])
        result["claims"] = traced["claims"]
        result["scope"] = traced["scope"]
        for key in ("note", "warning"):
            if traced.get(key):
                result[key] = traced[key]
        return result


def format_chat_text(result: ChatResult) -> str:
    """The answer with a numbered citation after each claim, then the quoted passages."""
    from .trace import quote

    numbers: dict[str, int] = {}
    for s in result.get("sources", []):
        numbers.setdefault(s["passage_id"], len(numbers) + 1)
    lines = [result["answer"], ""]
    claims = result.get("claims") or []
    if claims:
        lines.append("Claims:")
        for c in claims:
            verdict = c.get("verdict") or ("supported" if c["supported"] else "unsupported")
            if verdict == "contradicted":
                lines.append(f"- {c['claim']} [CONTRADICTED: {c['reason']['text']}]")
                if c.get("passages"):
                    p = c["passages"][0]
                    lines.append(f"    {p['paper']}, {p['section']}, p. {p['page']}: "
                                 f"\"{quote(p.get('quote') or p['passage'])}\"")
                continue
            if verdict != "supported":
                why = (c.get("reason") or {}).get("text")
                lines.append(f"- {c['claim']} [unsupported" + (f": {why}" if why else "") + "]")
                continue
            # citations by rank: the claim's best passage first
            refs = list(dict.fromkeys(numbers[p["passage_id"]] for p in c["passages"]
                                      if p["passage_id"] in numbers))
            lines.append(f"- {c['claim']} " + "".join(f"[{n}]" for n in refs))
        lines.append("")
    if result.get("sources"):
        lines.append("Sources:")
        by_id = {s["passage_id"]: s for s in result["sources"]}
        for pid, n in numbers.items():
            s = by_id[pid]
            lines.append(f"[{n}] {s['paper']}, {s['section']}, p. {s['page']} (similarity {s['similarity']:.2f})")
            lines.append(f"    \"{quote(s.get('quote') or s['passage'])}\"")
    if result.get("unsupported_claims"):
        n_contra = len(result.get("contradicted_claims") or [])
        lines.append("")
        lines.append(f"Claims not supported: {len(result['unsupported_claims'])} ({n_contra} contradicted "
                     "by the source papers, the rest stated by no passage)")
    for key in ("note", "warning", "trace_error"):
        if result.get(key):
            lines.append(f"{key}: {result[key]}")
    if result.get("wiki_sections_used") and not result.get("abstained"):
        # an answer that says the wiki does not cover the question used no section
        lines.append(f"Wiki sections used: {', '.join(result['wiki_sections_used'])}")
    return "\n".join(lines) + "\n"
