"""The one rule for "is this line a float's caption": a line that starts with a float's label.

A caption starts its line with ``Table N`` / ``Figure N`` / ``Fig. N`` / ``Algorithm N``
(``N`` a number, a Roman numeral as IEEE prints it, or an appendix label ``A1`` / ``B.2``)
followed by a delimiter (``:``, ``.``, ``|``) or the end of the line.  ``Table 2 shows ...``
has no delimiter: it is a sentence about a table, not its caption (the splitter still accepts
it when the label is set in its own face; that evidence is the layout's, in
:mod:`episteme.pdf.objects`).

Why one module: the splitter (objects, table grids, headings) and the layers above it (the
compiled object lists, the offline answerer) each asked the same question with their own
pattern, and they drifted apart (one knew Roman numerals, one knew ``Algorithm``, one did not
know appendix labels).  Everything that asks now imports :func:`caption_match` (the label line)
or :func:`names_float` (a line that merely starts with a float's name, which is never a
heading); :func:`caption_label` and :func:`strip_label` give the label and the text after it.
"""

from __future__ import annotations

import re

#: a caption's label at the start of a line: the float's kind, its number and the delimiter
#: (or nothing after the label at all)
CAPTION_LABEL = re.compile(
    r"^(?P<kind>table|figure|fig\.|algorithm)\s*(?P<num>\d{1,2}|[IVX]{1,5}|[A-H]\.?\d{1,2})"
    r"(?P<delim>\s*[:.|]|\s*$)",
    re.I,
)
#: a line led by a float's name as a word ("Figure", "Fig.", "Table", "Algorithm"), caption
#: or not: a heading never starts so
_FLOAT_WORD = re.compile(r"^(fig(ure)?|table|algorithm)\b", re.I)


def caption_match(text: str) -> re.Match | None:
    """The caption label at the start of ``text`` (leading and trailing blanks ignored), with
    groups ``kind``, ``num`` and ``delim``; None when the line does not start with one."""
    return CAPTION_LABEL.match(text.strip())


def caption_kind(word: str) -> str:
    """The float kind a label word names: ``figure`` for "Fig."/"Figure", else the word
    lower-cased ("table", "algorithm")."""
    w = word.lower().rstrip(".")
    return "figure" if w in ("fig", "figure") else w


def caption_label(text: str) -> str | None:
    """The normalised label of the caption ``text`` starts with ("Fig. 3:" -> "figure 3"),
    None when it starts with none."""
    m = caption_match(text)
    if not m:
        return None
    return f"{caption_kind(m.group('kind'))} {m.group('num').rstrip('.')}".lower()


def strip_label(text: str) -> str:
    """``text`` without the caption label it starts with ("Table 2: BLEU scores" -> "BLEU
    scores"); ``text`` stripped when it has none."""
    m = caption_match(text)
    return text.strip()[m.end():].strip() if m else text.strip()


def names_float(text: str) -> bool:
    """Whether ``text`` starts with a float's name as a word (a caption, or a sentence or cell
    about a float): such a line is never a heading."""
    return bool(_FLOAT_WORD.match(text))
