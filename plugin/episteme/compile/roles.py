"""What a sentence, a table row or a section *does* in a paper, read from its form.

The offline writer quotes a section's most central sentences; a reader also looks a topic up
for its definition, its numbers and its outcome, which are rarely the most central sentences.
This module finds them by their form, never by a list of one paper's phrases:

* a **definition** names a term and says what it is ("Self-attention ... is an attention
  mechanism relating ...", "We call this ... X", "X refers to ...") and the term it defines is
  one of the section's own key terms (or heading words): a passing "this is a problem" is not;
* a **key number** is a quantity (a decimal, a percentage, a count with a unit; not a citation,
  a year, a "Table 3") -- weighted up when the same number is printed in the paper's tables or
  abstract, i.e. it is one of the paper's result numbers;
* a **result** compares or reports an outcome ("outperforms", "better than", "improves ... by",
  "achieves ... 28.4");
* a table's **key rows** are those whose numbers the paper's prose repeats, or which name the
  paper's own system (a name in its title or repeated in its abstract);
* a **paper-specific section** (its experiments, results, setup, datasets) is recognised by its
  heading or its parent heading (``4.1`` under ``4 Experiments``), or by its content (most of its
  sentences report numbers and comparisons); the writer puts those under the paper's page.

Pure Python over text already in memory; deterministic.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from .keyterms import tokens

# ----------------------------------------------------------------------------- numbers

_REF = re.compile(
    r"\b(?:Table|Tab\.|Figure|Fig\.|Section|Sec\.|Eq\.|Equation|Algorithm|Appendix|Chapter|Theorem|"
    r"Lemma|Proposition|Corollary|Definition|Step|Line|Page|p\.|pp\.|§)\s*[A-Z]?\d+(?:\.\d+)*[a-z]?",
    re.IGNORECASE)
_CITE = re.compile(r"\[[\d,\s–-]+\]|\(\s*\d+\s*\)")
_YEAR = re.compile(r"\b(?:19|20)\d\d[a-z]?\b")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)(\s*%|\s*[kKMBGT]\b|x\b|×)?")


def quantities(text: str) -> list[str]:
    """The numbers of ``text`` that state a quantity, as printed ("28.4", "3.5", "95%", "8.1M",
    "12"): not references ("Table 3", "Section 4.1"), citation brackets, equation numbers or
    years; single digits only with a percent sign or a multiplier."""
    s = _REF.sub(" ", text)
    s = _CITE.sub(" ", s)
    s = _YEAR.sub(" ", s)
    out = []
    for m in _NUMBER.finditer(s):
        num, unit = m.group(1), (m.group(2) or "").strip()
        if len(num.replace(",", "").replace(".", "")) < 2 and not unit and "." not in num:
            continue
        out.append(num + unit)
    return out


def number_key(num: str) -> str:
    """A number as compared across prose and tables: "95 %" and "95%" alike, "1,024" = "1024"."""
    return num.replace(" ", "").replace(",", "").rstrip("%").lower()


def number_keys(num: str) -> set[str]:
    """:func:`number_key` and, for a percentage, the same value as a fraction ("85%" ->
    "85", "0.85"): tables print 0.85 where the prose says 85%."""
    key = number_key(num)
    out = {key}
    if num.rstrip().endswith("%"):
        with contextlib.suppress(ValueError):
            out.add(f"{float(key) / 100:.6f}".rstrip("0").rstrip("."))
    return out


# ----------------------------------------------------------------------------- sentences

_COMPARE = re.compile(
    r"\b(outperform\w*|better than|worse than|higher than|lower than|more than|less than|"
    r"fewer than|greater than|faster than|slower than|surpass\w*|exceed\w*|beat[s]?|"
    r"state[- ]of[- ]the[- ]art|compared (?:to|with)|in comparison|relative to|over the (?:best|previous)|"
    r"improv\w+|reduc\w+|increas\w+|decreas\w+|gains?|drops?|boosts?|degrad\w+|"
    r"significantly|substantially|on par with|comparable to|matches|competitive)\b", re.IGNORECASE)
_OUTCOME = re.compile(
    r"\b(achiev\w+|reach\w*|obtain\w*|attain\w*|scor\w+|yield\w*|result\w* in|leads? to|"
    r"accuracy|error|precision|recall|F1|BLEU|perplexity|top-1|top-5|AUC|mAP)\b", re.IGNORECASE)

_DEF_FORMS = (
    # "We define/call/refer to/denote X as/by Y", "we term X"
    re.compile(r"\b[Ww]e (?:define|call|refer to|denote|term|name)\s+(?P<term>[^,.;:]{2,60}?)"
               r"(?:\s+(?:as|by|to be)\b|,|$)"),
    # "X is defined as / refers to / is called / is known as / stands for Y"
    re.compile(r"(?:^|[,;]\s+)(?:[Tt]he |[Aa]n? |[Oo]ur )?(?P<term>[^,.;:]{2,60}?)\s+"
               r"(?:is|are) (?:defined as|called|known as|referred to as|termed)\b"),
    re.compile(r"(?:^|[,;]\s+)(?:[Tt]he |[Aa]n? |[Oo]ur )?(?P<term>[^,.;:]{2,60}?)\s+"
               r"(?:refers? to|stands? for|denotes?|means)\b"),
    # "X can be described / viewed as Y", "X consists of / is composed of Y"
    re.compile(r"^(?:[A-Z][\w -]{0,30}:\s+)?(?:[Tt]he |[Aa]n? |[Oo]ur )?(?P<term>[A-Za-z][\w\- ()/]{1,60}?)\s+"
               r"(?:(?:can be|is|are) (?:described|viewed|seen|interpreted|formulated|defined) as|"
               r"consists? of|(?:is|are) composed of)\b"),
    # "X (, also called Y,) is/are a/an/the Z ..." (a copula with a noun phrase; not "X is a
    # key challenge": an evaluative word after the article says what X is like, not what it is)
    re.compile(r"^(?:[A-Z][\w -]{0,30}:\s+)?(?:[Tt]he |[Aa]n? |[Oo]ur )?(?P<term>[A-Za-z][\w\- ()/]{1,60}?)(?:,[^,]{0,60},?)?\s+"
               r"(?:is|are) (?:a|an|the|one of the)\s+(?!(?:key|major|main|common|important|"
               r"crucial|critical|significant|big|great|good|popular|difficult|challenging|natural|"
               r"long-standing|fundamental|central|open|promising|serious|well-known)\b)\w+"),
)
_WEAK_SUBJECT = frozenset({"it", "this", "that", "these", "those", "there", "which", "what", "one",
                           "each", "all", "here", "result", "results", "problem", "goal", "idea",
                           "reason", "question", "difference", "main", "key", "second", "first",
                           "last", "next", "following", "former", "latter"})


def defined_term(sentence: str) -> str | None:
    """The term ``sentence`` defines when it has the form of a definition, else ``None``."""
    for rx in _DEF_FORMS:
        m = rx.search(sentence)
        if not m:
            continue
        term = " ".join(m.group("term").split()).strip(" ()")
        words = [w.lower() for w in re.findall(r"[A-Za-z][\w-]*", term)]
        if not words or len(words) > 8 or words[0] in _WEAK_SUBJECT or words[-1] in _WEAK_SUBJECT:
            continue
        if words[0] in ("we", "i", "they", "he", "she", "you"):
            continue
        return term
    return None


def is_definition(sentence: str, key_words: set[str]) -> bool:
    """A definition of one of the section's key terms (``key_words``: lower-case content words
    of its key terms and heading)."""
    term = defined_term(sentence)
    if term is None:
        return False
    words = set(tokens(term))
    words |= {p for w in words for p in w.split("-") if len(p) > 2}
    return bool(words & key_words)


def is_result(sentence: str) -> bool:
    """A sentence that compares or reports an outcome: a comparison cue, or an outcome cue
    with a quantity."""
    if _COMPARE.search(sentence) and (quantities(sentence) or _OUTCOME.search(sentence)):
        return True
    return bool(_OUTCOME.search(sentence) and quantities(sentence))


def key_words_of(title: str, key_terms: Iterable[str]) -> set[str]:
    """Lower-case content words of a heading and a section's key terms (hyphen parts too)."""
    words = set(tokens(title))
    for t in key_terms:
        words.update(t.split())
    return words | {p for w in words for p in w.split("-") if len(p) > 2}


# ----------------------------------------------------------------------------- tables

def table_rows(text: str) -> tuple[list[str], list[str]]:
    """A stored table's text (rows, cells tab-separated) as ``(header lines, data rows)``: the
    header is the lines before the first row holding a number; rows whitespace normalised."""
    lines = [" ".join(x.replace("\t", " ").split()) for x in (text or "").splitlines()]
    lines = [x for x in lines if x]
    header: list[str] = []
    rows: list[str] = []
    for x in lines:
        if not rows and not quantities(x):
            header.append(x)
        else:
            rows.append(x)
    return header, rows


def own_names(title: str, abstract: str) -> set[str]:
    """Names the paper gives its own system or data: capitalised or mixed-case words of its
    title (not the first word unless it is mixed case / an acronym) and such words repeated
    (≥ 2) in its abstract, lower-cased."""
    def names(text: str) -> list[str]:
        return [w for w in re.findall(r"\b[A-Za-z][\w-]*[A-Za-z0-9]\b", text)
                if (w[0].isupper() and any(c.isupper() or c.isdigit() for c in w[1:]))
                or (w[0].isupper() and w.lower() not in _COMMON_CAPS)]

    out = {w.lower() for w in names(title) if any(c.isupper() or c.isdigit() for c in w[1:])}
    counts = Counter(w.lower() for w in names(abstract) if w.lower() not in _COMMON_CAPS)
    out |= {w for w, c in counts.items() if c >= 2}
    return {w for w in out if len(w) > 2 and w not in _COMMON_CAPS}


_COMMON_WORDS = """the a an we our this these in on of for to and with by from is are it its as at using
    via however also such each both while when where which that than then there their they here
    experiments results table figure section"""
_COMMON_CAPS = frozenset(_COMMON_WORDS.split())


SMALL_TABLE_ROWS = 4  # a table this short (and SMALL_TABLE_WORDS) is quoted whole
SMALL_TABLE_WORDS = 60


def key_rows(text: str, prose_numbers: set[str], names: set[str], limit: int = 3) -> tuple[list[str], list[str]]:
    """``(header lines, up to limit rows)`` of a table worth quoting: the rows whose numbers the
    paper's prose repeats (one point per number) or which name the paper's own system (two
    points); ties by position, later rows first (a proposed method is usually listed last).
    Rows kept in table order; none when no row scores.  A small table (at most
    :data:`SMALL_TABLE_ROWS` rows, :data:`SMALL_TABLE_WORDS` words) is all key rows."""
    header, rows = table_rows(text)
    if len(rows) <= SMALL_TABLE_ROWS and sum(len(r.split()) for r in rows) <= SMALL_TABLE_WORDS:
        return header, rows  # a small table is its key numbers: all of it
    scored = []
    for i, row in enumerate(rows):
        nums = {number_key(n) for n in quantities(row)}
        score = len(nums & prose_numbers)
        label = set(re.findall(r"[a-z][a-z0-9]*", row.lower()))
        if label & names or any(w.startswith(n) for w in label for n in names if len(n) >= 3):
            score += 2
        if score:
            scored.append((score, i))
    best = sorted(scored, key=lambda x: (-x[0], -x[1]))[:limit]
    return header, [rows[i] for _s, i in sorted(best, key=lambda x: x[1])]


# ----------------------------------------------------------------------------- sections

#: headings (or parent headings) of the paper's own experiments and results
_RESULT_HEAD = re.compile(
    r"\b(results?|experiments?|experimental|evaluations?|ablations?|ablation stud\w*|"
    r"comparisons?|compared|performance|effects? of|empirical|case stud\w*|user stud\w*|findings|"
    r"benchmarks? results?|analysis|analyses|studies)\b", re.IGNORECASE)
_SETUP_HEAD = re.compile(
    r"\b(setup|set-up|settings?|implementation|hyper-?parameters?|hardware|schedule|training details|"
    r"experimental details|baselines?|protocol|metrics?|optimi[sz]er|batching|regulari[sz]ation)\b",
    re.IGNORECASE)
_DATA_HEAD = re.compile(r"\b(datasets?|data sets?|corpus|corpora|data collection|data)\b", re.IGNORECASE)
_OWN_DATA = re.compile(
    r"\b(?:we|our)\b[^.]{0,60}\b(?:construct|build|built|collect|create|release|introduce|"
    r"assemble|curate|present)\w*\b[^.]{0,60}\b(?:dataset|corpus|benchmark|collection)\b",
    re.IGNORECASE)


def paper_role(title: str, parents: Sequence[str], sentences: Sequence[str]) -> str | None:
    """``"result"``, ``"setup"`` or ``"dataset"`` for a section about the paper's own
    experiments, else ``None`` (a topic).  Its own heading decides first (data, setup, results
    words); then a parent heading (a section under "Experiments" reports results, under
    "Implementation details" setup -- or data, when it says the paper built a dataset); then
    its content (at least half of its sentences, and three or more, report results).

    ``parents``: the headings of the sections it is nested in (``4 Experiments`` for ``4.1``)."""
    if _DATA_HEAD.search(title):
        return "dataset"
    if _SETUP_HEAD.search(title):
        return "setup"
    if _RESULT_HEAD.search(title):
        return "result"
    own_data = any(_OWN_DATA.search(s) for s in sentences)
    if any(_RESULT_HEAD.search(p) for p in parents):
        return "dataset" if own_data else "result"
    if any(_SETUP_HEAD.search(p) for p in parents):
        return "dataset" if own_data else "setup"
    results = sum(is_result(s) for s in sentences)
    if len(sentences) >= 3 and results >= 3 and results * 2 >= len(sentences):
        return "result"
    return None


_METHOD_FORM = re.compile(
    r"\b(we (?:propose|introduce|use|employ|apply|train|compute|optimi[sz]e|minimi[sz]e|maximi[sz]e|"
    r"update|sample|initiali[sz]e)|is (?:computed|trained|optimi[sz]ed|updated|sampled|obtained) "
    r"(?:by|as|with|using)|algorithm|procedure|objective|loss function|gradient|iterat\w+|step)\b",
    re.IGNORECASE)
_COMPARISON_HEAD = re.compile(r"\b(vs\.?|versus|comparisons?|compared)\b", re.IGNORECASE)
_METHOD_HEAD = re.compile(
    r"\b(algorithms?|procedure|training|optimi[sz]ation|pipeline|framework|method|methods|"
    r"architecture|objective|loss|learning|model)\b", re.IGNORECASE)


def topic_type(title: str, sentences: Sequence[str]) -> str:
    """A topic page's ``type`` from its heading and its sentences: a comparison; a method (an
    algorithm, a procedure, an architecture: by its heading, or when at least a third of its
    sentences describe a procedure); else a concept."""
    if _COMPARISON_HEAD.search(title):
        return "comparison"
    procedural = sum(bool(_METHOD_FORM.search(s)) for s in sentences)
    if _METHOD_HEAD.search(title) or (sentences and procedural * 3 >= len(sentences) and procedural >= 2):
        return "method"
    return "concept"
