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
* an **explanation** gives a reason or a mechanism ("this is because ...", "we suspect that
  ...", "..., which allows ...", "in order to ...");
* a table's **key rows** are those whose numbers the paper's prose repeats, or which name the
  paper's own system (a name in its title or repeated in its abstract);
* a **paper-specific section** (its experiments, results, setup, datasets) is recognised by its
  heading or its parent heading (``4.1`` under ``4 Experiments``), or by its content (most of its
  sentences report numbers and comparisons); the writer puts those under the paper's page;
* a **topic page's type** (method, concept, dataset, entity, comparison, note) comes from its
  heading's form, its parent headings, its own definition of its heading term and how many of
  its sentences describe a procedure (:func:`topic_type`).

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

#: a sentence that reports what a study found ("our results suggest", "we find that")
_FINDING = re.compile(
    r"\b(?:(?:our|these|the|this) (?:results?|findings?|experiments?|analys[ie]s|evaluations?|"
    r"stud(?:y|ies)) (?:suggest|show|indicate|demonstrate|confirm|reveal)\w*|"
    r"we (?:find|found|observe[sd]?|show(?:ed)?|demonstrated?|conclude[sd]?) that)\b", re.IGNORECASE)

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
    """A sentence that compares or reports an outcome: a comparison cue with a quantity, an
    outcome cue or a finding cue ("our results suggest that A significantly outperforms B":
    a study's conclusion often states its result in words, with the numbers in a table), or
    an outcome cue with a quantity."""
    if _COMPARE.search(sentence) and (quantities(sentence) or _OUTCOME.search(sentence)
                                      or _FINDING.search(sentence)):
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
# "data" names the section's subject only as a head noun ("Training Data", "Data and Batching",
# "Data collection"), not as a modifier ("Data-flow Integrity", "Data processing", "Data Space
# Randomization" are about something else)
_DATA_HEAD = re.compile(
    r"\b(datasets?|data sets?|corpus|corpora|data collection|data(?=\s*$|\s+(?:and|&)\b|\s*[,:(]))",
    re.IGNORECASE)
_PREPOSITION = re.compile(r"\b(?:for|from|of|with|on|in|by|to|via|using|under|over)\b", re.IGNORECASE)


def is_data_heading(title: str) -> bool:
    """A heading whose head is data: a data noun before its first preposition ("Training Data
    and Batching", "The X dataset"), not after one ("Hierarchical models for many datasets",
    "Transfer Learning from Supervised Data" are about models and learning)."""
    return bool(_DATA_HEAD.search(_PREPOSITION.split(title, 1)[0]))


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
    if is_data_heading(title):
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


# ----------------------------------------------------------------------------- explanations

#: a reason, a mechanism or a hypothesis, by the connective or the hedge that states it
_EXPLAIN = re.compile(
    r"\b(because|due to|owing to|thanks to|the reason (?:is|why|for)|this is (?:why|since|because)|"
    r"(?:which|this|that|it|they) (?:allows?|enables?|lets?|makes?|forces?|encourages?|prevents?|"
    r"ensures?|helps?|causes?|explains?|means?)\b|so that|in order to|thereby|as a result|"
    r"(?:we|i) (?:suspect|hypothesi[sz]e|conjecture|believe|argue|attribute|speculate)|"
    r"(?:this|which|it) (?:suggests?|indicates?|implies|shows?) that|intuitively|"
    r"the (?:intuition|idea|motivation|rationale) (?:is|behind)|is (?:motivated|caused|explained) by|"
    r"(?:leads?|led|contributes?) to|results? from|comes? from the fact)\b", re.IGNORECASE)


def is_explanation(sentence: str) -> bool:
    """A sentence that gives a reason or a mechanism ("we suspect that ...", "this is because
    ...", "..., which allows ...", "in order to ...") by its connective; a forward reference
    ("we will show in Section 4 that ...") is none: it promises, it does not explain."""
    if re.search(r"\b(?:we|i) will (?:show|prove|see|discuss|describe)\b", sentence, re.IGNORECASE):
        return False
    return bool(_EXPLAIN.search(sentence))


# ----------------------------------------------------------------------------- page types

_METHOD_FORM = re.compile(
    r"\b(we (?:propose|introduce|use|employ|apply|train|compute|optimi[sz]e|minimi[sz]e|maximi[sz]e|"
    r"update|sample|initiali[sz]e|define|design|build|implement|construct|remove|filter|select|link|"
    r"score|map|replace|add|concatenate|feed|project|split|combine)|"
    r"(?:is|are) (?:computed|trained|optimi[sz]ed|updated|sampled|obtained|calculated|estimated|"
    r"implemented|applied|fed|passed|mapped|projected|added|concatenated|selected|generated|used) "
    r"(?:by|as|with|using|to|from|on|into)|takes? (?:as input|\w+ inputs?)|outputs?|algorithm|procedure|"
    r"objective|loss function|gradient|iterat\w+|step|consists? of|is composed of|architecture|layers?)\b",
    re.IGNORECASE)
_COMPARISON_HEAD = re.compile(r"\b(vs\.?|versus|comparisons?|compared)\b", re.IGNORECASE)
#: head nouns of a heading that name a technique, a model or a part of one
_METHOD_HEAD = re.compile(
    r"\b(algorithms?|procedures?|training|optimi[sz]ation|pipeline|frameworks?|methods?|approach(?:es)?|"
    r"architectures?|objectives?|loss|learning|models?|networks?|mechanisms?|techniques?|schemes?|"
    r"modules?|layers?|stacks?|functions?|sampling|encodings?|embeddings?|"
    r"randomi[sz]ation|protocols?|systems?|design|mapping|weighting|indexing|"
    r"estimation|projection|propagation|updates?|equations?|filters?|rules?)\b", re.IGNORECASE)
#: words ending in -er/-or that are no agent (a component that does something)
_NOT_AGENT_WORDS = """paper papers user users number numbers order other others layer answer member
    members matter letter error errors factor factors vector vectors author authors behavior behaviour
    color colour chapter center centre water summer winter under over after later power major minor
    prior interior exterior anchor"""
_NOT_AGENT = frozenset(_NOT_AGENT_WORDS.split())
#: headings (own or parent) of framing prose: background, related work, discussion
_CONCEPT_HEAD = re.compile(
    r"\b(related work|prior work|previous work|background|preliminar\w+|history|motivation|"
    r"introduction|discussion|advantages|disadvantages|why|challenges?|problems?|limitations?|"
    r"overview|terminology)\b", re.IGNORECASE)
#: headings of prose that is no topic at all
_NOTE_HEAD = re.compile(
    r"^\s*(acknowledge?ments?|author contributions?|contributions of authors|supporting information|"
    r"supplementary (?:material|information)|notations?|plan of (?:this|the) paper|"
    r"(?:limitations|conclusions?|discussion)(?: and (?:future work|perspectives|outlook))?|"
    r"future work|(?:example|usage)(?: \w+)? scenarios?|appendix\b.*)\s*$", re.IGNORECASE)
_DATA_NOUN = r"(?:datasets?|data sets?|corpus|corpora|benchmarks?|collections? of|test sets?|suites?)"
_METHOD_NOUN = (r"(?:model|method|algorithm|approach|architecture|network|framework|technique|"
                r"mechanism|procedure|scheme|agent|module|layer|function|system|component|pipeline|"
                r"objective|estimator|classifier|encoder|decoder|operation|variant|extension)s?")
_TOOL_NOUN = r"(?:tool|software|package|library|toolkit|interface|demo|application|plug-?in|extension)s?"


def _definition_kind(title: str, sentences: Sequence[str]) -> str | None:
    """What the section's own definition of its heading term says the term is: ``"dataset"``,
    ``"method"`` or ``"entity"`` (a tool), read from the head noun after "is a/an/the"
    ("AutoScholarQuery is a synthetic but high-quality dataset of ...")."""
    head = set(tokens(title)) | {w.lower() for w in re.findall(r"[A-Za-z][\w-]+", title)}
    for s in sentences[:6]:
        term = defined_term(s)
        if term is None:
            continue
        if not ({w.lower() for w in re.findall(r"[A-Za-z][\w-]+", term)} & head):
            continue
        m = re.search(r"\b(?:is|are|as)\s+(?:a|an|the|one of the)\s+((?:[\w-]+\s+){0,5}?)(\w[\w-]*)\b", s)
        if not m:
            continue
        tail = s[m.start(1):m.start(1) + 120]
        for kind, rx in (("dataset", _DATA_NOUN), ("entity", _TOOL_NOUN), ("method", _METHOD_NOUN)):
            if re.match(r"(?:[\w-]+\s+){0,5}?" + rx + r"\b", tail, re.IGNORECASE):
                return kind
    return None


def _is_gerund(word: str) -> bool:
    w = word.lower()
    return len(w) > 5 and w.endswith("ing") and w not in ("setting", "settings", "string", "during",
                                                            "thing", "nothing", "something", "morning")


def _is_agent(word: str) -> bool:
    w = word.lower().rstrip("s")
    return len(w) > 4 and w.endswith(("er", "or")) and w not in _NOT_AGENT and word.lower() not in _NOT_AGENT


def topic_type(title: str, sentences: Sequence[str], parents: Sequence[str] = (),
               text: str = "") -> str:
    """A topic page's ``type`` from what the section holds, by general evidence only:

    * ``note`` -- a heading of prose that is no topic (acknowledgements, notation, limitations);
    * ``comparison`` -- "X vs. Y", "Comparison of ...";
    * what the section's own definition of its heading term says it is (a dataset, a tool:
      ``entity``, a model or method);
    * ``dataset`` -- a heading whose head noun is data ("Datasets", "The X corpus");
    * ``entity`` -- a heading that is one code identifier (``fitModel``, ``preProcess``);
    * ``concept`` -- a heading (own or parent) of background, related work or discussion;
    * ``method`` -- a technique, a model or a part of one: the heading's form (a process:
      "Processing PDFs", "Learning to align"; an agent noun: "Encoder", "Crawler"; a method
      noun: "... Model", "... Attention"), or its sentences (at least a quarter describe a
      procedure or a computation, or the text holds two or more equations), or a parent
      heading of method words;
    * else ``concept``.

    ``parents``: the headings the section is nested in; ``text``: its full text (equations)."""
    if _NOTE_HEAD.match(title):
        return "note"
    if _COMPARISON_HEAD.search(title):
        return "comparison"
    kind = _definition_kind(title, sentences)
    if kind is not None:
        return kind
    words = re.findall(r"[A-Za-z][\w-]*", title)
    if is_data_heading(title):
        return "dataset"
    if len(words) == 1 and re.fullmatch(r"[a-z]+[A-Z]\w*", words[0]):
        return "entity"  # a function or class name
    if _CONCEPT_HEAD.search(title) or any(_CONCEPT_HEAD.search(p) for p in parents):
        return "concept"
    if words and (_is_gerund(words[0]) or _is_gerund(words[-1]) or _is_agent(words[-1])
                  or _METHOD_HEAD.search(title)):
        return "method"
    procedural = sum(bool(_METHOD_FORM.search(s)) for s in sentences)
    equations = len(re.findall(r"(?m)[=≈←∝]\s*\S", text))
    if (sentences and procedural * 4 >= len(sentences) and procedural >= 2) or equations >= 2:
        return "method"
    if any(_METHOD_HEAD.search(p) for p in parents):
        return "method"
    return "concept"
