"""What counts as a claim in a wiki section (``lint --claims`` and the write-time check): a
page's sections with their bodies (:func:`page_sections`) and each body's claims and quotes,
with their lines (:func:`section_units`).

* prose sentences of paragraphs and list items (wikilinks read as their labels, inline code,
  emphasis markers and locator parentheses such as ``(§3.2; [[page]])`` dropped);
* **quotes** (blockquote paragraphs, and inline ``“...”`` / ``"..."`` of 4+ words), to be
  looked up verbatim in the sources' text (:func:`alnum`, :func:`dehyphenate`);
* not claims: headings, code (fenced), tables, HTML comments, lines that are only links, and
  fragments that end with ``:`` (the lead-in of a quote or list) or have fewer than three words,
  and a paper page's field lines (``**Authors:**``, ``**Published:**``, ``**Source:**``).

Light (standard library + the wiki layer); the verifier's label words and the tracer's claim
splitter are imported when a body is split.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field

from ..wiki.links import display_text
from ..wiki.sections import HEADING_RE, MARKER_RE

MIN_WORDS = 3
MIN_QUOTE_WORDS = 4

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
# venue, year", "**Source:** `raw/x.pdf`", and the citation lines and reading list of
# compile/citelinks): bibliographic data read from the PDF, not a claim
_FIELD_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?\*\*(?:Authors|Published|Source|Cites \(in this wiki\)|Cited by \(in this wiki\)"
    r"|Reference):\*\*\s")
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
    text = display_text(text, names=True)  # the one [[link]] -> reader text rule (wiki/links)
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


def alnum(text: str) -> str:
    """``text`` as its letters and digits, lower case, words space-separated and the whole
    space-padded: the form a quote is looked up in (typography and ligatures do not count)."""
    from .text import normalize, unligature

    return " " + " ".join(_ALNUM.split(unligature(normalize(text)).lower())).strip() + " "


def dehyphenate(text: str) -> str:
    """``text`` with every hyphen between two letters removed, a line break after it too
    ("repre- sentation" -> "representation", "pre-trained" -> "pretrained"): PDF text keeps
    or drops such a hyphen at a line break, so two copies of a sentence may differ there."""
    return _WORD_HYPHEN.sub("", text)


drop_locators = _drop_locators  # the public name (the near-copy check reads claims without them)
