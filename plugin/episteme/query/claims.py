"""wiki-lint ``--claims``: every sentence of every wiki section checked against its own sources.

An LLM-maintained wiki drifts: a number merged wrongly, a result attributed to the wrong paper, a
sentence kept after its source was removed.  This module reads each section's body, splits it
into claims and verifies each against the section's source papers (``index.json``) with the
*same* verifier ``trace`` uses (:class:`episteme.query.verify.Verifier` over the tracer's pooled
candidates), so a lint verdict and a trace verdict never disagree.

What is a claim (:func:`section_units`):

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

Findings: ``claim-contradicted`` (error), ``claim-unsupported`` (warning), ``claim-misquoted``
(warning), each at the claim's line with the sentence, the reason and the best evidence (paper,
section, page, quote) in ``data``.

Incremental (:class:`ClaimCache`): results are kept per section in
``<wiki>/.episteme/claims-cache.json`` under a key made of the section body, its sources and each
source's sha256 in SQLite (``absent`` once removed) and the verifier's code.  An unchanged
section costs a read and a hash; the embedder, Chroma and the tracer are opened only when some
section misses the cache.  When a key changes because a source was removed or re-ingested with
another hash, each claim that the old result held supported on that paper and that is no longer
supported says so (``lost_support`` in ``data`` and in the message).

Heavy side, like :mod:`episteme.lint.stores`: imported only with ``--claims``.

Why one module: splitting sections into claims, checking them, the cache and the lint findings
are one pipeline with one cache format, and the cache key hashes this module's source (with the
verifier's and the tracer's, :func:`_code_hash`), so a change to what counts as a claim
invalidates the cached verdicts with no list of files to keep in step.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..lint.rules import Finding, finding
from ..wiki.files import DATA_DIR
from ..wiki.sections import HEADING_RE, MARKER_RE

#: Bump when what a cached result means changes (claim splitting, result layout).
CACHE_VERSION = 1
CACHE_FILE = "claims-cache.json"
MIN_WORDS = 3
MIN_QUOTE_WORDS = 4
MESSAGE_QUOTE = 160  # characters of evidence quoted in a message (data has the full quote)

_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+")
_QUOTE_LINE = re.compile(r"^\s*>\s?")
_WIKILINK = re.compile(r"\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_MDLINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_CODE = re.compile(r"`[^`]*`")
_EMPH = re.compile(r"(\*\*|__|(?<!\w)\*(?!\s)|(?<!\w)_(?!\s))")
_INLINE_QUOTE = re.compile(r"“([^”]{8,}?)”|(?<![\w])\"([^\"]{8,}?)\"(?![\w])")
_STRAIGHT_QUOTE = re.compile(r"(?<![\w])\"([^\"]{8,}?)\"(?![\w])")
#: a hyphen that joins two letters, or ends a line inside a word ("repre- sentation"): PDF text
#: keeps or drops it at a line break, so a copy of a sentence may differ from it only there
_WORD_HYPHEN = re.compile(r"(?<=[^\W\d_])[-\u2010\u00ad]\s*(?=[^\W\d_])")
_HTML_COMMENT = re.compile(r"<!--.*?-->")
# a field line of a paper page, as the writer puts them ("**Authors:** ...", "**Published:**
# venue, year", "**Source:** `raw/x.pdf`"): bibliographic data read from the PDF, not a claim
_FIELD_LINE = re.compile(r"^\s*\*\*(?:Authors|Published|Source):\*\*\s")
#: the tail of a truncated list ("and 4 more in this section of the paper", "… and 12 more"):
#: it counts the items left out, it says nothing a passage could support
_MORE_ITEMS = re.compile(r"(?:\.\.\.|…)?\s*and \d[\d,]* more\b[^.!?\d()\[\]]*[.…]?", re.I)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_ALNUM = re.compile(r"[^0-9a-z]+")


# ------------------------------------------------------------------------------ claim units


@dataclass
class Unit:
    """One thing to check: a claim (``quote`` False) or a quote to locate (``quote`` True)."""

    text: str
    line: int  # 1-based line in the page file
    quote: bool = False


@dataclass
class SectionText:
    """A section as lint --claims reads it."""

    id: str
    sources: list[str]
    marker_line: int
    body_line: int  # first body line (1-based)
    body: str
    units: list[Unit] = field(default_factory=list)

    def key_text(self) -> str:
        return self.body


def page_sections(text: str) -> list[SectionText]:
    """The sections of a page with their bodies and the line their body starts on (the same
    reading of markers and headings as :func:`episteme.wiki.sections.parse_page`)."""
    lines = text.split("\n")
    start = 0
    if lines and lines[0].strip() == "---":
        for j in range(1, len(lines)):
            if lines[j].strip() in ("---", "..."):
                start = j + 1
                break
    out: list[SectionText] = []
    cur: SectionText | None = None
    body: list[str] = []
    fence: str | None = None
    i = start
    while i < len(lines):
        line = lines[i]
        st = line.lstrip()
        if fence:
            if st.startswith(fence):
                fence = None
        elif st.startswith("```") or st.startswith("~~~"):
            fence = st[:3]
        else:
            m = MARKER_RE.match(line)
            if m:
                try:
                    meta = json.loads(m.group(1))
                except ValueError:
                    meta = None
                if isinstance(meta, dict) and meta.get("id"):
                    if cur is not None:
                        cur.body = "\n".join(body)
                        out.append(cur)
                    srcs = meta.get("sources") or []
                    cur = SectionText(str(meta["id"]), [str(s) for s in (srcs if isinstance(srcs, list) else [srcs])],
                                      i + 1, i + 2, "")
                    body = []
                    j = i + 1
                    while j < len(lines) and not lines[j].strip():
                        j += 1
                    if j < len(lines) and HEADING_RE.match(lines[j]):
                        i = j + 1
                    else:
                        i += 1
                    cur.body_line = i + 1
                    continue
        if cur is not None:
            body.append(line)
        i += 1
    if cur is not None:
        cur.body = "\n".join(body)
        out.append(cur)
    return out


def _plain(text: str) -> str:
    """Markdown inline markup → the words a reader sees (links as their labels)."""
    text = _HTML_COMMENT.sub(" ", text)
    text = _WIKILINK.sub(lambda m: (m.group(2) or m.group(1).rsplit("/", 1)[-1].replace("-", " ")), text)
    text = _MDLINK.sub(lambda m: m.group(1), text)
    text = _CODE.sub(" ", text)
    return _EMPH.sub("", text)


def _top_level_spans(text: str, opener: str, closer: str) -> tuple[list[tuple[int, int]], int]:
    """``(start, end)`` (end exclusive, the brackets included) of each outermost
    ``opener``…``closer`` span of ``text``, matched by nesting (a stray closer is ignored), and
    the depth still open at the end (0 when every opener was closed)."""
    spans: list[tuple[int, int]] = []
    depth, start = 0, -1
    for i, ch in enumerate(text):
        if ch == opener:
            if depth == 0:
                start = i
            depth += 1
        elif ch == closer and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans, depth


def _drop_locators(text: str) -> str:
    """Blank out (offsets kept) parentheses that locate rather than claim: those holding a link
    or a § reference anywhere inside, nested parentheses included ("(§6.1 Results (D1,D3);
    [[x|(D2) X]])"), and those holding only page, table, figure or section references
    ("(p. 8)", "(Table 2; Fig. 3)"); and empty ones left behind."""
    out = list(text)
    for start, end in _top_level_spans(text, "(", ")")[0]:
        inner = text[start + 1:end - 1]
        if re.search(r"\[\[|§|\]\(", inner) or _locators().fullmatch(inner.strip()):
            out[start:end] = " " * (end - start)
    return re.sub(r"\(\s*[;,]?\s*\)", lambda m: " " * len(m.group(0)), "".join(out))


@functools.lru_cache(maxsize=1)
def _locators() -> re.Pattern:
    """One or more references to a place in a paper ("p. 24", "Table 13", "§4.4", "Fig. 9b"),
    comma- or semicolon-separated, as the writers print them before a quote or in parentheses
    (the label words are the verifier's: :data:`episteme.query.verify.LABEL_WORD`)."""
    from .verify import LABEL_WORD

    num = r"(?:(?:[A-Z]\.?)?\d+(?:\.\d+)*[a-z]?|[IVXL]{1,5}\b|[A-Z]\b)"  # 2, 3.1b, A.1, IV, B
    one = rf"(?:{LABEL_WORD})\s?\(?{num}\)?(?:\s?[-\u2013]\s?\d+)?"
    return re.compile(rf"{one}(?:\s*(?:[,;]|and)\s*{one})*", re.IGNORECASE)


def _drop_locator_lead(sent: str) -> str:
    """A claim without the locator it starts with ("p. 24, Figure 9: The ..." -> "The ..."): a
    locator is a citation of where the sentence comes from, not part of what it claims."""
    m = _locators().match(sent)
    if m and re.match(r"\s*[:\u2013\u2014-]\s", sent[m.end():] + " "):
        return sent[m.end():].lstrip(" :\u2013\u2014-")
    return sent


def _inline_quotes(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, inner text)`` of each top-level quotation of ``text`` with 8+ characters
    inside: curly quotes matched by nesting (a caption that quotes a column name, “... “LOC
    error” ...”, is one quote), straight ones outside them.  Unbalanced curly quotes are read
    pairwise, each “ with the next ”."""
    curly, depth = _top_level_spans(text, "“", "”")
    spans = [(a, b, text[a + 1:b - 1]) for a, b in curly if b - a - 2 >= 8]
    if depth or text.count("”") > text.count("“"):
        return [(m.start(), m.end(), m.group(1) or m.group(2)) for m in _INLINE_QUOTE.finditer(text)]
    for m in _STRAIGHT_QUOTE.finditer(text):
        if not any(a <= m.start() < b for a, b, _q in spans):
            spans.append((m.start(), m.end(), m.group(1)))
    return sorted(spans)


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _blocks(body: str, first_line: int) -> list[tuple[bool, str, list[tuple[int, int]]]]:
    """Paragraphs and list items of a body: ``(is_blockquote, text, [(offset, line)])`` with the
    offset at which each source line starts in ``text``.  Code, tables, headings and HTML
    comment lines end a block and are not part of any."""
    out: list[tuple[bool, str, list[tuple[int, int]]]] = []
    cur: list[tuple[int, str]] = []
    cur_quote = False
    fence: str | None = None

    def close() -> None:
        nonlocal cur
        if cur:
            parts: list[str] = []
            offs: list[tuple[int, int]] = []
            pos = 0
            for ln, t in cur:
                offs.append((pos, ln))
                parts.append(t)
                pos += len(t) + 1
            out.append((cur_quote, " ".join(parts), offs))
        cur = []

    for k, raw in enumerate(body.split("\n")):
        ln = first_line + k
        st = raw.strip()
        if fence:
            if st.startswith(fence):
                fence = None
            continue
        m = _FENCE.match(raw)
        if m:
            close()
            fence = m.group(1)
            continue
        if not st or HEADING_RE.match(st) or st.startswith("|") or st.startswith("<!--") \
                or re.fullmatch(r"[-*_=]{3,}", st):
            close()
            continue
        q = bool(_QUOTE_LINE.match(raw))
        text = _QUOTE_LINE.sub("", raw) if q else raw
        if links_only(text) or text.rstrip().endswith(":") or _FIELD_LINE.match(text):
            # navigation, or the lead-in of the quote or list below ("From X, §3 (p. 4):")
            close()
            continue
        item = _LIST_ITEM.match(text)
        if item:
            close()
            text = text[item.end():]
        elif q != cur_quote:
            close()
        cur_quote = q
        cur.append((ln, text.strip()))
    close()
    return out


def links_only(line: str) -> bool:
    """A line that only points elsewhere: links, their locators and at most a two-word label
    ("Related:", "See also:") — a navigation line, not a claim."""
    if "[[" not in line and "](" not in line:
        return False
    rest = _drop_locators(_WIKILINK.sub("\0", _MDLINK.sub("\0", _LIST_ITEM.sub("", line))))
    return len(_words(_drop_link_glosses(rest))) <= 2


def _drop_link_glosses(text: str) -> str:
    """``text`` (links replaced by NUL) without the parenthesis right after a link, which
    glosses the link ("[[x|Results]] (Results; §4)"): part of the navigation."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        out.append(ch)
        i += 1
        if ch != "\0":
            continue
        j = i
        while j < len(text) and text[j] in " \t":
            j += 1
        if j < len(text) and text[j] == "(":
            depth, k = 0, j
            while k < len(text):
                depth += {"(": 1, ")": -1}.get(text[k], 0)
                k += 1
                if depth == 0:
                    break
            if depth == 0:
                i = k
    return "".join(out).replace("\0", " ")


def _line_at(offs: list[tuple[int, int]], pos: int) -> int:
    line = offs[0][1]
    for o, ln in offs:
        if o > pos:
            break
        line = ln
    return line


def section_units(sec: SectionText) -> list[Unit]:
    """The claims and quotes of a section body, each with its line."""
    from .trace import split_claims

    units: list[Unit] = []
    for is_quote, text, offs in _blocks(sec.body, sec.body_line):
        if is_quote:
            plain = " ".join(_plain(text).split())
            if len(_words(plain)) >= MIN_WORDS:
                units.append(Unit(plain, offs[0][1], True))
            continue
        # inline quotes: checked (located) on their own, cut from the prose around them
        rest = list(text)
        for a, b, q in _inline_quotes(text):
            if len(_words(q)) >= MIN_QUOTE_WORDS:
                units.append(Unit(" ".join(_plain(q).split()), _line_at(offs, a), True))
                rest[a:b] = [" "] * (b - a)
        # locating parentheses blanked before the split (offsets kept: a parenthesis may hold
        # a period, "(p. 8)", or nest, "(§6.1 X (D1); [[x|(D2) X]])")
        prose = _drop_locators("".join(rest))
        for c in split_claims(prose, max_claims=10_000)[0]:
            sent = " ".join(_plain(prose[c.start:c.end]).split())
            # a space left before punctuation goes (not before ".1", a footnote mark after
            # a dropped "(Figure 4)": "respectively.1" would read as a name)
            sent = re.sub(r"\s+([,.;:])(?![^\W_])", r"\1", sent).strip(" ,;")
            sent = _drop_locator_lead(sent)
            quoted = re.fullmatch(r"[“\"]([^“”\"]+)[”\"][.]?", sent)
            if quoted:  # all that is left is a short quote ("p. 16, Figure 5: “A neuron”")
                if len(_words(quoted.group(1))) >= MIN_WORDS:
                    units.append(Unit(quoted.group(1).strip(), _line_at(offs, c.start), True))
                continue
            if not sent or sent.endswith(":") or len(_words(sent)) < MIN_WORDS:
                continue
            if re.fullmatch(r"[\W\d_]*(?:[A-Za-z][\w.-]*[:\s][\W\d_]*)?", sent) or \
                    _locators().fullmatch(sent.rstrip(".")) or _MORE_ITEMS.fullmatch(sent):
                continue
            units.append(Unit(sent, _line_at(offs, c.start)))
    return units


# ------------------------------------------------------------------------------ sources


def _alnum(text: str) -> str:
    from .text import normalize, unligature

    return " " + " ".join(_ALNUM.split(unligature(normalize(text)).lower())).strip() + " "


def dehyphenate(text: str) -> str:
    """``text`` with every hyphen between two letters removed, a line break after it too
    ("repre- sentation" -> "representation", "pre-trained" -> "pretrained"): PDF text keeps
    or drops such a hyphen at a line break, so two copies of a sentence may differ there."""
    return _WORD_HYPHEN.sub("", text)


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
            self._text[key] = _alnum(dehyphenate(raw) if dehyphenated else raw)
        return self._text[key]

    def located(self, quote: str, papers: list[str]) -> bool:
        """Whether a paper states ``quote`` word for word: as written, or with its words
        hyphenated across lines joined on both sides (a copy may keep or drop such a hyphen)."""
        q = _alnum(quote)
        if len(q.split()) < MIN_WORDS:
            return False
        if any(q in self.text(p) for p in papers):
            return True
        qd = _alnum(dehyphenate(quote))
        return any(qd in self.text(p, dehyphenated=True) for p in papers)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# ------------------------------------------------------------------------------ the cache


def _code_hash() -> str:
    """Cached verdicts are only as good as the code that made them: the verifier's, the
    tracer's and this module's source, hashed (cheap: three small files)."""
    h = hashlib.sha256(str(CACHE_VERSION).encode())
    from ..pdf import passages
    from . import trace, verify

    for path in (*verify.source_files(), trace.__file__, __file__, passages.__file__):
        try:
            h.update(Path(path).read_bytes())
        except OSError:
            h.update(str(path).encode())
    return h.hexdigest()[:16]


class ClaimCache:
    """Per-section results in ``<wiki>/.episteme/claims-cache.json`` (written atomically)."""

    def __init__(self, root: str):
        self.path = Path(root) / DATA_DIR / CACHE_FILE
        self.data: dict[str, Any] = {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(raw, dict) and isinstance(raw.get("sections"), dict):
                self.data = raw["sections"]
        except (OSError, ValueError):
            self.data = {}
        self.dirty = False

    def get(self, sid: str) -> dict | None:
        e = self.data.get(sid)
        return e if isinstance(e, dict) else None

    def put(self, sid: str, entry: dict) -> None:
        self.data[sid] = entry
        self.dirty = True

    def save(self, keep: set[str] | None = None) -> None:
        if keep is not None:
            for sid in list(self.data):
                if sid not in keep:
                    del self.data[sid]
                    self.dirty = True
        if not self.dirty:
            return
        from ..fsutil import atomic_write_text

        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps({"version": CACHE_VERSION, "sections": self.data},
                                                ensure_ascii=False, separators=(",", ":")))
        self.dirty = False


def section_key(sec: SectionText, papers: PaperIndex, code: str) -> tuple[str, dict[str, str]]:
    """The cache key of a section, and the sha of each source (``absent`` when not ingested)."""
    shas = {}
    for s in sec.sources:
        pid = papers.resolve(s)
        shas[s] = papers.sha[pid] if pid else "absent"
    h = hashlib.sha256()
    h.update(code.encode())
    h.update(sec.body.encode("utf-8", "surrogatepass"))
    h.update(json.dumps(shas, sort_keys=True).encode())
    return h.hexdigest()[:24], shas


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
    from .verify import GOOD_CUES as _GOOD_CUES
    from .verify import MAG_CUES as _MAG_CUES
    from .verify import NEG_CUES as _NEG_CUES

    low = tok.lower()
    name = any(ch.isupper() for ch in tok[1:]) or (tok[:1].isupper() and not first)
    return (any(ch.isdigit() for ch in tok) or name or low in _NEG_CUES or low in _MAG_CUES
            or low in _GOOD_CUES or low.endswith("n't"))


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
        return _TOK.findall(unligature(normalize(dehyphenate(_drop_locators(text)))))

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


# ------------------------------------------------------------------------------ findings


RULE_OF = {"contradicted": "claim-contradicted", "unsupported": "claim-unsupported"}


def _short(text: str, limit: int) -> str:
    t = " ".join(text.split())
    return t if len(t) <= limit else t[:limit].rsplit(" ", 1)[0] + " …"


def result_findings(file: str, sec: SectionText, results: list[dict]) -> list[Finding]:
    """The findings of one section's results (lines made absolute)."""
    out: list[Finding] = []
    for r in results:
        v = r.get("verdict")
        rule = RULE_OF.get(v)
        if rule is None and v == "supported" and r.get("kind") == "quote":
            rule = "claim-misquoted"
        if rule is None:
            continue
        reason = r.get("reason") or {}
        ev = r.get("evidence")
        if rule == "claim-misquoted":
            msg = f"quote not found verbatim in {', '.join(sec.sources)} (the closest passage supports it): " \
                  f"\"{_short(r['text'], 200)}\""
        else:
            msg = f"{v}: \"{_short(r['text'], 200)}\" — {reason.get('text', '')}"
        if r.get("lost_support"):
            ls = r["lost_support"]
            msg += f"; it lost its support: {ls['paper']} was {ls['why']}"
        if ev and rule != "claim-misquoted" and v == "contradicted":
            msg += (f" — evidence: {ev['paper']}, {ev.get('section') or '?'}, p. {ev.get('page')}: "
                    f"\"{_short(ev.get('quote') or '', MESSAGE_QUOTE)}\"")
        elif ev and v == "unsupported" and reason.get("code") not in ("no_source",):
            msg += (f" — closest: {ev['paper']}, {ev.get('section') or '?'}, p. {ev.get('page')}: "
                    f"\"{_short(ev.get('quote') or '', MESSAGE_QUOTE)}\"")
        data = {"section_id": sec.id, "claim": r["text"], "verdict": v, "kind": r.get("kind"),
                "reason": reason, "evidence": ev}
        if r.get("verifier_verdict"):
            data["verifier_verdict"] = r["verifier_verdict"]
        if r.get("lost_support"):
            data["lost_support"] = r["lost_support"]
        out.append(finding(rule, file, sec.body_line + int(r.get("line") or 0), msg, **data))
    return out


def mark_lost_support(old: dict | None, results: list[dict], shas: dict[str, str], papers: PaperIndex) -> None:
    """Mark claims that were supported on a paper that has since been removed or replaced.

    ``old`` is the section's cache entry from the last run (``shas``: source -> content hash then;
    ``results``), ``results`` its new claim results, ``shas`` the sources' hashes now ("absent"
    when removed).  Each new result that is no longer supported, whose same-text claim was
    supported (or located) on a changed paper, gets ``lost_support = {"paper", "why"}``
    (``why``: "removed" or "re-ingested with another content hash"); lint reports it."""
    if not old:
        return
    old_shas = old.get("shas") or {}
    changed = {}
    for src, sha in old_shas.items():
        if shas.get(src, "absent") != sha:
            pid = papers.resolve(src) or src
            changed[pid] = changed[Path(src).name] = "removed" if shas.get(src, "absent") == "absent" else \
                "re-ingested with another content hash"
    if not changed:
        return
    before = {r.get("text"): r for r in old.get("results") or []}
    for r in results:
        if r.get("verdict") in ("supported", "located"):
            continue
        prev = before.get(r.get("text"))
        if not prev or prev.get("verdict") not in ("supported", "located"):
            continue
        paper = ((prev.get("evidence") or {}).get("paper")) or prev.get("paper")
        if paper in changed:
            r["lost_support"] = {"paper": paper, "why": changed[paper]}
        elif prev.get("verdict") == "located" and len(changed) == 1:
            p = next(iter(changed))
            r["lost_support"] = {"paper": p, "why": changed[p]}


def _remember_paper(results: list[dict], sec: SectionText, papers: PaperIndex) -> None:
    """A located quote has no evidence dict: remember which source it was found in."""
    for r in results:
        if r.get("verdict") == "located" and "paper" not in r:
            pids = [p for p in (papers.resolve(s) for s in sec.sources) if p]
            for p in pids:
                if papers.located(r["text"], [p]):
                    r["paper"] = p
                    break


@dataclass
class ClaimsRun:
    findings: list[Finding]
    pages: dict[str, dict[str, int]]
    sections_checked: int = 0
    sections_cached: int = 0
    sections_skipped: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        tot = {"checked": 0, "supported": 0, "unsupported": 0, "contradicted": 0, "quotes_located": 0}
        for row in self.pages.values():
            for k in tot:
                tot[k] += row.get(k, 0)
        return {**tot, "sections_verified": self.sections_checked, "sections_cached": self.sections_cached,
                "sections_skipped": self.sections_skipped, "seconds": round(self.seconds, 3)}


def _tally(row: dict[str, int], results: list[dict]) -> None:
    for r in results:
        v = r.get("verdict")
        if v == "located":
            row["quotes_located"] += 1
            continue
        row["checked"] += 1
        if v in row:
            row[v] += 1


def check_claims(root: str, settings: Any, page_files: list[str], *, since: set[str] | None = None,
                 checker: ClaimChecker | None = None, progress: bool = True) -> ClaimsRun:
    """Lint the claims of every section of ``page_files`` (paths relative to ``root``); with
    ``since``, only of those pages (the rest keep their cache entries and are not reported)."""
    started = time.monotonic()
    if settings is None:
        from ..config import load_settings

        settings = load_settings(root)
    own = checker is None
    checker = checker or ClaimChecker(settings)
    try:
        index_json = _index_json(root)
        cache = ClaimCache(root)
        code = _code_hash()
        todo: list[tuple[str, SectionText, str, dict]] = []
        done: list[tuple[str, SectionText, list[dict]]] = []
        seen: set[str] = set()
        skipped = 0
        for rel in page_files:
            try:
                text = Path(root, rel).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for sec in page_sections(text):
                if sec.id in index_json:
                    sec.sources = list(index_json[sec.id])
                seen.add(sec.id)
                if since is not None and rel not in since:
                    key, shas = section_key(sec, checker.papers, code)
                    old = cache.get(sec.id)
                    if not old or old.get("key") != key:
                        # a source changed under an untouched page: that is a change too
                        if not old or old.get("shas") == shas:
                            skipped += 1
                            continue
                    else:
                        skipped += 1
                        continue
                key, shas = section_key(sec, checker.papers, code)
                old = cache.get(sec.id)
                if old and old.get("key") == key:
                    done.append((rel, sec, old.get("results") or []))
                else:
                    todo.append((rel, sec, key, {"shas": shas, "old": old}))
        n_cached = len(done)
        if todo:
            results = checker.check([t[1] for t in todo], progress=progress)
            for (rel, sec, key, meta), res in zip(todo, results, strict=True):
                _remember_paper(res, sec, checker.papers)
                mark_lost_support(meta["old"], res, meta["shas"], checker.papers)
                cache.put(sec.id, {"key": key, "shas": meta["shas"], "results": res})
                done.append((rel, sec, res))
        cache.save(keep=seen if since is None else None)
        findings: list[Finding] = []
        pages: dict[str, dict[str, int]] = {}
        for rel, sec, res in done:
            row = pages.setdefault(rel, {"checked": 0, "supported": 0, "unsupported": 0,
                                         "contradicted": 0, "quotes_located": 0})
            _tally(row, res)
            findings.extend(result_findings(rel, sec, res))
        return ClaimsRun(findings, pages, len(todo), n_cached, skipped, time.monotonic() - started)
    finally:
        if own:
            checker.close()


def _index_json(root: str) -> dict[str, list[str]]:
    try:
        from ..wiki.index import read_index_json

        return read_index_json(root)
    except Exception:  # an unreadable index.json is lint's index-malformed finding, not ours
        return {}


# ------------------------------------------------------------------------------ --since


def changed_pages(root: str, since: str, page_files: list[str]) -> set[str]:
    """Pages changed since ``since``: a git revision when the wiki is in a git work tree (files
    changed since it, committed or not, plus untracked ones), otherwise a date ``YYYY-MM-DD``
    (pages modified on or after it by mtime, or named by a log.md entry of that day or later)."""
    import datetime as dt

    from ..errors import UsageError

    date = None
    try:
        date = dt.date.fromisoformat(since)
    except ValueError:
        date = None
    if date is None:
        import subprocess

        try:
            top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], capture_output=True,
                                 text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            top = None
        if top is None or top.returncode != 0:
            raise UsageError(f"--since {since!r}: not a date (YYYY-MM-DD) and {root} is not in a git work tree")
        base = Path(top.stdout.strip())
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--verify", "--quiet", since + "^{commit}"],
                             capture_output=True, text=True, timeout=30)
        if rev.returncode != 0:
            raise UsageError(f"--since {since!r}: not a date (YYYY-MM-DD) nor a git revision")
        names: set[str] = set()
        for args in (["diff", "--name-only", rev.stdout.strip(), "--", "."],
                     ["ls-files", "--others", "--exclude-standard", "--", "."]):
            proc = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=60)
            for line in proc.stdout.splitlines():
                p = line.strip()
                if not p:
                    continue
                full = (base / p) if args[0] == "diff" else (Path(root) / p)
                try:
                    names.add(os.path.relpath(full, root).replace(os.sep, "/"))
                except ValueError:
                    continue
        return {p for p in page_files if p in names}
    cutoff = dt.datetime.combine(date, dt.time()).timestamp()
    out = set()
    for p in page_files:
        try:
            if os.stat(os.path.join(root, p)).st_mtime >= cutoff:
                out.add(p)
        except OSError:
            continue
    try:
        from ..wiki.index import read_log

        entries, _bad = read_log(root)
        for e in entries:
            if str(e.date) >= date.isoformat():
                for pg in e.pages:
                    pg = pg if pg.endswith(".md") else pg + ".md"
                    if pg in page_files:
                        out.add(pg)
    except Exception:
        pass
    return out


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


def format_table(run: ClaimsRun) -> str:
    """The per-page table ``lint --claims --format text`` ends with."""
    rows = sorted(run.pages.items())
    if not rows:
        return ""
    w = max(len("page"), *(len(p) for p, _ in rows))
    w = min(w, 60)
    head = f"{'page':<{w}}  {'checked':>7}  {'supported':>9}  {'unsupported':>11}  {'contradicted':>12}\n"
    out = ["\nclaims per page\n", head]
    tot = [0, 0, 0, 0]
    for p, r in rows:
        vals = [r["checked"], r["supported"], r["unsupported"], r["contradicted"]]
        tot = [a + b for a, b in zip(tot, vals, strict=True)]
        name = p if len(p) <= w else "…" + p[-(w - 1):]
        out.append(f"{name:<{w}}  {vals[0]:>7}  {vals[1]:>9}  {vals[2]:>11}  {vals[3]:>12}\n")
    out.append(f"{'total':<{w}}  {tot[0]:>7}  {tot[1]:>9}  {tot[2]:>11}  {tot[3]:>12}\n")
    s = run.summary()
    out.append(f"({s['quotes_located']} quotes or sentences found verbatim in their sources and skipped; {run.sections_checked} sections "
               f"verified, {run.sections_cached} from the cache"
               + (f", {run.sections_skipped} unchanged and skipped" if run.sections_skipped else "") + ")\n")
    return "".join(out)


def lint_hook(report: Any, settings: Any, sections: list[tuple[str, Any]], since: str | None) -> list[Finding]:
    """What :func:`episteme.lint.lint_wiki` calls with ``claims=True``: the pages holding the
    sections its scan found, checked; the per-page table goes to ``report.extra["claims"]``."""
    root = report.wiki
    files = list(dict.fromkeys(pid for pid, _s in sections))
    changed = changed_pages(root, since, files) if since else None
    run = check_claims(root, settings, files, since=changed)
    report.extra["claims"] = run
    return run.findings
