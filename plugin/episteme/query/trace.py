"""Source tracing: every claim of an answer → the exact paper passages that support it.

Why this shape (and not the seed's "embed the whole answer, search whole sections"):

* **Per claim.**  An answer mixes facts from several places; one vector for the whole answer
  averages them away.  The answer is split into sentences (claims, bounded in number and
  length so a 10,000-word answer costs the same as a 40-sentence one) and each is traced.
* **Dense and lexical candidates.**  Paraphrase is caught by embeddings (Chroma, scoped with a
  ``where`` on the papers the answer's wiki sections came from); numbers, names and rare terms
  by BM25 (the store's FTS5 index, scoped the same way).  Either alone misses what the other
  finds, so the candidates of both are pooled.
* **Reranked per claim** by a support score that mixes the cosine similarity with how much of
  the claim's *information* the passage contains: the IDF-weighted share of the claim's content
  words found in the passage (a claim's rare words and numbers weigh most, so a claim about a
  benchmark the papers never mention scores low even when its topic words match), plus a small
  bonus for a shared run of words (verbatim-ish quotes).
* **Calibrated threshold.**  A claim whose best passage scores below
  :data:`SUPPORT_THRESHOLD` is reported in ``unsupported_claims``; the value is calibrated on
  the gold set by ``benchmarks/bench_trace.py`` (see ``benchmarks/RESULTS-trace.md``).

Passages of reference lists are never traced to (ingest does not embed them, and both searches
filter ``kind = "references"`` unless asked otherwise).

:class:`Tracer` holds the open stores and the embedder, so a warm process (the HTTP server,
:class:`episteme.query.chat.QueryEngine`) traces a 3-sentence answer in tens of milliseconds; it is
safe to share between threads.

Why one module: the claim split, the two candidate searches and the rerank share the
:class:`Tracer`'s open stores and embedder.  Apart: the per-answer :class:`~.pool.Pool`, the
result shapes and their text rendering (:mod:`.results`), the calibrated weights
(:class:`~.trace_tuning.TraceTuning`), the store's SQL (:class:`episteme.stores.sqlite.Store`)
and the claim-versus-evidence comparison (:mod:`episteme.query.verify`, which never imports
this module).
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import EpistemeError, NotFoundError, UsageError
from .pool import Pool, bare_title, passage_index
from .results import (  # format_trace_text and quote re-exported: commands, retrieve and chat
    ClaimVerdict,
    TraceResult,
    TraceScope,
    format_trace_text,  # noqa: F401
    public_passage,
    quote,  # noqa: F401
)
from .text import (
    STOP,  # re-exported: verify and retrieve read it from here
    content_terms,
    fold,
    fts_quoted,
    fts_term,
    longest_common_run,
    normalize,
    stem,
    surface_words,
    unligature,
    word_positions,
    words,
)
from .trace_tuning import DEFAULT as DEFAULT_TUNING
from .trace_tuning import TraceTuning
from .verify import (
    CONTRADICTED,
    EVIDENCE_K,
    SUPPORTED,
    UNSUPPORTED,
    Verifier,
    claim_numbers,
    entity_key,
    number_matches,
    numbers_in,
)

# Bounds: the work of one trace is at most MAX_CLAIMS claims of at most MAX_CLAIM_WORDS words.
MAX_CLAIMS = 40
MAX_CLAIM_WORDS = 60
MIN_CLAIM_WORDS = 3  # shorter fragments ("Yes:", "In short,") are folded into the next claim
VECTOR_CACHE = 4096  # claim vectors kept by a warm tracer
TOP_PER_CLAIM = 3  # passages reported per claim

SUMMARY_TITLES = re.compile(
    r"^(abstract|introduction|conclusions?|summary|concluding remarks|discussion and conclusions?|"
    r"conclusions? and future work)$", re.IGNORECASE)
SUMMARY_KINDS = ("abstract", "front")
TABLE_KINDS = ("table",)
#: The shipped support threshold (read-only: pass a :class:`TraceTuning` to change it).
SUPPORT_THRESHOLD = DEFAULT_TUNING.support_threshold

EXCLUDED_KINDS = ("references",)


def _excluded(include_references: bool) -> tuple[str, ...]:
    """The section kinds a search leaves out."""
    return () if include_references else EXCLUDED_KINDS

@dataclass
class Claim:
    text: str
    start: int
    end: int


def split_claims(answer: str, *, max_claims: int = MAX_CLAIMS,
                 max_words: int = MAX_CLAIM_WORDS) -> tuple[list[Claim], int]:
    """Sentences of ``answer`` as claims: ``(claims, number not traced)``.

    Very short fragments are merged into the following sentence, over-long sentences are cut
    into ``max_words`` windows, and only the first ``max_claims`` claims are kept: bounded work
    whatever the input.
    """
    from ..pdf.passages import split_sentences

    # citation markers ("[sec_002]") are not part of a claim, and one placed after the period
    # ("... end. [sec_002] Next ...") would hide the sentence boundary: drop them first
    text = _CITATION.sub("", answer or "")
    spans: list[tuple[int, int]] = []
    for start, end in split_sentences(text):
        ws = [(m.start() + start, m.end() + start) for m in re.finditer(r"\S+", text[start:end])]
        for i in range(0, len(ws), max_words):
            chunk = ws[i:i + max_words]
            spans.append((chunk[0][0], chunk[-1][1]))
    merged: list[tuple[int, int]] = []
    pending: tuple[int, int] | None = None
    for sp in spans:
        if pending is not None:
            sp = (pending[0], sp[1])
            pending = None
        if len(words(text[sp[0]:sp[1]])) < MIN_CLAIM_WORDS:
            pending = sp
            continue
        merged.append(sp)
    if pending is not None:
        if merged:
            merged[-1] = (merged[-1][0], pending[1])
        elif words(text[pending[0]:pending[1]]):
            merged.append(pending)
    claims = [Claim(_strip_citations(text[s:e]), s, e) for s, e in merged]
    claims = [c for c in claims if c.text]
    return claims[:max_claims], max(0, len(claims) - max_claims)


_CITATION = re.compile(r"\s*[\[(]\s*(?:sec_\d{3,}\s*[,;]?\s*)+[\])]")


def _strip_citations(text: str) -> str:
    return " ".join(_CITATION.sub("", text).split())


strip_citations = _strip_citations  # the public name (answer.keep_verified)


# ---------------------------------------------------------------------------------- scope


@dataclass
class Scope:
    """Which papers a trace searches, and why."""

    papers: list[str] | None  # None = every ingested paper
    source: str  # "sections" | "papers" | "all"
    sections: list[str]
    sections_without_sources: list[str]
    missing_papers: list[str]  # named by a section or --papers, but not ingested

    def to_dict(self) -> TraceScope:
        return {
            "from": self.source,
            "papers": self.papers,
            "sections": self.sections,
            "sections_without_sources": self.sections_without_sources,
            "missing_papers": self.missing_papers,
        }


def _known_list(items: Iterable[str], limit: int = 30) -> str:
    items = sorted(items)
    shown = ", ".join(items[:limit])
    more = f" ... (+{len(items) - limit} more)" if len(items) > limit else ""
    return (shown + more) if items else "(none)"


def parse_id_list(value: str | Sequence[str] | None) -> list[str]:
    """``"a, b,c"`` or ``["a", "b"]`` → ``["a", "b", "c"]`` (empty items dropped, order kept)."""
    if value is None:
        return []
    parts = value.split(",") if isinstance(value, str) else [p for v in value for p in str(v).split(",")]
    return list(dict.fromkeys(p.strip() for p in parts if p.strip()))


# ---------------------------------------------------------------------------------- tracer


class Tracer:
    """Open stores + embedder for tracing answers of one wiki.  Thread-safe.

    ``store``/``vectors``/``embedder`` may be passed in (the query engine shares them);
    otherwise they are opened from ``settings``.  Raises :class:`EpistemeError` naming
    ``episteme ingest`` / ``episteme rebuild`` when the stores are missing or empty.
    """

    def __init__(self, settings, *, embedder=None, store=None, vectors=None,
                 tuning: TraceTuning = DEFAULT_TUNING):
        from ..stores.sqlite import Store

        self.settings = settings
        self.tuning = tuning
        if store is None:
            if not Path(settings.sqlite_path).exists():
                raise EpistemeError(
                    f"no paper store at {settings.sqlite_path}: ingest papers first "
                    "(`episteme ingest PAPER.pdf`), or run `episteme rebuild` if raw/ holds them"
                )
            store = Store(settings.sqlite_path, readonly=True)
        self.store = store
        if embedder is None:
            from ..stores.embedding import get_embedder

            embedder = get_embedder(settings)
        self.embedder = embedder
        self._vectors = vectors  # Chroma, opened only when a paper's matrix must be built
        from ..stores.tracevectors import PaperMatrices

        self.matrices = PaperMatrices(settings, embedder, self._open_vectors)
        self._db_lock = threading.Lock()
        self._df: dict[str, int] = {}
        self._names: dict[tuple, bool] = {}
        self._grids: dict[str, object] = {}  # table section id -> its cells placed by x
        self._table_texts: dict[str, str] = {}  # table section id -> its text
        self._n_passages = 0
        self._papers: dict[str, str] = {}
        self._stacked: dict[tuple, tuple] = {}
        self._vec_cache: dict[str, object] = {}
        self.reload()

    def _open_vectors(self):
        if self._vectors is None:
            from ..stores.vectors import open_vectors

            self._vectors = open_vectors(self.settings, self.embedder)
        return self._vectors

    def _signature(self) -> tuple:
        """Changes whenever a paper is ingested, re-ingested or removed (one cheap query)."""
        with self._db_lock:
            return self.store.papers_signature()

    def reload(self, *, if_changed: bool = False) -> None:
        """Re-read what is ingested.  :meth:`trace` calls it with ``if_changed`` first, so a
        long-lived tracer (the server's) sees papers ingested or removed since it was built."""
        sig = self._signature()
        if if_changed and sig == getattr(self, "_sig", None):
            return
        self._sig = sig
        with self._db_lock:
            self._papers = self.store.paper_hashes()
            self._n_passages = self.store.passage_count()
            self._df.clear()
            self._stacked.clear()
            self._grids.clear()  # a re-ingested paper may have other passage ids or pages
            self._table_texts.clear()
        if not self._papers or not self._n_passages:
            raise EpistemeError(
                f"no passages in {self.settings.sqlite_path}: ingest papers first "
                "(`episteme ingest PAPER.pdf`)"
            )

    @contextlib.contextmanager
    def locked_store(self):
        """The paper store with the tracer's lock held: its one SQLite connection is shared by
        the threads of a server, so a reader outside the tracer (the offline answerer, a
        benchmark) queries it as ``with tracer.locked_store() as store: store.conn.execute(...)``."""
        with self._db_lock:
            yield self.store

    @property
    def papers(self) -> set[str]:
        return set(self._papers)

    # -- scope ---------------------------------------------------------------------------------

    def resolve_paper(self, name: str) -> str | None:
        from ..ingest.pipeline import paper_id_for

        for cand in (name, Path(name).name, paper_id_for(Path(name).name)):
            if cand in self._papers:
                return cand
        return None

    def scope(self, *, sections: Sequence[str] | None = None, papers: Sequence[str] | None = None,
              index_json: dict[str, list[str]] | None = None) -> Scope:
        """Resolve ``--sections`` (via ``index.json``) or ``--papers`` to ingested paper ids."""
        sections = parse_id_list(sections)
        papers = parse_id_list(papers)
        if papers:
            found, missing = [], []
            for p in papers:
                pid = self.resolve_paper(p)
                (found.append(pid) if pid else missing.append(p))
            if missing:
                raise NotFoundError(
                    f"paper(s) not ingested: {', '.join(missing)}; ingested papers: "
                    f"{_known_list(self._papers)}"
                )
            return Scope(list(dict.fromkeys(found)), "papers", sections, [], [])
        if sections:
            if index_json is None:
                from ..wiki.index import read_index_json

                index_json = read_index_json(self.settings.wiki)
            unknown = [s for s in sections if s not in index_json]
            if unknown:
                raise NotFoundError(
                    f"unknown wiki section id(s): {', '.join(unknown)}; known section ids: "
                    f"{_known_list(index_json)} (ids come from index.json; `episteme lint --fix` "
                    "rebuilds it from the pages)"
                )
            found, missing, no_sources = [], [], []
            for sid in sections:
                srcs = index_json.get(sid) or []
                if not srcs:
                    no_sources.append(sid)
                for src in srcs:
                    pid = self.resolve_paper(src)
                    if pid:
                        found.append(pid)
                    elif src not in missing:
                        missing.append(src)
            return Scope(list(dict.fromkeys(found)), "sections", sections, no_sources, missing)
        return Scope(None, "all", [], [], [])

    # -- search --------------------------------------------------------------------------------

    def _matrix(self, papers: list[str] | None, include_references: bool):
        """``(passage ids, float32 matrix)`` of the scoped papers' passages (stacked once per
        scope and kept, so a warm process pays the stacking once)."""
        import numpy as np

        scope = sorted(self._papers) if papers is None else sorted(set(papers) & set(self._papers))
        key = (tuple(scope), tuple(self._papers[p] for p in scope), include_references)
        with self._db_lock:
            hit = self._stacked.get(key)
        if hit is not None:
            return hit[0], hit[1]
        mats = self.matrices.get({p: self._papers[p] for p in scope})
        ids: list[str] = []
        blocks = []
        for p in scope:
            pids, kinds, m = mats[p]
            keep = [i for i, k in enumerate(kinds) if include_references or k not in EXCLUDED_KINDS]
            ids.extend(pids[i] for i in keep)
            blocks.append(m[keep] if len(keep) != len(pids) else m)
        matrix = np.vstack(blocks) if blocks else np.zeros((0, self.embedder.dim), np.float32)
        row_of = {pid: j for j, pid in enumerate(ids)}
        with self._db_lock:
            if len(self._stacked) > 32:
                self._stacked.clear()
            self._stacked[key] = (ids, matrix, row_of)
        return ids, matrix

    def _rows(self, papers: list[str] | None, include_references: bool) -> dict[str, int]:
        scope = sorted(self._papers) if papers is None else sorted(set(papers) & set(self._papers))
        key = (tuple(scope), tuple(self._papers[p] for p in scope), include_references)
        with self._db_lock:
            hit = self._stacked.get(key)
        if hit is None:
            self._matrix(papers, include_references)
            with self._db_lock:
                hit = self._stacked[key]
        return hit[2]

    passage_matrix, passage_rows = _matrix, _rows  # public names (the offline answerer's candidates)

    def _lexical(self, query: str, papers: list[str] | None, include_references: bool,
                 limit: int) -> list[str]:
        from ..stores.sqlite import fts5_quote

        terms = [w for w in words(query) if w not in STOP]
        q = fts5_quote(" ".join(terms))
        if not q:
            return []
        with self._db_lock:
            return self.store.search_passage_ids(q, papers, _excluded(include_references), limit)

    def _anchored(self, claim: str, papers: list[str] | None, include_references: bool,
                  limit: int = 4) -> list[str]:
        """Passages containing every number of ``claim`` (FTS phrase per number), or, when no
        passage has them all, every number but one (so a claim with one wrong value still
        meets the passage that gives the others)."""
        nums = list(dict.fromkeys(n.text for n in claim_numbers(claim) if not n.word))
        if not nums:
            return []
        # a scaled value ("15.2 million") may be written "15.2M", which FTS5 reads as the
        # tokens "15" "2m": its last token is matched as a prefix
        phrases = ['"' + " ".join(re.findall(r"\d+", n)) + '"'
                   + ("*" if re.search(r"\d\s*(?:[kKMB]\b|thousand|million|billion|trillion)", n)
                      else "") for n in nums]
        tries = [phrases]
        if len(phrases) >= 2:
            tries += [phrases[:i] + phrases[i + 1:] for i in range(len(phrases))]
        out: list[str] = []
        for ph in tries:
            with self._db_lock:
                try:
                    got = self.store.search_passage_ids(" AND ".join(ph), papers,
                                                        _excluded(include_references), limit)
                except Exception:
                    got = []
            out.extend(g for g in got if g not in out)
            if got and ph is phrases:
                break
        return out[:limit * 2]

    def doc_freq(self, terms: Iterable[str], surface: dict[str, str] | None = None) -> dict[str, int]:
        """How many passages contain each (stemmed) term, via FTS5 (:func:`fts_term`, with the
        words ``surface`` gives; cached per tracer by query).  Pass the result to :meth:`idf`."""
        surface = surface or {}
        out = {}
        with self._db_lock:
            for t in terms:
                q = fts_term(t, surface.get(t))
                n = self._df.get(q)
                if n is None:
                    try:
                        n = self.store.doc_freq(q)
                    except Exception:
                        n = 0
                    self._df[q] = n
                out[t] = n
        return out

    def table_grid(self, passage: dict, values=None):
        """The cells of a table passage's table (its whole section: a long table is cut into
        several passages) placed by where they are printed (:func:`episteme.pdf.tablegrid.
        table_grid`, reading the paper in raw/ once per page), or None (no PDFium, no file,
        lines not found); cached per table.  With ``values`` (a claim's numbers) None unless
        the table states one of them: the page is read only when the grid can matter."""
        sid = passage.get("section_id") or ""
        text = self._table_texts.get(sid)
        if text is None:
            with self._db_lock:
                text = self.store.section_text(sid)
            if text is None:
                text = passage.get("text", "")
            if len(self._table_texts) > 2048:
                self._table_texts.clear()
            self._table_texts[sid] = text
        if values is not None:
            # read the page only for a table that states one of the claim's values
            nums = numbers_in(text, evidence=True)
            if not any(number_matches(v, en) for v in values for en in nums):
                return None
        if sid in self._grids:
            return self._grids[sid]
        from ..pdf.tablegrid import table_grid

        paper = passage.get("paper") or ""
        pdf = self.settings.wiki / "raw" / paper
        grid = None
        if paper and "/" not in paper and "\\" not in paper and passage.get("page"):
            grid = table_grid(pdf, int(passage["page"]), text)
        if len(self._grids) > 2048:
            self._grids.clear()
        self._grids[sid] = grid
        return grid

    def names_in_scope(self, name: str, papers: list[str] | None) -> bool:
        """Whether any passage of ``papers`` (None = all) names ``name`` — as written, or with
        its punctuation and spaces dropped ("BERT-LARGE" = "BERTLARGE"), whole-word."""
        key = entity_key(name)
        if not key:
            return True
        ck = (key, tuple(papers) if papers is not None else None, self._sig)
        with self._db_lock:
            hit = self._names.get(ck)
        if hit is not None:
            return hit
        pat = re.compile(r"(?<![0-9a-z])" + r"[\s\-'./]?".join(map(re.escape, key))
                         + r"s?(?![0-9a-z])")
        # a cheap SQL filter on the first word-ish piece, then the exact check in Python (on the
        # folded text: "Rocktäschel" in a passage names the claim's "Rocktaschel"); when that finds
        # nothing, once more with a piece no accent can hide (a run of consonants and digits)
        piece = max(re.findall(r"[a-z]+|\d+", unligature(normalize(name)).lower()) or [""], key=len)
        plain = max(re.findall(r"[b-df-hj-np-tv-z0-9]+", key) or [""], key=len)
        found = False
        with self._db_lock:
            for filt in dict.fromkeys(f for f in (piece, plain) if len(f) >= 2 or f == piece):
                if any(pat.search(fold(unligature(normalize(text))).lower())
                       for text in self.store.passage_texts_containing(filt, papers)):
                    found = True
                    break
            if len(self._names) > 4096:
                self._names.clear()
            self._names[ck] = found
        return found

    def phrase_texts(self, phrase: Sequence[str], limit: int = 20) -> list[str]:
        """The texts of (up to ``limit``) passages holding the words of ``phrase`` next to each
        other (an FTS5 phrase query; case, punctuation and line breaks between them ignored)."""
        q = fts_quoted(" ".join(phrase))
        with self._db_lock:
            try:
                return self.store.passage_texts_matching(q, limit)
            except Exception:  # noqa: BLE001 - a phrase FTS5 cannot parse holds no passage
                return []

    def idf(self, term: str, df: dict[str, int]) -> float:
        """The IDF of ``term`` from ``df`` (what :meth:`doc_freq` returned for this text)."""
        n = self._n_passages
        return math.log((n + 1) / (df.get(term, 0) + 0.5))

    def _passages(self, ids: Sequence[str]) -> dict[str, dict]:
        with self._db_lock:
            return self.store.passages_with_sections(ids)

    # -- trace ---------------------------------------------------------------------------------

    def trace(self, answer: str, *, sections: Sequence[str] | None = None,
              papers: Sequence[str] | None = None, top: int = TOP_PER_CLAIM,
              threshold: float | None = None, include_references: bool = False,
              index_json: dict[str, list[str]] | None = None) -> TraceResult:
        """Trace ``answer``.  Returns ``{"claims", "sources", "unsupported_claims", "scope",
        "threshold", ...}``; see the module docstring."""
        if not (answer or "").strip():
            raise UsageError("the answer is empty: there is nothing to trace")
        threshold = self.tuning.support_threshold if threshold is None else float(threshold)
        self.reload(if_changed=True)
        scope = self.scope(sections=sections, papers=papers, index_json=index_json)
        claims, not_traced = split_claims(answer)
        result: TraceResult = {
            "scope": scope.to_dict(),
            "threshold": threshold,
            "claims": [],
            "sources": [],
            "unsupported_claims": [],
            "contradicted_claims": [],
        }
        if not_traced:
            result["claims_not_traced"] = not_traced
            result["warning"] = (f"the answer has more than {MAX_CLAIMS} sentences; only the first "
                                 f"{MAX_CLAIMS} were traced")
        if scope.sections_without_sources:
            result["note"] = ("wiki section(s) without sources: "
                              f"{', '.join(scope.sections_without_sources)}")
        if not claims:
            raise UsageError("the answer has no words to trace")
        if scope.papers is not None and not scope.papers:
            # sections whose sources are absent: nothing to search, every claim unsupported
            for c in claims:
                result["claims"].append({"claim": c.text, "verdict": UNSUPPORTED, "supported": False,
                                         "support": 0.0, "passages": [],
                                         "reason": {"code": "no_source",
                                                    "text": "no ingested source paper in scope"}})
                result["unsupported_claims"].append(c.text)
            result["note"] = ((result.get("note", "") + "; ") if result.get("note") else "") + (
                "no ingested source paper in scope"
                + (f" (not ingested: {', '.join(scope.missing_papers)})" if scope.missing_papers else "")
            )
            return result

        pool = self.score_pool([c.text for c in claims], scope.papers,
                               include_references=include_references)
        answer_score = pool.answer_scores()
        ranked = [pool.candidates(ci, max(top, EVIDENCE_K)) for ci in range(len(claims))]
        best: dict[int, int] = {}  # pooled passage -> the claim it supports best
        best_score: dict[int, float] = {}
        pos = {pid: j for j, pid in enumerate(pool.ids)}
        verifier = Verifier(in_scope=lambda name: self.names_in_scope(name, scope.papers),
                            threshold=threshold, grid_of=self.table_grid)
        for ci, (c, cands) in enumerate(zip(claims, ranked, strict=True)):
            support = pool.support(ci)
            v = verifier.verify(c.text, cands, support=support)
            entry, top_hits = self._claim_entry(c.text, cands, v, support, top)
            result["claims"].append(entry)
            if v["verdict"] == CONTRADICTED:
                result["contradicted_claims"].append(c.text)
            if not entry["supported"]:
                result["unsupported_claims"].append(c.text)
                continue
            for h in top_hits:
                j = pos[h["id"]]
                if h["score"] >= threshold and h["score"] > best_score.get(j, -1e9):
                    best[j], best_score[j] = ci, h["score"]
        order = sorted(best, key=lambda j: -float(answer_score[j]))
        result["sources"] = [
            {**public_passage(pool.hit(best[j], j)), "claim": pool.claims[best[j]],
             "quote": self.quote_for(pool.claims[best[j]], pool.info[pool.ids[j]]["text"])}
            for j in order
        ]
        return result

    def _claim_entry(self, claim: str, cands: list[dict], v: dict, support: float,
                     top: int) -> tuple[ClaimVerdict, list[dict]]:
        """One claim's record: the passage the verdict rests on first (its quote the verdict's
        span), then the other candidates by score, best first; what was compared; ``check``
        when a possible contradiction could not be aligned for certain."""
        order = v["order"] + [i for i in range(len(cands)) if i not in v["order"]]
        first = order[0] if order else None
        rest = sorted((i for i in range(len(cands)) if i != first),
                      key=lambda i: -float(cands[i]["score"]))
        top_hits = ([cands[first]] if first is not None else []) + [cands[i] for i in rest]
        top_hits = top_hits[:max(1, top)]
        passages = []
        for rank, h in enumerate(top_hits):
            q = None
            if rank == 0 and v.get("span"):
                a, b = v["span"]
                q = h["text"][a:b].strip()
            passages.append({**public_passage(h), "rank": rank + 1,
                             "quote": q or self.quote_for(claim, h["text"])})
        entry: ClaimVerdict = {
            "claim": claim,
            "verdict": v["verdict"],
            "supported": v["verdict"] == SUPPORTED,
            "support": round(support, 4),
            "reason": v["reason"],
            "passages": passages,
        }
        if v.get("check"):
            entry["check"] = True
        compared = dict(v.get("compared") or {"claim": claim, "evidence": None})
        if compared.get("evidence") is None and passages and v["verdict"] == SUPPORTED:
            compared["evidence"] = passages[0]["quote"]
        entry["compared"] = compared
        if passages and v["verdict"] != UNSUPPORTED:
            entry["evidence"] = {"passage_id": passages[0]["passage_id"],
                                 "quote": passages[0]["quote"]}
        return entry, top_hits

    def quote_for(self, claim: str, passage: str, max_sentences: int = 2) -> str:
        """The sentence(s) of ``passage`` that carry the support for ``claim``: the sentence
        covering the most of the claim's IDF-weighted content words (ties: longest shared run),
        plus the next one when that adds real support, quoted exactly from the passage."""
        sents = _passage_sentences(passage)
        if len(sents) <= 1:
            return passage.strip()
        terms = content_terms(claim)
        df = self.doc_freq(terms, surface_words([claim]))
        weights = {t: self.idf(t, df) for t in terms}
        cwords = words(claim)
        covers = [sum(w for t, w in weights.items() if t in terms) for _a, _b, terms, _pos in sents]
        i = max(range(len(sents)), key=lambda k: (covers[k], longest_common_run(cwords, sents[k][3]), -k))
        start, end = sents[i][0], sents[i][1]
        if max_sentences > 1 and i + 1 < len(sents):
            both = sents[i][2] | sents[i + 1][2]
            if sum(w for t, w in weights.items() if t in both) > covers[i] * 1.25:
                end = sents[i + 1][1]
        return passage[start:end].strip()

    def score_pool(self, claims: Sequence[str], papers: list[str] | None, *,
                   include_references: bool = False) -> Pool:
        """Pool the dense and lexical candidates of every claim (and of the whole answer) and
        score each claim against each pooled passage."""
        import numpy as np

        vecs = self._encode(list(claims)) if claims else np.zeros((0, self.embedder.dim))
        ids_all, matrix = self._matrix(papers, include_references)
        # the normalised mean of the claim vectors stands in for the whole answer's vector
        queries = vecs
        if len(claims) > 1:
            mean = vecs.mean(axis=0)
            queries = np.vstack([vecs, mean / (np.linalg.norm(mean) or 1.0)])
        pool: dict[str, None] = {}
        if len(ids_all) and len(queries):
            sims_all = queries @ matrix.T
            k = min(self.tuning.dense_k, len(ids_all))
            for row in sims_all:
                top = np.argpartition(-row, k - 1)[:k]
                for j in top[np.argsort(-row[top], kind="stable")]:
                    pool.setdefault(ids_all[int(j)], None)
        # BM25 per claim (the whole answer's own BM25 query added nothing the claims' queries
        # and the mean vector do not already bring, at the cost of the slowest FTS query)
        for q in claims:
            for pid in self._lexical(q, papers, include_references, self.tuning.lexical_k):
                pool.setdefault(pid, None)
        # passages stating a claim's numbers (a table row rarely shares a claim's wording)
        anchored_ids = [self._anchored(c, papers, include_references) for c in claims]
        for ids_c in anchored_ids:
            for pid in ids_c:
                pool.setdefault(pid, None)
        ids = list(pool)
        info = self._passages(ids)
        ids = [i for i in ids if i in info]
        row_of = self._rows(papers, include_references)
        ids = [i for i in ids if i in row_of]
        P = matrix[[row_of[i] for i in ids]] if ids else np.zeros((0, self.embedder.dim), np.float32)
        sim = vecs @ P.T if len(ids) else np.zeros((len(claims), 0), dtype=np.float32)
        terms_per_claim = [content_terms(c) for c in claims]
        df = self.doc_freq({t for ts in terms_per_claim for t in ts}, surface_words(claims))
        info_mass = np.zeros(len(claims), dtype=np.float32)
        pindex = [passage_index(info[i]["text"]) for i in ids]
        cover_rows: list[list[float]] = []
        run_rows: list[list[int]] = []
        for ci, claim in enumerate(claims):
            weights = [(t, self.idf(t, df)) for t in terms_per_claim[ci]]
            total = sum(w for _t, w in weights)
            info_mass[ci] = total
            cwords = words(claim)
            wmap = dict(weights)
            cset = set(wmap)
            shared = [cset & terms for terms, _pos in pindex]
            cover_rows.append([sum(wmap[t] for t in sh) / (total or 1.0) if sh else 0.0
                               for sh in shared])
            # the longest shared run of words: only where a content word is shared at all (a
            # run of function words alone says nothing, and this is the pool's costliest loop)
            run_rows.append([longest_common_run(cwords, pos) if sh else 0
                             for sh, (_terms, pos) in zip(shared, pindex, strict=True)])
        shape = (len(claims), len(ids))
        cover = np.asarray(cover_rows, dtype=np.float32).reshape(shape)
        run = np.asarray(run_rows, dtype=np.float32).reshape(shape)
        answer_bm25 = self._bm25(" ".join(claims), ids)
        t = self.tuning
        score = t.w_cos * sim + t.w_cover * cover + t.w_run * np.minimum(run, t.run_full) / t.run_full
        summary = np.asarray([
            1.0 if info[i]["kind"] in SUMMARY_KINDS or SUMMARY_TITLES.match(bare_title(info[i]["section"]))
            else 0.0 for i in ids], dtype=np.float32)
        table = np.asarray([1.0 if info[i]["kind"] in TABLE_KINDS else 0.0 for i in ids],
                           dtype=np.float32)
        numeric = np.asarray([1.0 if numbers_in(c) else 0.0 for c in claims], dtype=np.float32)
        pos = {pid: j for j, pid in enumerate(ids)}
        anchored = [[pos[i] for i in ids_c if i in pos] for ids_c in anchored_ids]
        return Pool(list(claims), ids, info, sim, cover, run, score, info_mass, answer_bm25, summary,
                    anchored, table, numeric, self.tuning)

    def _encode(self, texts: list[str]):
        """Claim vectors, the ones seen before from a small cache: a server re-traces the same
        claims (an answer edited, re-run, shown again), and the model is the warm trace's
        largest single cost."""
        import numpy as np

        with self._db_lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._vec_cache))
        if todo:
            fresh = self.embedder.encode(todo)
            with self._db_lock:
                if len(self._vec_cache) + len(todo) > VECTOR_CACHE:
                    self._vec_cache.clear()
                for t, v in zip(todo, fresh, strict=True):
                    self._vec_cache[t] = v
                got = {t: self._vec_cache.get(t) for t in texts}
            got.update({t: v for t, v in zip(todo, fresh, strict=True)})
        else:
            with self._db_lock:
                got = {t: self._vec_cache[t] for t in texts}
        return np.vstack([got[t] for t in texts]).astype(np.float32, copy=False)

    def _bm25(self, query: str, ids: Sequence[str]):
        """BM25 of ``query`` for each passage id (0 where no term matches)."""
        import numpy as np

        from ..stores.sqlite import fts5_quote

        out = np.zeros(len(ids), dtype=np.float32)
        q = fts5_quote(" ".join(w for w in words(query) if w not in STOP))
        if not q or not ids:
            return out
        pos = {pid: j for j, pid in enumerate(ids)}
        with self._db_lock:
            scores = self.store.passage_bm25(q, ids)
        for pid, sc in scores.items():
            out[pos[pid]] = sc
        return out

    def rank_claims(self, claims: Sequence[str], papers: list[str] | None, *,
                    include_references: bool = False) -> list[list[dict]]:
        """For each claim, pooled passages best first, each with ``score`` (support),
        ``similarity`` (cosine), ``coverage`` and ``run``."""
        return self.score_pool(claims, papers, include_references=include_references).ranked()


_SENT_CACHE_LOCK = threading.Lock()
_SENT_CACHE: dict[str, list[tuple[int, int, frozenset[str], dict[str, list[int]]]]] = {}


def _passage_sentences(text: str) -> list[tuple[int, int, frozenset[str], dict[str, list[int]]]]:
    """A passage's sentences as ``(start, end, stemmed terms, word positions)``, cached."""
    hit = _SENT_CACHE.get(text)
    if hit is None:
        from ..pdf.passages import split_sentences

        hit = []
        for a, b in split_sentences(text):
            ws = words(text[a:b])
            hit.append((a, b, frozenset(stem(w) for w in ws), word_positions(ws)))
        with _SENT_CACHE_LOCK:
            if len(_SENT_CACHE) > 20_000:
                _SENT_CACHE.clear()
            _SENT_CACHE[text] = hit
    return hit
