"""Tables: line-laid table text (a row label, its cells, the header line above) and tables placed by
x-position (:mod:`episteme.pdf.tablegrid`): a claim value read in the row and column the claim names."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import normalize, stem, unligature
from .cues import cue_tokens
from .evidence import Evidence
from .names import STRIP_LEAD, STRIP_TRAIL, Ent, entities_in, entity_key, lang_pair
from .numbers import CITATION_MARKS, Num, compound, fmt_num, number_matches, numbers_in
from .sentences import stem_set

# ------------------------------------------------------------------------------------- tables
# Tables as the PDF layer extracts them: one row per line, the row label first, then its cells;
# above the rows a header line of column names.  A claim value is read in its row (the row label
# must be something the claim names) and its column (the header name above its cell).

_TCELL = re.compile(
    r"(?<![\w.=])(?<![A-Za-z]-)(?:\d[\d.,]*(?:\s?·\s?\d+)?%?(?:/\d[\d.,]*%?)?(?:\s?±\s?\d[\d.]*)?[kKMB]?"
    r"|(?<=\S\s)-|(?<=\S\t)-)(?![\w.]\w)")
_HEADER_MAX_TOKENS = 16


@dataclass
class TableRow:
    label: str
    start: int  # line offsets in the text read
    end: int
    cells: list[tuple[int, int]]
    header: list[tuple[str, int, int]] | None  # the column names above the row


def table_rows(text: str) -> list[TableRow]:
    """The rows of line-laid table text, each with the header line last seen above it (a line
    of 2–16 names and no cells; a long caption line is prose, not a header)."""
    rows: list[TableRow] = []
    header: tuple[list, list] | None = None
    pos = 0
    for line in text.split("\n"):
        a, b = pos, pos + len(line)
        pos = b + 1
        body = CITATION_MARKS.sub(lambda m: " " * len(m.group(0)), line)
        cells = [(a + m.start(), a + m.end()) for m in _TCELL.finditer(body)]
        toks = [(m.group(0), a + m.start(), a + m.end()) for m in re.finditer(r"\S+", line)]
        # words among the cells (a caption line "Table 1: ..." holds a number, then prose)
        inner = len([t for t in toks if t[1] >= cells[0][1] and not any(
            x <= t[1] < y for x, y in cells)]) if cells else 0
        label = body[:cells[0][0] - a].strip(" -\t") if cells else ""
        if not cells or inner > 3 or len(label.split()) > 10:
            if 2 <= len(toks) <= _HEADER_MAX_TOKENS:
                # names split at spaces, and at tabs (a tab-separated header may hold
                # multi-word names: "Alpha Bank\tBeta Bank")
                tabbed = [(m.group(0).strip(), a + m.start(), a + m.end())
                          for m in re.finditer(r"[^\t]+", line) if m.group(0).strip()]
                header = (toks, tabbed)
            continue
        cols = None
        if header is not None:
            toks_h, tabbed = header
            fits = (len(cells), len(cells) + 1)
            cols = tabbed if len(tabbed) in fits and len(toks_h) not in fits else toks_h
        rows.append(TableRow(label, a, b, cells, cols))
    return rows


def _column(row: TableRow, k: int) -> str | None:
    """The header name above cell ``k``: only when the header has as many names as the row has
    cells (or one more, naming the label column); otherwise the columns are not certain."""
    if row.header is None:
        return None
    n, m = len(row.header), len(row.cells)
    if n == m:
        return row.header[k][0]
    if n == m + 1:
        return row.header[k + 1][0]
    return None


def table_binding(claim: str, cnums: list[Num], cents: list[Ent], ev: Evidence):
    """A claim value that a line-laid table of the passage gives under another column than the
    one the claim names (``value_of_other``), or two values whose columns the claim swaps
    (``values_swapped``: their order in the row against their columns' order in the header).
    Returns ``(code, text, offset in the passage)`` or None."""

    vals = [n for n in cnums if not n.word]
    if not vals or "\n" not in ev.text:
        return None
    head = ev.head.rstrip("\n") + "\n" if ev.head else ""
    text = normalize(head + ev.text)
    shift = len(head)
    rows = [r for r in table_rows(text) if r.start >= shift and r.header]
    if not rows:
        return None
    cterms = stem_set(re.sub(r"\d", " ", claim))
    ckeys = {e.key for e in cents}
    # what the claim names that a header can name: its entities and its plain words
    items = [(e.key, e.start, e.end) for e in cents] + [
        ("w:" + stem(w), s_, e_) for w, s_, e_ in cue_tokens(claim) if w.isalpha() and len(w) > 2]

    def hkey(tok: str) -> set[str]:
        out = {entity_key(tok)}
        low = re.sub(r"[^a-z]", "", tok.lower())
        if low:
            out.add("w:" + stem(low))
        return out

    def tkeys(tok: str) -> set[str]:
        """A header name's keys, and its words' keys when it has several words."""
        out = hkey(tok)
        if " " in tok:
            for w in tok.split():
                out |= hkey(w)
        return out

    def row_named(r: TableRow) -> bool:
        lab = r.label
        if not lab:
            return False
        squashed = re.sub(r"[^0-9a-z]", "", lab.lower())
        return bool(stem_set(lab) & cterms) or any(len(k) >= 3 and k in squashed for k in ckeys)

    def claimed_column(n: Num, r: TableRow, aligned: bool = False) -> tuple[str, int] | None:
        """The header name the claim ties ``n`` to: the nearest claim item naming a column."""
        best, dist = None, 1e9
        # read against the aligned columns, a header one name longer than the row names its
        # label column first: that name ("Gene", "System") is never a value's column
        skip = 1 if aligned and len(r.header) == len(r.cells) + 1 else 0
        for key, s_, e_ in items:
            hit = [i for i, (t, _a, _b) in enumerate(r.header) if i >= skip and key in tkeys(t)]
            if not hit or len({r.header[i][0] for i in hit}) > 1:
                continue  # names no column, or several ("Bank" of "Alpha Bank", "Beta Bank")
            idx = hit[0]
            gap = (s_ - n.end) * 0.6 if s_ >= n.end else (n.start - e_)
            if gap < dist:
                best, dist = (r.header[idx][0], idx), gap
        return best

    def cell_has(r: TableRow, k: int, n: Num) -> bool:
        a, b = r.cells[k]
        return any(number_matches(n, en) for en in numbers_in(text[a:b], evidence=True))

    placed: dict[int, list[tuple[TableRow, int]]] = {}
    for n in vals:
        placed[id(n)] = [(r, k) for r in rows if row_named(r) for k in range(len(r.cells))
                         if cell_has(r, k, n)]
    # a value under a column other than the one the claim names for it
    for n in vals:
        occ = placed[id(n)]
        verdicts = []
        for r, k in occ:
            col = _column(r, k)
            want = claimed_column(n, r, aligned=True)
            if col is None or want is None:
                verdicts.append(None)
                continue
            verdicts.append(col if col != want[0] and not (hkey(col) & {i[0] for i in items}) else "")
        if verdicts and all(v for v in verdicts):
            r, k = occ[0]
            want = claimed_column(n, r, aligned=True)
            return ("value_of_other", f"the table gives {text[slice(*r.cells[k])]} under "
                    f"{verdicts[0]}, not under {want[0]}", r.cells[k][0] - shift)
    # two values of one row whose columns the claim names in the other order
    for i, n1 in enumerate(vals):
        for n2 in vals[i + 1:]:
            for r, k1 in placed[id(n1)]:
                for r2, k2 in placed[id(n2)]:
                    if r2 is not r or k1 == k2:
                        continue
                    c1, c2 = claimed_column(n1, r), claimed_column(n2, r)
                    if not c1 or not c2 or c1[0] == c2[0] or entity_key(c1[0]) == entity_key(c2[0]):
                        continue
                    if (k1 < k2) != (c1[1] < c2[1]):
                        first, second = (n1, n2) if k1 < k2 else (n2, n1)
                        cf, cs = (c1, c2) if k1 < k2 else (c2, c1)
                        return ("values_swapped",
                                f"the table's row gives {first.text} then {second.text} and its "
                                f"header {cs[0]} then {cf[0]}: {first.text} is under {cs[0]}, not "
                                f"{cf[0]}",
                                r.cells[min(k1, k2)][0] - shift)
    return None


# ------------------------------------------------------------------- tables placed by x-position
# When the tracer can read the table's page (PDFium), each value cell comes with the header
# names printed above it and its row's label (``episteme.pdf.tablegrid``): a claim's value is then
# checked in the cell the claim points at, whatever the text's tabs and spaces say.

_STRICT = re.compile(r"[^0-9a-z+#]")


def _strict_tokens(text: str) -> set[str]:
    """A text's tokens, lower-case, letters, digits, ``+`` and ``#`` kept (``BM25+`` is not
    ``BM25``), citation markers and brackets left out."""
    text = CITATION_MARKS.sub(" ", normalize(unligature(text)))
    out = set()
    for tok in re.split(r"[\s,;:()\[\]{}\"]+", text):
        tok = tok.strip(STRIP_LEAD + STRIP_TRAIL)
        key = _STRICT.sub("", tok.lower())
        if key:
            out.add(key)
    return out


def _name_parts(name: str) -> tuple[set[str], set[str]]:
    """A row label's or header name's distinctive tokens (names by form and tokens with digits,
    as strict keys: ``BM25+``, ``1&2``, ``.GOV2``) and its plain content stems."""
    name = CITATION_MARKS.sub(" ", name)
    pair = lang_pair(name.strip())
    if pair:
        return {"pair:" + "".join(pair)}, set()
    ents = {_STRICT.sub("", e.text.lower()) for e in entities_in(name)
            if re.search(r"[A-Za-z]", e.text) and (re.search(r"\d", e.text) or
                                                   any(c.isupper() for c in e.text[1:]))}
    ents |= {t for t in _strict_tokens(name) if re.search(r"\d", t)}
    ents.discard("")
    return ents, stem_set(re.sub(r"\d", " ", name))


def _names(name: str, claim_tokens: set[str], claim_stems: set[str]) -> bool:
    """Whether the claim names ``name``: every distinctive token of it and half its plain words
    or more (all of them when it has no distinctive token, at least one of three letters)."""
    ents, stems = _name_parts(name)
    if ents:
        return ents <= claim_tokens and 2 * len(stems & claim_stems) >= len(stems)
    return bool(stems) and stems <= claim_stems and any(len(s) >= 3 for s in stems)


def grid_check(claim: str, cnums: list[Num], grid) -> tuple[str, str, tuple[int, int]] | None:
    """``(code, reason, (row index, cell index))``: ``("agree", "", cell)`` when a row the claim
    names (any row, when it names none) holds all its values under the columns it names; else
    when the table contradicts a claim value:

    * ``value_of_other``: the claim's row holds the value under another column than the one the
      claim names (the columns from the header lines printed above each cell);
    * ``cell_differs``: the value stands in a row the claim does not name, and the claim's row
      holds another value in that column;
    * ``values_split``: the claim's values stand in two different rows (each once), the
      claim naming neither apart: the row of the one in the leftmost column holds another value.
    None when the table agrees or cannot tell."""
    vals = [n for n in cnums if not n.word and n.lo is None]
    if not vals or grid is None or not grid.rows:
        return None
    ctoks = _strict_tokens(claim) | {"pair:" + "".join(p) for e in entities_in(claim)
                                     if (p := lang_pair(e.text))}
    cstems = stem_set(re.sub(r"\d", " ", claim))

    def has(cell, n: Num) -> bool:
        return any(number_matches(n, en) for en in numbers_in(cell.text, evidence=True))

    # a row is named by one of its label cells (a label may run over two columns: a gene and
    # its location, a group and a method)
    named_rows = {i for i, r in enumerate(grid.rows)
                  if any(_names(c.text, ctoks, cstems) for c in r.cells[:r.values[0]])}
    labelled = any(r.label for r in grid.rows)
    # the header names the claim names; a name's words also found in a row label do not count
    header_names = {c.text for line in grid.header_lines for c in line} - grid.label_heads
    named_cols = {h for h in header_names if _names(h, ctoks, cstems)}
    where = {id(n): [(i, k) for i, r in enumerate(grid.rows) for k in r.values if has(r.cells[k], n)]
             for n in vals}
    in_table = [n for n in vals if where[id(n)]]
    if not in_table:
        return None
    rows = grid.rows
    # the claim's values the table does not hold (a setting such as "10-crop", or a number in
    # a name, "Recall@20", "ResNet-152", names the table or a column, not a value of it)
    text = normalize(claim)
    missing = [n for n in vals if not where[id(n)] and not compound(claim, n)
               and (n.start == 0 or text[n.start - 1].isspace() or text[n.start - 1] in "(")]
    # a row holding all the claim's values (named, or no row named at all): the table agrees
    # unless the claim names another column for one of them
    first_bad = None
    for i, r in enumerate(rows):
        if (i in named_rows or not labelled) and all(any(j == i for j, _k in where[id(n)])
                                                     for n in in_table):
            # a named column holding another of the claim's values in this row is that value's
            used = {h for n in in_table for j, k in where[id(n)] if j == i for h in r.heads[k]}

            def ok(k: int, r=r, used=used) -> bool:
                """On every header line where the claim names a column, the name above cell
                ``k`` is one the claim names (or the column of another of its values)."""
                rivals = named_cols - (used - set(r.heads[k]))
                mine = set(r.heads[k])
                for line in grid.header_lines:
                    texts = {c.text for c in line}
                    if texts & rivals and texts & mine and not (texts & mine & rivals):
                        return False
                return True

            bad = [n for n in in_table if not any(ok(k) for j, k in where[id(n)] if j == i)]
            if not bad and missing and i in named_rows:
                # the row the claim names holds its other values, and under the one column
                # it names that they do not fill, another value than the claim's: that is
                # the value the claim changed (19.38 for the table's 21.43)
                free = [k for k in r.values if set(r.heads[k]) & named_cols
                        and not set(r.heads[k]) & used and numbers_in(r.cells[k].text, evidence=True)]
                if len(missing) == 1 and len(free) == 1:
                    k = free[0]
                    return ("cell_differs", f"the table gives {r.cells[k].text} for "
                            f"{r.label or 'that row'} under {' / '.join(r.heads[k])}, not "
                            f"{fmt_num(missing[0])}", (i, k))
            if not bad:
                k0 = next(k for j, k in where[id(in_table[0])] if j == i)
                return ("agree", f"the table's row {r.label or r.cells[k0].text} gives "
                        f"{r.cells[k0].text} under {' / '.join(r.heads[k0]) or 'its column'}", (i, k0))
            if first_bad is None:
                n = bad[0]
                k = next(k for j, k in where[id(n)] if j == i)
                rivals = sorted(named_cols - used) or sorted(named_cols)
                first_bad = ("value_of_other", f"the table gives {r.cells[k].text} for "
                             f"{r.label or 'that row'} under {' / '.join(r.heads[k]) or 'another column'}"
                             f", not under {rivals[0]}", (i, k))
    if first_bad is not None:
        return first_bad
    return _other_rows(rows, named_rows, in_table, where, ctoks)


def _other_rows(rows, named_rows: set[int], in_table: list[Num], where: dict,
                ctoks: set[str]) -> tuple[str, str, tuple[int, int]] | None:
    """The rest of :func:`grid_check`: the claim's values stand in rows it does not name
    (``cell_differs``), or split over two rows (``values_split``)."""
    if len(named_rows) >= 1:
        # the value stands only in rows the claim does not name
        for n in in_table:
            occ = where[id(n)]
            if any(j in named_rows for j, _k in occ) or len(occ) != 1:
                continue
            j, k = occ[0]
            col = rows[j].cols.get(k)
            targets = [(i, kk) for i in sorted(named_rows) for kk in rows[i].values
                       if rows[i].cols.get(kk) == col]
            if len(targets) == 1 and not (_strict_tokens(rows[j].label) - _strict_tokens(
                    rows[targets[0][0]].label)) <= ctoks:
                i, kk = targets[0]
                return ("cell_differs", f"the table gives {rows[i].cells[kk].text} for "
                        f"{rows[i].label} under {' / '.join(rows[i].heads[kk]) or 'that column'}; "
                        f"{rows[j].cells[k].text} is {rows[j].label}'s", (i, kk))
    if len(in_table) >= 2:
        for a in in_table:
            for b in in_table:
                if a is b or len(where[id(a)]) != 1 or len(where[id(b)]) != 1:
                    continue
                (ia, ka), (ib, kb) = where[id(a)][0], where[id(b)][0]
                if ia == ib or ia in named_rows and ib in named_rows:
                    continue
                if rows[ia].cols.get(ka, 99) >= rows[ib].cols.get(kb, 99):
                    continue  # a is the row's key: the leftmost of the two
                col = rows[ib].cols.get(kb)
                other = [kk for kk in rows[ia].values if rows[ia].cols.get(kk) == col]
                if len(other) != 1:
                    continue
                kk = other[0]
                return ("values_split", f"the table's row with {rows[ia].cells[ka].text} gives "
                        f"{rows[ia].cells[kk].text} under {' / '.join(rows[ia].heads[kk]) or 'that column'}"
                        f"; {rows[ib].cells[kb].text} is another row's", (ia, kk))
    return None


def grid_span(ev: Evidence, grid, ri: int, ki: int) -> tuple[int, int] | None:
    """The passage offsets of the printed line holding grid row ``ri`` (None when the row is
    in another chunk of the table than this passage)."""
    line = grid.rows[ri].text
    at = ev.text.find(line) if line else -1
    return (at, at + len(line)) if at >= 0 else None
