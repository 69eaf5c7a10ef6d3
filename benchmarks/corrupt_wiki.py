"""Deterministic, generic corruption of a wiki's sentences, for measuring ``lint --claims``.

Each corruption works on *any* sentence by its form, never on a hand-picked one:

* ``number``: a numeral of the sentence (not a citation ``[12]``, a § number or a label such as
  "Table 2") gets another value of the same format (``28.4`` → ``31.2``, ``6`` → ``8``);
* ``entity``: a named thing (a token the verifier's :func:`episteme.query.verify.entities_in` calls a
  name: mixed case, letters+digits, a capitalised word inside the sentence) is replaced by another
  name of the same shape found elsewhere in the wiki's sections on the *same* papers (a dataset
  for a dataset, a model for a model, as far as shape tells);
* ``pair``: an ``X-to-Y`` / ``X-Y`` pair of capitalised words reversed (``English-to-German`` →
  ``German-to-English``);
* ``comparison``: a comparative flipped to its antonym (higher/lower, better/worse, more/less,
  outperforms/underperforms, ...: English grammar, not wording of any paper);
* ``negation``: ``not`` added after the first auxiliary verb (``is`` → ``is not``), or removed;
* ``wrong_paper``: the sentence copied into a section whose sources share no paper with its own.

:func:`plan_corruptions` picks sentences with a seeded RNG; :func:`apply_corruptions` edits the
page files in place (one edit per sentence, the rest of the page byte for byte).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

KINDS = ("number", "entity", "pair", "comparison", "negation", "wrong_paper")

_ANTONYMS = [
    ("higher", "lower"), ("better", "worse"), ("more", "less"), ("faster", "slower"),
    ("larger", "smaller"), ("bigger", "smaller"), ("increases", "decreases"), ("increase", "decrease"),
    ("increased", "decreased"), ("improves", "degrades"), ("improved", "degraded"),
    ("outperforms", "underperforms"), ("outperform", "underperform"), ("above", "below"),
    ("best", "worst"), ("fewer", "more"), ("longer", "shorter"), ("easier", "harder"),
    ("stronger", "weaker"), ("deeper", "shallower"), ("cheaper", "costlier"), ("superior", "inferior"),
    ("maximize", "minimize"), ("maximizes", "minimizes"), ("maximum", "minimum"), ("highest", "lowest"),
    ("largest", "smallest"), ("greater", "smaller"), ("earlier", "later"),
]
_FLIP = {}
for a, b in _ANTONYMS:
    _FLIP.setdefault(a, b)
    _FLIP.setdefault(b, a)
_CMP = re.compile(r"\b(" + "|".join(sorted(_FLIP, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_AUX = re.compile(r"\b(is|are|was|were|can|does|do|has|have|will|could|should|did)\b(\s+not\b)?")
_PAIR = re.compile(r"\b([A-Z][a-z]{2,})(-to-|-)([A-Z][a-z]{2,})\b")
_NUMTOK = re.compile(r"(?<![\w.\[§-])(\d+(?:\.\d+)?)(?![\w.]*\])(?!\.\d)(?![\w])")
_LABEL = re.compile(r"(?:Table|Figure|Fig\.|Section|Eq\.|Equation|Appendix|Algorithm|§|p\.)\s*$", re.IGNORECASE)


@dataclass
class Corruption:
    kind: str
    file: str  # page file, relative to the wiki
    line: int  # line of the corrupted sentence (the target line for wrong_paper)
    before: str  # the sentence as written (claim text)
    after: str  # the sentence after the edit (claim text)
    old: str = ""  # the substring replaced in the line
    new: str = ""
    section_id: str = ""
    target_section: str = ""  # wrong_paper: where the sentence was copied


def _numbers(text: str) -> list[re.Match]:
    out = []
    for m in _NUMTOK.finditer(text):
        before = text[:m.start()]
        if _LABEL.search(before) or before.endswith("[") or before.endswith("("):
            continue
        out.append(m)
    return out


def _new_number(tok: str, rng: random.Random) -> str:
    if "." in tok:
        whole, frac = tok.split(".")
        v = float(tok)
        for _ in range(20):
            nv = v * rng.choice([0.8, 0.85, 0.9, 1.1, 1.15, 1.25]) + rng.choice([-1, 1]) * 10 ** -len(frac) * rng.randint(1, 9)
            s = f"{max(nv, 0):.{len(frac)}f}"
            if s != tok:
                return s
        return tok + "1"
    v = int(tok)
    if 1900 <= v <= 2100:
        return str(v + rng.choice([-3, -2, 2, 3]))
    step = max(1, round(v * rng.choice([0.2, 0.25, 0.5])))
    nv = v + step if rng.random() < 0.6 or v - step < 0 else v - step
    return str(nv if nv != v else v + 1)


def _entities(text: str):
    from episteme.query.verify import entities_in

    return [e for e in entities_in(text) if len(e.text) >= 2 and not e.text.isdigit()]


def plan_corruptions(units: list[dict], *, per_kind: int = 20, seed: int = 17,
                     kinds: tuple[str, ...] = KINDS) -> list[Corruption]:
    """Pick and build corruptions.  ``units``: dicts ``{file, line, text, section_id, sources}``,
    the claims ``lint --claims`` reads (one per sentence).  At most one corruption per sentence."""
    from episteme.query.verify import shape

    rng = random.Random(seed)
    order = list(range(len(units)))
    rng.shuffle(order)
    used: set[int] = set()
    out: list[Corruption] = []
    # name pools per source set: what the wiki says about the same papers
    pools: dict[tuple, dict[str, list[str]]] = {}
    for u in units:
        pool = pools.setdefault(tuple(sorted(u["sources"])), {})
        for e in _entities(u["text"]):
            pool.setdefault(shape(e.text), [])
            if e.text not in pool[shape(e.text)]:
                pool[shape(e.text)].append(e.text)
    # the shape of a name's key is what pools are indexed by

    lines_taken: set[tuple[str, int]] = set()
    for kind in kinds:
        made = 0
        for i in order:
            if made >= per_kind:
                break
            if i in used:
                continue
            u = units[i]
            if (u["file"], u["line"]) in lines_taken:
                continue
            c = _corrupt(kind, u, units, pools, rng, shape)
            if c is None:
                continue
            used.add(i)
            lines_taken.add((u["file"], u["line"]))
            if c.kind == "wrong_paper":
                lines_taken.add((c.file, c.line))
            out.append(c)
            made += 1
    return out


def _corrupt(kind: str, u: dict, units: list[dict], pools, rng: random.Random, shape) -> Corruption | None:
    text = u["text"]
    if len(text.split()) < 6:
        return None
    if kind == "number":
        ms = _numbers(text)
        if not ms:
            return None
        m = rng.choice(ms)
        new = _new_number(m.group(1), rng)
        return _sub(kind, u, m.group(1), new, m.start())
    if kind == "entity":
        from episteme.query.verify import siblings

        # names of the dataset / model / metric form (letters with digits, inner capitals:
        # WMT, ResNet-152, CIFAR-10), swapped for another such name the wiki gives for the same
        # papers: a sibling (same shape, shared prefix or suffix) when there is one
        ents = [e for e in _entities(text) if re.search(r"\d", e.text) or re.search(r".[A-Z]", e.text)]
        rng.shuffle(ents)
        pool = pools.get(tuple(sorted(u["sources"])), {})
        for e in ents:
            cands = [t for t in pool.get(shape(e.text), []) if t.lower() != e.text.lower() and t not in text]
            sib = [t for t in cands if siblings(e.text, t)]
            pick = sib or cands
            if pick:
                return _sub(kind, u, e.text, rng.choice(sorted(pick)), e.start)
        return None
    if kind == "pair":
        m = _PAIR.search(text)
        if not m or m.group(1) == m.group(3):
            return None
        return _sub(kind, u, m.group(0), f"{m.group(3)}{m.group(2)}{m.group(1)}", m.start())
    if kind == "comparison":
        m = _CMP.search(text)
        if not m:
            return None
        w = m.group(1)
        flip = _FLIP[w.lower()]
        flip = flip.capitalize() if w[0].isupper() else flip
        return _sub(kind, u, w, flip, m.start())
    if kind == "negation":
        m = _AUX.search(text)
        if not m:
            return None
        if m.group(2):
            return _sub(kind, u, m.group(0), m.group(1), m.start())
        return _sub(kind, u, m.group(0), m.group(1) + " not", m.start())
    if kind == "wrong_paper":
        mine = set(u["sources"])
        targets = [v for v in units if not (set(v["sources"]) & mine) and v["section_id"] != u["section_id"]]
        if not targets:
            return None
        t = rng.choice(targets)
        return Corruption(kind, t["file"], t.get("section_end", t["line"]), text, text,
                          section_id=u["section_id"], target_section=t["section_id"])
    return None


def _sub(kind: str, u: dict, old: str, new: str, at: int) -> Corruption | None:
    text = u["text"]
    after = text[:at] + text[at:].replace(old, new, 1)
    if after == text:
        return None
    return Corruption(kind, u["file"], u["line"], text, after, old, new, u["section_id"])


def apply_corruptions(root: str | Path, corruptions: list[Corruption]) -> list[Corruption]:
    """Edit the pages; returns the corruptions actually applied (an edit whose sentence cannot
    be found on its line is dropped)."""
    root = Path(root)
    by_file: dict[str, list[Corruption]] = {}
    for c in corruptions:
        by_file.setdefault(c.file, []).append(c)
    applied: list[Corruption] = []
    for rel, cs in by_file.items():
        path = root / rel
        lines = path.read_text(encoding="utf-8").split("\n")
        inserts: list[tuple[int, str, Corruption]] = []
        for c in cs:
            if c.kind == "wrong_paper":
                inserts.append((c.line, c.after, c))
                continue
            k = c.line - 1
            line = lines[k]
            anchor = line.find(c.before[:24])
            start = anchor if anchor >= 0 else 0
            pos = line.find(c.old, start)
            if pos < 0:
                pos = line.find(c.old)
            if pos < 0:
                continue
            lines[k] = line[:pos] + c.new + line[pos + len(c.old):]
            applied.append(c)
        # insert bottom-up so earlier line numbers stay valid; lines of later corruptions in
        # this file move down by one per insert above them
        for at, text, c in sorted(inserts, key=lambda x: -x[0]):
            lines[at:at] = ["", text]
            c.line = at + 2
            for other in cs:
                if other is not c and other.line > at and (other.kind != "wrong_paper" or other.line != at):
                    other.line += 2
            applied.append(c)
        path.write_text("\n".join(lines), encoding="utf-8")
    return applied
