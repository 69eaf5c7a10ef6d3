"""wiki-lint ``--claims``: every sentence of every wiki section checked against its own sources.

An LLM-maintained wiki drifts: a number merged wrongly, a result attributed to the wrong paper, a
sentence kept after its source was removed.  This module reads each section's body, splits it
into claims and verifies each against the section's source papers (``index.json``) with the
*same* verifier ``trace`` uses (:class:`episteme.query.verify.Verifier` over the tracer's pooled
candidates), so a lint verdict and a trace verdict never disagree.

What is a claim (:func:`episteme.query.claimtext.section_units`):

* prose sentences of paragraphs and list items (wikilinks read as their labels, inline code,
  emphasis markers and locator parentheses such as ``(§3.2; [[page]])`` dropped);
* **quotes** (blockquote paragraphs, and inline ``“...”`` / ``"..."`` of 4+ words) are first
  looked up verbatim in the sources' text (letters and digits only, so typography, ligatures
  and line breaks do not matter): a located quote is not a claim and is skipped; a quote that
  is not found is verified sentence by sentence like prose, and reported as misquoted when the
  verifier still finds it supported;
* not claims: headings, code (fenced), tables, HTML comments, lines that are only links, and
  fragments that end with ``:`` (the lead-in of a quote or list) or have fewer than three words,
  and a paper page's field lines (``**Authors:**``, ``**Published:**``, ``**Source:**``).

Findings (:mod:`episteme.lint.claims`): ``claim-contradicted`` (error), ``claim-unsupported``
(warning), ``claim-misquoted`` (warning), each at the claim's line with the sentence, the reason
and the best evidence (paper, section, page, quote) in ``data``.  The lint rule's run, cache and
provenance live with lint (:mod:`episteme.lint.claims_run`, :mod:`episteme.lint.claims`); this
module is what they call: :class:`ClaimChecker` (the verifier over the tracer's pool, plus a
near-copy diff), :class:`PaperIndex` (sources' hashes and located quotes) and
:func:`check_body` (the write-time check of ``write-section`` and the writer).  What counts as a
claim is :mod:`episteme.query.claimtext`'s.  The embedder, Chroma and the tracer are opened only
when some section misses the cache.

The cache key hashes the verifier's, the tracer's and the claim modules' source
(:func:`code_hash`), so a change to what counts as a claim invalidates the cached verdicts with
no list of files to keep in step.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path
from typing import Any

from ..lint.claims import CACHE_VERSION, result_findings
from .claimtext import (
    MIN_WORDS,
    SectionText,
    alnum,
    dehyphenate,
    drop_locators,
    page_sections,
    section_units,
)

__all__ = ["ClaimChecker", "PaperIndex", "SectionText", "altered_copy", "check_body", "code_hash",
           "page_sections", "section_units"]


# ------------------------------------------------------------------------------ located quotes


class PaperIndex:
    """What the cache key and the quote check need from SQLite, read with the standard library:
    each paper's sha256, and (lazily) its text reduced to letters and digits."""

    def __init__(self, sqlite_path: Path):
        self.path = Path(sqlite_path)
        self.sha: dict[str, str] = {}
        self._text: dict[tuple[str, bool], str] = {}
        self._conn: sqlite3.Connection | None = None
        if self.path.exists():
            self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            self.sha = dict(self._conn.execute("SELECT id, sha256 FROM papers"))

    def resolve(self, name: str) -> str | None:
        """A source name as written in index.json → the paper id in SQLite (or None)."""
        for cand in (name, Path(name).name):
            if cand in self.sha:
                return cand
        base = Path(name).name
        if not base.lower().endswith(".pdf") and base + ".pdf" in self.sha:
            return base + ".pdf"
        return None

    def text(self, paper: str, *, dehyphenated: bool = False) -> str:
        """The paper's text as letters and digits (words space-separated); ``dehyphenated``:
        of :func:`dehyphenate`'s text."""
        key = (paper, dehyphenated)
        if key not in self._text:
            rows = self._conn.execute(
                "SELECT section_text FROM sections WHERE paper_id = ? ORDER BY ord", (paper,)) if self._conn else []
            raw = " ".join(r[0] for r in rows)
            self._text[key] = alnum(dehyphenate(raw) if dehyphenated else raw)
        return self._text[key]

    def located(self, quote: str, papers: list[str]) -> bool:
        """Whether a paper states ``quote`` word for word: as written, or with its words
        hyphenated across lines joined on both sides (a copy may keep or drop such a hyphen)."""
        q = alnum(quote)
        if len(q.split()) < MIN_WORDS:
            return False
        if any(q in self.text(p) for p in papers):
            return True
        qd = alnum(dehyphenate(quote))
        return any(qd in self.text(p, dehyphenated=True) for p in papers)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None



# ------------------------------------------------------------------------------ the code hash


def code_hash() -> str:
    """Cached verdicts are only as good as the code that made them: the verifier's, the
    tracer's and the claim modules' source, hashed (cheap: a few small files)."""
    h = hashlib.sha256(str(CACHE_VERSION).encode())
    from ..pdf import passages
    from . import claimtext, trace, verify

    for path in (*verify.source_files(), trace.__file__, __file__, claimtext.__file__, passages.__file__):
        try:
            h.update(Path(path).read_bytes())
        except OSError:
            h.update(str(path).encode())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------------------ checking


class _Embeds:
    """The tracer's embedder, answering from vectors computed in one batch beforehand (one big
    batch is several times faster than one call per section)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.dim = inner.dim
        self.memo: dict[str, Any] = {}

    def prime(self, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self.memo))
        if todo:
            for t, v in zip(todo, self.inner.encode(todo), strict=True):
                self.memo[t] = v

    def encode(self, texts, *args, **kwargs):
        import numpy as np

        texts = list(texts)
        if texts and all(t in self.memo for t in texts):
            return np.vstack([self.memo[t] for t in texts])
        return self.inner.encode(texts, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class ClaimChecker:
    """Verifies claims of sections against their sources (opens the stores on first use)."""

    def __init__(self, settings: Any, *, tracer: Any = None, embedder: Any = None):
        self.settings = settings
        self._tracer = tracer
        self._embedder = embedder
        self.papers = PaperIndex(settings.sqlite_path)

    @property
    def tracer(self):
        if self._tracer is None:
            from .trace import Tracer

            emb = self._embedder
            if emb is None:
                from ..stores.embedding import get_embedder

                emb = get_embedder(self.settings)
            self._tracer = Tracer(self.settings, embedder=_Embeds(emb))
        return self._tracer

    def close(self) -> None:
        self.papers.close()

    def check(self, sections: list[SectionText], progress: bool = False) -> list[list[dict]]:
        """One result list per section: a dict per unit (``text``, ``line``, ``kind``,
        ``verdict``, ``reason``, ``evidence``)."""
        plans: list[tuple[SectionText, list[str], list[str], list[dict]]] = []
        to_embed: list[str] = []
        for sec in sections:
            units = section_units(sec)
            pids = [p for p in (self.papers.resolve(s) for s in sec.sources) if p]
            missing = [s for s in sec.sources if not self.papers.resolve(s)]
            results: list[dict] = []
            claims: list[str] = []
            for u in units:
                r = {"text": u.text, "line": u.line - sec.body_line, "kind": "quote" if u.quote else "claim"}
                if pids and self.papers.located(u.text, pids):
                    # stated word for word by a source (a quote, or a sentence copied as prose)
                    r["verdict"] = "located"
                elif not pids:
                    r["verdict"] = "unsupported"
                    why = (f"its source{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                           f"{'are' if len(missing) > 1 else 'is'} not ingested") if missing else \
                        "the section lists no source paper"
                    r["reason"] = {"code": "no_source", "text": why}
                else:
                    claims.append(u.text)
                results.append(r)
            plans.append((sec, pids, claims, results))
            to_embed.extend(claims)
        if to_embed:
            emb = self.tracer.embedder
            if isinstance(emb, _Embeds):
                emb.prime(to_embed)
        out: list[list[dict]] = []
        it = plans
        bar = None
        if progress and len([p for p in plans if p[2]]) > 20:
            try:
                from tqdm import tqdm

                bar = tqdm(total=len(plans), desc="claims", unit="section", leave=False)
            except ImportError:
                bar = None
        for _sec, pids, claims, results in it:
            if claims:
                verdicts = iter(self.verify(claims, pids))
                for r in results:
                    if "verdict" not in r:
                        r.update(next(verdicts))
            out.append(results)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        return out

    def verify(self, claims: list[str], papers: list[str]) -> list[dict]:
        """Verdicts of ``claims`` against ``papers``: the tracer's candidate pool and verifier,
        as ``trace`` runs them for an answer whose sentences are these claims."""
        from .trace import SUPPORT_THRESHOLD
        from .verify import EVIDENCE_K, SUPPORTED, UNSUPPORTED, Verifier

        tr = self.tracer
        tr.reload(if_changed=True)
        scope = [p for p in papers if p in tr.papers]
        if not scope:
            return [{"verdict": UNSUPPORTED, "reason": {"code": "no_source",
                                                        "text": "no source paper of the section is ingested"}}
                    for _ in claims]
        pool = tr.score_pool(claims, scope)
        verifier = Verifier(in_scope=lambda name: tr.names_in_scope(name, scope), threshold=SUPPORT_THRESHOLD,
                            grid_of=tr.table_grid)
        out = []
        for ci, c in enumerate(claims):
            cands = pool.candidates(ci, EVIDENCE_K)
            v = verifier.verify(c, cands, support=pool.support(ci))
            r: dict[str, Any] = {"verdict": v["verdict"], "reason": v["reason"],
                                 "support": round(pool.support(ci), 3)}
            best = v.get("evidence")
            if best is None and cands:
                best = v["order"][0] if v.get("order") else 0
            if best is not None and cands:
                h = cands[best]
                if v.get("span"):
                    a, b = v["span"]
                    q = h["text"][a:b].strip()
                else:
                    q = tr.quote_for(c, h["text"])
                r["evidence"] = {"paper": h["paper"], "section": h["section"], "page": h["page"],
                                 "quote": q}
            if v["verdict"] != "contradicted":
                alt = altered_copy(c, cands)
                if alt is not None:
                    h, sent, said, says = alt
                    r.update(verdict="contradicted", verifier_verdict=v["verdict"],
                             reason={"code": "altered_copy",
                                     "text": f"the sentence copies the passage's sentence but says {said!r} "
                                             f"where the passage says {says!r}"},
                             evidence={"paper": h["paper"], "section": h["section"], "page": h["page"],
                                       "quote": sent})
            if r["verdict"] == SUPPORTED:
                r.pop("support", None)
            out.append(r)
        return out


_TOK = re.compile(r"\d+(?:[.,]\d+)*%?|[^\W\d_]+(?:'t)?", re.UNICODE)
#: A claim this similar (difflib ratio over words) to one source sentence is a copy of it.
COPY_RATIO = 0.8


def _specific(tok: str, first: bool = False) -> bool:
    """A token whose change changes what a sentence asserts: a number, a name (capitalised or
    mixed case, by form), a negation or a comparative (the verifier's own cue lists)."""
    from .verify import GOOD_CUES, MAG_CUES, NEG_CUES

    low = tok.lower()
    name = any(ch.isupper() for ch in tok[1:]) or (tok[:1].isupper() and not first)
    return (any(ch.isdigit() for ch in tok) or name or low in NEG_CUES or low in MAG_CUES
            or low in GOOD_CUES or low.endswith("n't"))


def altered_copy(claim: str, cands: list[dict]) -> tuple[dict, str, str, str] | None:
    """When ``claim`` copies one sentence of a candidate passage except for a number, a name, a
    negation or a comparative: ``(passage, its sentence, what the claim says, what the sentence
    says)``.  A near-copy that changes a specific is the typical drift of a compiled wiki (a
    merged number, a swapped dataset), and one the similarity of the two sentences hides."""
    import difflib

    from ..pdf.passages import split_sentences
    from .text import normalize, unligature

    # words hyphenated across a line are compared joined, on both sides: a copy that keeps or
    # drops such a hyphen ("Trans- former" / "Transformer") alters nothing; nor does one that
    # keeps or drops a locating parenthesis ("(Figure 4)", "(Eq. 5)")
    def words_of(text: str) -> list[str]:
        return _TOK.findall(unligature(normalize(dehyphenate(drop_locators(text)))))

    cw = words_of(claim)
    if len(cw) < 6:
        return None
    lc = [w.lower() for w in cw]
    best = None
    for h in cands:
        text = h["text"]
        for a, b in split_sentences(text):
            sw = words_of(text[a:b])
            if not sw or abs(len(sw) - len(cw)) > max(3, len(cw) // 4):
                continue
            sm = difflib.SequenceMatcher(None, lc, [w.lower() for w in sw], autojunk=False)
            if sm.real_quick_ratio() < COPY_RATIO or sm.quick_ratio() < COPY_RATIO:
                continue
            ratio = sm.ratio()
            if ratio >= COPY_RATIO and (best is None or ratio > best[0]):
                best = (ratio, h, text[a:b].strip(), sw, sm)
    if best is None:
        return None
    _r, h, sent, sw, sm = best
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        mine, theirs = cw[i1:i2], sw[j1:j2]
        if any(_specific(t, i1 + k == 0) for k, t in enumerate(mine)) or \
                any(_specific(t, j1 + k == 0) for k, t in enumerate(theirs)):
            return h, sent, " ".join(mine) or "(nothing)", " ".join(theirs) or "(nothing)"
    return None


# ------------------------------------------------------------------------------ write time


def check_body(settings: Any, body: str, sources: list[str], *, checker: ClaimChecker | None = None,
               page: str = "(new section)", first_line: int = 1) -> list[dict]:
    """The claim findings (as dicts) of a section body about to be written with ``sources``:
    what ``lint --claims`` would report for it once written."""
    own = checker is None
    checker = checker or ClaimChecker(settings)
    try:
        sec = SectionText("sec_new", list(sources), first_line, first_line, body)
        res = checker.check([sec], progress=False)[0]
        return [f.to_dict() for f in result_findings(page, sec, res)]
    finally:
        if own:
            checker.close()

