"""Value-to-name bindings in running text and line-laid tables: a claim value the passage gives for
another name (nearest preceding sibling, a header's columns, parallel order "on A and B ... x y",
row labels)."""

from __future__ import annotations

import functools
import re

from ..text import STOP, fold, normalize
from .evidence import Evidence
from .names import Ent, entities_in, entity_key, siblings
from .numbers import Num, number_matches, numbers_in
from .sentences import sentence_of, stem_set, tabular


def binding(claim: str, cnums: list[Num], cents: list[Ent], ev: Evidence):
    """``(code, reason, offset)`` when a claim value belongs to another name in ``ev``."""
    vals = [n for n in cnums if not n.word]
    if not vals:
        return None
    occ = {id(n): [en for en in ev.nums if en.lo is None and number_matches(n, en)] for n in vals}
    # the names of the claim that the passage has siblings of: those a value can be misbound to
    heads = {x.key for run in header_runs(ev) for x in run}
    fam = [e for e in cents if e.key in heads or any(siblings(x, e) for x in ev.ents)]
    pairs: list[tuple[Num, Ent]] = []
    for n in vals:
        best, dist = None, 1e9
        for e in fam:
            gap = (e.start - n.end) * 0.6 if e.start >= n.end else (n.start - e.end)
            if gap < dist:
                best, dist = e, gap
        if best is not None:
            pairs.append((n, best))
    # parallel order: names listed first ("on A and B"), then their values in the same order
    multi = [(n, e) for n, e in pairs if occ[id(n)]]
    if len(multi) >= 2 and len({e.key for _, e in multi}) >= 2:
        n1, e1 = multi[0]
        n2, e2 = next(p for p in multi[1:] if p[1].key != e1.key)
        p1 = [x for x in ev.ents if x.key == e1.key]
        p2 = [x for x in ev.ents if x.key == e2.key]
        if p1 and p2 and siblings(e1, e2):
            q1, q2 = occ[id(n1)][0].start, occ[id(n2)][0].start
            if max(p1[0].start, p2[0].start) < min(q1, q2):
                if (p1[0].start < p2[0].start) != (q1 < q2):
                    return ("values_swapped",
                            f"the passage gives its values for {p1[0].text} and {p2[0].text} in "
                            f"the other order: {n1.text} belongs to {p2[0].text}, not "
                            f"{p1[0].text}", min(q1, q2))
                return None
    header = header_of(ev)

    def owner(en: Num, e: Ent) -> Ent | None:
        col = column_of(ev, en, e, None)
        if col is not None:
            return col
        prev = [x for x in ev.ents if x.end <= en.start and (x.key == e.key or siblings(x, e))
                and not (header and x in header[0] and header[1] <= en.start)]
        return prev[-1] if prev else None

    for n in vals:
        hits = occ[id(n)]
        if not hits or not fam:
            continue
        # a value is misbound when some claim name has an owner for it in the passage and
        # no claim name owns it there
        found = {(id(en), e.key): owner(en, e) for en in hits for e in fam}
        if any(o is not None and o.key == k for (_i, k), o in found.items()):
            continue
        if any(owned_in_sentence(ev, en, e) for en in hits for e in fam):
            continue
        for e in fam:
            owners = [found[(id(en), e.key)] for en in hits]
            if all(o is not None for o in owners):
                return ("value_of_other",
                        f"the passage gives {hits[0].text} for {owners[0].text}, not for {e.text}",
                        hits[0].start)
    return row_label(claim, vals, occ, ev)

def owned_in_sentence(ev: Evidence, en: Num, e: Ent) -> bool:
    """Whether the prose sentence stating ``en`` names ``e`` as the nearest of ``e``'s
    family (``e`` or its siblings; a name after the value counts at 0.6 of its distance, as
    in the claim): "In MCF-7 cells, PLSCR2 levels fell" gives the 7 to PLSCR2 whatever
    sibling the sentence before ends with.  Table text is left to the row and column
    readings."""
    a, b = sentence_of(ev.text, en.start)
    if tabular(ev.text[a:b]):
        return False
    best, dist = None, 1e9
    for x in ev.ents:
        if not (a <= x.start < b) or not (x.key == e.key or siblings(x, e)):
            continue
        gap = (x.start - en.end) * 0.6 if x.start >= en.end else (en.start - x.end)
        if gap < dist:
            best, dist = x, gap
    return best is not None and best.key == e.key

def row_label(claim: str, vals: list[Num], occ: dict, ev: Evidence):
    """In table text, the words just before a value are its row label ("No authors 0.3M").
    A claim value whose row label shares no word with the claim, while another row's label
    does, is given in the passage for that other row."""
    text = normalize(ev.text)
    cterms = stem_set(re.sub(r"\d", " ", claim))
    for n in vals:
        found = None
        for en in occ[id(n)]:
            block = table_block(text, en.start)
            sa, sb = block or sentence_of(text, en.start)
            if block is None and cterms and cterms <= stem_set(text[sa:sb]):
                found = None
                break  # stated in a sentence holding all the claim's words: the claim's own
            labels = [lab for lab in row_labels(text, sa, sb)
                      if lab[0] and len(lab[3].split()) <= 4 and not re.search(r"[,;.:()]", lab[3])]
            if len(labels) < 3:
                continue  # not a table: a few numbers in prose
            mine = next((lab for lab in labels if lab[1] <= en.start <= lab[2]), None)
            if mine is None:
                continue
            if mine[0] & cterms:
                found = None
                break  # this occurrence is bound to the claim's own row
            other = [lab for lab in labels if lab[0] & cterms and lab is not mine]
            if other and found is None:
                found = ("value_of_other",
                         f"the passage gives {en.text} for \"{mine[3]}\", not for \"{other[0][3]}\"",
                         en.start)
        if found:
            return found
    return None

def header_runs(ev: Evidence) -> list[list[Ent]]:
    """Runs of ≥ 2 names with nothing but spaces between them (a table's column header)."""
    text = normalize(ev.text)
    runs: list[list[Ent]] = []
    cur: list[Ent] = []
    for x in ev.ents:
        if cur and text[cur[-1].end:x.start].strip(" \n") == "":
            cur.append(x)
        else:
            if len(cur) >= 2:
                runs.append(cur)
            cur = [x]
    if len(cur) >= 2:
        runs.append(cur)
    return runs

def header_of(ev: Evidence, e: Ent | None = None, before: int | None = None):
    """A table's column header: a run of ≥ 2 names with only spaces between them (the last
    one before ``before`` holding ``e`` or a sibling, else the last one), its last name
    dropped when a number follows it directly (that is the first row's label)."""
    text = normalize(ev.text)
    runs = []
    for run in header_runs(ev):
        if before is not None and run[-1].end > before:
            continue
        after = text[run[-1].end:run[-1].end + 12]
        if re.match(r"\s*(?:\[\d+\]\s*)?\d", after):
            run = run[:-1]
        if len(run) >= 2:
            runs.append(run)
    if not runs:
        return None
    if e is not None:
        fam = [r for r in runs if any(x.key == e.key or siblings(x, e) for x in r)]
        if fam:
            return fam[-1], fam[-1][-1].end
    return runs[-1], runs[-1][-1].end

def column_of(ev: Evidence, en: Num, e: Ent, header) -> Ent | None:
    """The header name above the cell holding ``en``, when the claim's name ``e`` (or a
    sibling) heads a column: the cells are matched to the run of ``e``'s siblings in the
    header from its start, or, when the header holds no siblings of ``e``, to the whole
    header from its end (a first header word may name the row-label column)."""
    header = header_of(ev, e, en.start)
    if header is None:
        return None
    run = header[0]
    fam = [x for x in run if x.key == e.key or siblings(x, e)]
    if not any(x.key == e.key for x in run) and len(fam) < 2:
        return None
    whole = len(fam) < 2
    text = normalize(ev.text)
    row = next((r for r in cell_runs(text) if any(a <= en.start < b for a, b in r)), None)
    if row is None or len(row) < 2:
        return None
    idx = next(i for i, (a, b) in enumerate(row) if a <= en.start < b)
    if whole:
        k = len(run) - len(row) + idx
        return run[k] if 0 <= k < len(run) and len(row) <= len(run) else None
    return fam[idx] if idx < len(fam) else None


_ROW_LINE = re.compile(r"(?<![\w.])\d[\d.,]*%?[kKMB]?(?![\w])|(?<!\S)-(?!\S)")


def table_block(text: str, pos: int) -> tuple[int, int] | None:
    """The run of lines around ``pos`` that each hold a cell (a number or a dash): a table laid
    out one row per line, as the PDF layer extracts tables.  None for one-line text."""
    if "\n" not in text:
        return None
    lines = []
    start = 0
    for line in text.split("\n"):
        lines.append((start, start + len(line)))
        start += len(line) + 1
    at = next((i for i, (a, b) in enumerate(lines) if a <= pos <= b), None)
    if at is None:
        return None

    def row(i: int) -> bool:
        return _ROW_LINE.search(text, lines[i][0], lines[i][1]) is not None

    lo = hi = at
    while lo > 0 and row(lo - 1):
        lo -= 1
    while hi + 1 < len(lines) and row(hi + 1):
        hi += 1
    return (lines[lo][0], lines[hi][1]) if hi > lo else None


def row_labels(text: str, a: int, b: int) -> list[tuple[set[str], int, int, str]]:
    """In the table text ``text[a:b]``, each run of cells with the words before it (back to the
    previous cell): ``(label stems, cells start, cells end, label text)``."""
    rows = [r for r in cell_runs(text) if r[0][0] >= a and r[-1][1] <= b]
    out = []
    prev_end = a
    for r in rows:
        label = text[prev_end:r[0][0]].strip()
        out.append((stem_set(label), r[0][0], r[-1][1], label))
        prev_end = r[-1][1]
    return out


@functools.lru_cache(maxsize=4096)
def cell_runs(text: str) -> list[list[tuple[int, int]]]:
    """Runs of table cells: numbers (with "± x", "%", "/y"), dashes; as character spans
    (reference markers such as "[3]" are not cells)."""
    text = re.sub(r"\[\d+(?:,\s*\d+)*\]", lambda m: " " * len(m.group(0)), text)
    cell = re.compile(r"(?<![\w.])(?:-|\d[\d.,]*%?(?:/\d[\d.,]*)?(?:\s?±\s?\d[\d.]*)?[kKMB]?)(?![\w])")
    rows: list[list[tuple[int, int]]] = []
    cur: list[tuple[int, int]] = []
    last = None
    for m in cell.finditer(text):
        if last is not None and text[last:m.start()].strip() == "":
            cur.append((m.start(), m.end()))
        else:
            if cur:
                rows.append(cur)
            cur = [(m.start(), m.end())]
        last = m.end()
    if cur:
        rows.append(cur)
    return rows


# ------------------------------------------------------------------------ "value for name" pairs

_FOR_PAIR = re.compile(r"(?P<v>\d[\d.,]*\s?%?)(?:\s+[a-z]+){0,2}?\s+(?:for|through|on|with|in)\s+"
                       r"(?:the\s+)?(?P<l>[\w\-]+(?:\s+[\w\-]+)?)")
# ("of" is left out: "0.28% of the parameters" names the whole a share is of, not its owner)
_LABEL_STOP = frozenset(["all", "each", "every", "both", "the", "a", "an", "total", "average", "mean"])


def _label(words_: str) -> str:
    """A pair's label as one key: its first two words (function words left out), lower-case
    letters and digits only, so "RealScholar Query" = "RealScholarQuery"."""
    out = [w for w in re.findall(r"[A-Za-z][\w\-]*", words_)
           if w.lower() not in STOP and w.lower() not in _LABEL_STOP]
    return re.sub(r"[^0-9a-z]", "", fold(" ".join(out[:2])).lower())


def _same_label(a: str, b: str) -> bool:
    """Two labels name the same thing when one key starts the other ("prefixtuning" and
    "prefixtuningof..." cut at two words; "lora" and "loras")."""
    if not a or not b:
        return False
    short, long_ = sorted((a, b), key=len)
    return len(short) >= 2 and long_.startswith(short) and (len(short) >= 3 or short == long_)


def value_pairs(text: str) -> list[tuple[Num, str]]:
    """The "V for L" pairs of ``text`` ("0.25% for LoRA", "295 for fine-tuning"): each value with
    the label its own words give it."""
    text = normalize(text)
    nums = numbers_in(text, evidence=True)
    out = []
    for m in _FOR_PAIR.finditer(text):
        n = next((x for x in nums if x.start == m.start("v") and x.lo is None), None)
        lab = _label(m.group("l"))
        if n is not None and lab:
            out.append((n, lab))
    return out


def for_binding(claim: str, cnums: list[Num], ev: Evidence):
    """``("value_of_other", reason, offset)`` when the claim pairs a value with a label ("0.28%
    for LoRA") that the passage pairs with another label ("0.28% for DoRA") while the passage
    gives the claim's label another value ("0.25% for LoRA"): both pairings read from the texts'
    own "V for L" wording, so the claim swapped the value.  None otherwise."""
    theirs = value_pairs(ev.text)
    if not theirs:
        return None
    text = normalize(claim)
    mine = {n.start: [lab] for n, lab in value_pairs(claim)}  # by offset: cnums are other objects
    for n in cnums:
        # and the name just before it in its clause ("LoRA updates 0.28% of ...")
        clause_start = max(text.rfind(ch, 0, n.start) for ch in ",;:(")
        before = [e for e in entities_in(text[clause_start + 1:n.start])]
        if before and n.start not in mine:  # only where its own words give it no label
            mine.setdefault(n.start, []).append(entity_key(before[-1].text))
    for n in cnums:
        labs = mine.get(n.start)
        if n.word or not labs:
            continue
        same_value = [(en, el) for en, el in theirs if number_matches(n, en)]
        if not same_value or any(_same_label(el, lab) for _en, el in same_value for lab in labs):
            continue  # the passage pairs it with the claim's label (or not at all)
        for lab in labs:
            mine_there = [(en, el) for en, el in theirs if _same_label(el, lab) and not number_matches(n, en)]
            if mine_there:
                en, el = same_value[0]
                return ("value_of_other", f"the passage gives {en.text.strip()} for {el} and "
                        f"{mine_there[0][0].text.strip()} for {lab}", en.start)
    return None
