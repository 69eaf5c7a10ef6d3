"""The verifier: which check runs when, and which verdict wins.

The checks live in their own modules (:mod:`.numbers`, :mod:`.names`, :mod:`.bindings`,
:mod:`.tables`, :mod:`.polarity`, :mod:`.quotes`); :class:`Verifier` orders them over one
claim's candidate passages.  The order is the precedence: a quote of a passage is supported
before any check runs; a name no paper mentions, a table cell, a number, a sibling name and a
value bound to another name come before the sentence-level reading (roles, comparison,
negation), and similarity alone decides last.  The first check that finds something gives the
verdict (contradicted over unsupported within a check).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .bindings import binding, for_binding
from .evidence import Evidence, aligned_number, has_entity, number_aligned, sibling_in
from .names import Ent, claim_entities, entities_in
from .numbers import Num, compound, fmt_num, number_matches, numbers_in, specificity
from .polarity import (
    alternative_swapped,
    comparison_in,
    denied_stated,
    negated_heads,
    negated_near,
    negated_terms,
    privative_near,
    restates,
    role_swap,
    setting_swapped,
)
from .quotes import verbatim_span
from .sentences import (
    best_sentence,
    claim_topic_share,
    sentence_of,
    sentence_spans,
    stem_set,
    tabular,
)
from .tables import grid_check, grid_span, table_binding
from .tuning import DEFAULT, VerifyTuning
from .verdict import CONTRADICTED, SUPPORTED, UNSUPPORTED, front, outcome


@dataclass
class _Case:
    """One claim against its candidates, as the checks read it: what each passage states of
    the claim's numbers and names, the passages in evidence order, and the one the verdict
    rests on so far (checks may move it)."""

    claim: str
    cands: list[Evidence]
    cnums: list[Num]
    cents: list[Ent]
    cterms: set[str]
    found_n: list[list[bool]]
    found_e: list[list[bool]]
    cover: list[float]
    order: list[int]
    best: int
    grid_agrees: str = ""  # the reason text when a table's cell states the claim

    @property
    def ev(self) -> Evidence:
        return self.cands[self.best]


class Verifier:
    """Verify claims against ranked candidate passages.

    ``in_scope(entity_text) -> bool`` says whether any passage of the papers in scope names a
    thing (the tracer answers it from SQLite); without it a name absent from the candidates is
    not held against the claim.  ``tuning`` holds the calibrated thresholds
    (:class:`~.tuning.VerifyTuning`).
    """

    def __init__(self, in_scope: Callable[[str], bool] | None = None,
                 threshold: float | None = None, *, tuning: VerifyTuning = DEFAULT,
                 grid_of: Callable[[dict, list[Num]], object] | None = None,
                 verbatim: bool = True):
        self.in_scope = in_scope
        # a claim quoting a passage (:func:`verbatim_span`) is supported without further
        # checks; ``False`` only to measure the checks themselves (bench_verify --self-consistency)
        self.verbatim = verbatim
        # (table passage, claim numbers) -> its cells placed by x (pdf.tablegrid.Grid), or None
        # when that table states none of the numbers
        self.grid_of = grid_of
        self.threshold = threshold
        self.tuning = tuning

    def verify(self, claim: str, passages: Sequence[dict], *, support: float | None = None) -> dict:
        """The verdict of ``claim`` given its ranked passages (dicts with ``text`` and ``score``).

        Returns ``{"verdict", "reason": {"code", "text"}, "evidence": i, "quote": str,
        "order": [passage indexes, best first]}``; ``evidence`` is the passage the verdict rests
        on (``None`` when there is none) and ``order`` the citations re-ranked so that passages
        stating the claim's numbers and names come first."""
        # the K best passages, plus any further candidate that states *all* the claim's values
        # when together they are specific enough not to meet by chance (``specificity`` summed
        # ≥ 4: "27.3 … 38.1", "15.2 million", not "3 … 8").  The tracer appends the passages
        # anchored on the claim's numbers: a table row rarely ranks high by wording, yet it is
        # the passage a number claim is about.
        idx = list(range(min(self.tuning.evidence_k, len(passages))))
        hard = [n for n in numbers_in(claim) if not n.word]
        if sum(map(specificity, hard)) >= 4:
            for j in range(self.tuning.evidence_k, len(passages)):
                pn = numbers_in(passages[j]["text"], evidence=True)
                if all(any(number_matches(n, en) for en in pn) for n in hard):
                    idx.append(j)
        out = self._verify(claim, [passages[j] for j in idx], support)
        out["order"] = [idx[i] for i in out["order"]]
        if out["evidence"] is not None:
            out["evidence"] = idx[out["evidence"]]
        return out

    def _verify(self, claim: str, passages: Sequence[dict], support: float | None) -> dict:
        cands = [Evidence(p["text"], float(p.get("score", 0.0)), p.get("paper"),
                          head=p.get("table_head") or "", src=p) for p in passages]
        cnums = [n for n in numbers_in(claim)]
        if not cands:
            return outcome(UNSUPPORTED, "no_passage", "no passage of the papers in scope is "
                           "close to this claim", None, None, [])
        if self.verbatim:
            # 0. a quote of a passage: the paper says it (no check below may overrule its
            # source; a check that would has misread the passage)
            for i, ev in enumerate(cands):
                span = verbatim_span(claim, ev.text)
                if span is not None:
                    return outcome(SUPPORTED, "match", "the passage states this word for word",
                                   i, span, front(list(range(len(cands))), i), cands,
                                   compared=(claim, ev.text[span[0]:span[1]]))
        case = self._read(claim, cands, cnums)
        for check in (self._absent_names, self._table_grid, self._numbers, self._sibling_names,
                      self._bindings, self._sentences):
            out = check(case)
            if out is not None:
                return out
        return self._similarity(case, support)

    def _read(self, claim: str, cands: list[Evidence], cnums: list[Num]) -> _Case:
        """What each candidate states of the claim, and the candidates in evidence order."""
        cents = claim_entities(claim)
        cterms = stem_set(claim)
        for ev in cands:
            ev.nums = numbers_in(ev.text, evidence=True)
            ev.ents = entities_in(ev.text)
        # which claim numbers / names each passage states
        # a value counts only where the passage is about the claim at all: a "5" in a passage
        # sharing almost none of the claim's words ("5 hybrids" in another paper, for "k = 5
        # steps") is a coincidence of digits, and must not outrank the on-topic passage that
        # gives the claim's quantity another value (a table's chunk is read with its caption;
        # the share is of the claim's words without digits, "CIFAR100" is a name, and a claim
        # of numbers alone has nothing to judge by)
        words_of = {t for t in cterms if not any(c.isdigit() for c in t)}
        topic_of = [len(words_of & stem_set(f"{ev.head}\n{ev.text}")) / len(words_of) if words_of
                    else 1.0 for ev in cands]
        floor = self.tuning.number_topic_floor
        found_n = [[t >= floor and any(number_matches(n, en) for en in ev.nums)
                    for n in cnums] for ev, t in zip(cands, topic_of, strict=True)]
        found_e = [[has_entity(ev, e) for e in cents] for ev in cands]
        cover = [len(cterms & stem_set(ev.text)) / (len(cterms) or 1) for ev in cands]

        # a value's weight is its specificity (digits written): "21.43" identifies a passage,
        # the "10" of "10-crop" hardly does
        nweight = [specificity(n) for n in cnums]

        def rank_key(i: int):
            # the claim's numbers first (a passage giving all of them is the one it is about),
            # then its names, its words and the tracer's score
            nums = sum(w for w, f in zip(nweight, found_n[i], strict=True) if f) / sum(nweight) \
                if cnums else 0.0
            ents = sum(found_e[i]) / len(cents) if cents else 0.0
            return (-round(nums, 3), -(ents + 0.5 * cover[i] + cands[i].score), i)

        order = sorted(range(len(cands)), key=rank_key)
        return _Case(claim, cands, cnums, cents, cterms, found_n, found_e, cover, order, order[0])

    def _absent_names(self, c: _Case) -> dict | None:
        """1. names the papers never mention"""
        ev, best = c.ev, c.best
        for e in c.cents:
            if not any(c.found_e[i][c.cents.index(e)] for i in range(len(c.cands))) \
                    and self.in_scope is not None and not self._known(e):
                sib = sibling_in(ev, e)
                if sib is not None and c.cover[best] >= self.tuning.number_topic_cover:
                    return outcome(CONTRADICTED, "entity_mismatch",
                                   f"the claim names {e.text}; the passage names {sib.text}",
                                   best, sentence_of(ev.text, sib.start), c.order, c.cands,
                                   compared=(e.text, sib.text), check=self._name_aligned(c, e, sib))
                return outcome(UNSUPPORTED, "entity_absent",
                               f"no passage of the papers in scope mentions {e.text}",
                               best, None, c.order, c.cands, compared=(e.text, None))
        return None

    def _table_grid(self, c: _Case) -> dict | None:
        """2. a table read by the cells' printed places: the cell the claim points at (the
        first table passage in rank order that states one of the claim's values decides)"""
        cands = c.cands
        # (a long table is cut into passages: its grid is the whole table, so a passage of it
        # counts even when the value is in another of its chunks)
        tables, seen = [], set()
        for i in c.order:
            sid = cands[i].src.get("section_id") or i
            if cands[i].src.get("kind") == "table" and sid not in seen:
                seen.add(sid)
                tables.append(i)
        for i in (tables if self.grid_of is not None and c.cnums else []):
            grid = self.grid_of(cands[i].src, c.cnums)
            found = grid_check(c.claim, c.cnums, grid) if grid is not None else None
            if found is None:
                continue
            if found[0] == "agree":
                # the claim's row holds its values under its columns: that table is the
                # evidence, and the text-level number and binding checks are not needed
                c.grid_agrees = found[1]
                c.order, c.best = front(c.order, i), i
                return None
            code, text, (ri, ki) = found
            cell = grid.rows[ri].cells[ki].text if ri < len(grid.rows) and ki < len(grid.rows[ri].cells) else None
            return outcome(CONTRADICTED, code, text, i, grid_span(cands[i], grid, ri, ki),
                           front(c.order, i), cands,
                           compared=(", ".join(fmt_num(n) for n in c.cnums), cell))
        return None

    def _numbers(self, c: _Case) -> dict | None:
        """3. numbers"""
        claim, cnums, found_n, best, ev = c.claim, c.cnums, c.found_n, c.best, c.ev
        missing = [] if c.grid_agrees else [n for k, n in enumerate(cnums) if not found_n[best][k]]
        if missing and sum(found_n[best]) >= 2 and all(
                compound(claim, cnums[k]) and any(
                    found_n[i][k] for i in range(len(c.cands)) if i != best and c.cands[i].paper == ev.paper)
                for k in range(len(cnums)) if not found_n[best][k]):
            # the best passage states two or more of the claim's values, and what it lacks are
            # settings written as compounds ("10-crop", "34-layer") that another passage of the
            # same paper states (the setting in a caption, the results in a table)
            missing = []
        if missing:
            n = missing[0]
            hard = [m for m in missing if not m.word]
            topic = claim_topic_share(claim, ev.text)
            if ev.nums and topic >= self.tuning.number_topic_cover and (hard or len(missing) == len(cnums)):
                where, other, why = self._number_in_place(c, n)
                k = cnums.index(n)
                if why is None and specificity(n) >= 2 and any(
                        found_n[i][k] for i in range(len(c.cands))
                        if i != best and c.cands[i].paper == c.cands[where].paper):
                    why = f"another passage states {fmt_num(n)}"
                ev = c.cands[where]
                span = sentence_of(ev.text, other.start) if other else None
                said = f"the passage says {fmt_num(other)}" if other else "the passage gives other values"
                order = c.order if where == best else front(c.order, where)
                return outcome(CONTRADICTED, "number_mismatch",
                               f"the claim says {fmt_num(n)}; {said}", where, span, order, c.cands,
                               compared=(fmt_num(n), fmt_num(other) if other else None), check=why)
            if hard or not any(found_n[best]):
                return outcome(UNSUPPORTED, "number_absent",
                               f"no passage close to the claim states {fmt_num(n)}",
                               best, None, c.order, c.cands, compared=(fmt_num(n), None))
        return None

    def _sibling_names(self, c: _Case) -> dict | None:
        """3. a name the evidence replaces by a sibling"""
        best, ev = c.best, c.ev
        for k, e in enumerate(c.cents):
            if c.found_e[best][k]:
                continue
            sib = sibling_in(ev, e)
            if sib is not None and not any(c.found_e[i][k] for i in range(len(c.cands))) \
                    and c.cover[best] >= self.tuning.number_topic_cover:
                return outcome(CONTRADICTED, "entity_mismatch",
                               f"the claim names {e.text}; the passage names {sib.text}",
                               best, sentence_of(ev.text, sib.start), c.order, c.cands,
                               compared=(e.text, sib.text), check=self._name_aligned(c, e, sib))
        return None

    def _bindings(self, c: _Case) -> dict | None:
        """4. values bound to another name: a table's columns (one row per line), then rows,
        columns and parallel order in running text; 5. roles swapped between sibling words"""
        ev = c.ev
        bound = None if c.grid_agrees else table_binding(c.claim, c.cnums, c.cents, ev)
        if bound is None and not c.grid_agrees:
            bound = binding(c.claim, c.cnums, c.cents, ev)
        if bound is None and not c.grid_agrees:
            bound = for_binding(c.claim, c.cnums, ev)
        if bound is not None:
            code, text, pos = bound
            sa, sb = sentence_of(ev.text, pos)
            return outcome(CONTRADICTED, code, text, c.best, (sa, sb), c.order, c.cands,
                           compared=(", ".join(fmt_num(n) for n in c.cnums) or c.claim,
                                     ev.text[sa:sb].strip()))
        a, b, share = best_sentence(ev.text, c.cterms, prose=True)
        if share >= self.tuning.topic_cover:
            swap = role_swap(c.claim, ev.text[a:b])
            if swap:
                return outcome(CONTRADICTED, "roles_swapped", swap, c.best, (a, b), c.order, c.cands,
                               compared=(c.claim, ev.text[a:b].strip()))
        return self._alternatives(c)

    def _alternatives(self, c: _Case) -> dict | None:
        """5b. "A instead of B" where the passage states B and nowhere A; the wrong one of two
        named settings (base / big, encoder / decoder) where a sentence says the rest of the
        claim for the other one."""
        cands = c.cands
        spans = [(i, sa, sb) for i in c.order for sa, sb in sentence_spans(cands[i].text)
                 if not tabular(cands[i].text[sa:sb])]
        texts = [cands[i].text[sa:sb] for i, sa, sb in spans]
        everywhere = set().union(*(stem_set(f"{x.head} {x.text}") for x in cands))
        for (i, sa, sb), sent in zip(spans, texts, strict=True):
            alt = alternative_swapped(c.claim, sent, everywhere, self.tuning.topic_cover)
            if alt is not None:
                return outcome(CONTRADICTED, "alternative_swapped",
                               f"the claim says {alt[0]} instead of {alt[1]}; the passage states "
                               f"{alt[1]}", i, (sa, sb), front(c.order, i), cands,
                               compared=(f"{alt[0]} instead of {alt[1]}", sent.strip()))
        swapped = setting_swapped(c.claim, texts)
        if swapped is not None:
            mine, other, k = swapped
            i, sa, sb = spans[k]
            return outcome(CONTRADICTED, "setting_swapped",
                           f"the passage states it for the {other} setting, not the {mine} one",
                           i, (sa, sb), front(c.order, i), cands,
                           compared=(mine, other))
        return None

    def _sentences(self, c: _Case) -> dict | None:
        """6. comparison direction, against the sentence that compares the same two things;
        7. negation (not when a sentence already states the claim's comparison as claimed)"""
        claim, cands, cterms, cnums = c.claim, c.cands, c.cterms, c.cnums
        order, best, found_n = c.order, c.best, c.found_n
        # the prose sentences of the passages that state the claim's numbers as well as the best
        # one does, most on-topic first: where a negation or a comparison is read
        tier = {i for i in order if found_n[i] == found_n[best] or not cnums}
        sents = []
        for i in order:
            spans = sentence_spans(cands[i].text)
            for k, (sa, sb) in enumerate(spans):
                st = cands[i].text[sa:sb]
                if tabular(st):
                    continue
                # on-topic share over the sentence and the one before it (a sentence often
                # leaves its subject to the previous one: "We do not use dropout.")
                ctx = cands[i].text[spans[k - 1][0] if k else sa:sb]
                sh = len(cterms & stem_set(ctx)) / (len(cterms) or 1)
                sents.append((sh, -order.index(i), i, sa, sb))
        sents.sort(reverse=True)
        on_tier = [x for x in sents if x[2] in tier]
        cmp = comparison_in(claim, cands, sents)
        agreed = False
        if cmp is not None:
            text, i, span, agrees, (ccue, scue, crossed) = cmp
            if not agrees:
                # the same two things compared the other way: a contradiction only when the sides
                # stand where the claim puts them; read across the comparative, check it
                return outcome(CONTRADICTED, "comparison", text, i, span, front(order, i), cands,
                               compared=(ccue, scue),
                               check="the sides were matched across the comparative" if crossed else None)
            c.order, c.best, agreed = front(order, i), i, True
        if agreed:
            return None  # a sentence states the claim's comparison as claimed
        return self._negation(c, sents, on_tier)

    def _negation(self, c: _Case, sents: list, on_tier: list) -> dict | None:
        """7. negation: the passage denies what the claim states, or states what it denies"""
        claim, cands, cterms, order = c.claim, c.cands, c.cterms, c.order
        top_share = on_tier[0][0] if on_tier else 0.0
        close = [x for x in on_tier if x[0] >= max(self.tuning.topic_cover, top_share - 0.3)]
        leading = {id(x) for x in close[:2]}
        cn, cpos = negated_near(claim, cterms)

        # the words a negated claim denies (its cue's head: "without *dropout*", "not *tie*")
        cheads = negated_terms(claim, cpos, 1) if cn else set()

        def neg(x) -> bool:
            """Negated about the claim's words: two shared words in the cue's scope; or, in one
            of the two most on-topic sentences, a claim word heading a negation there ("do not
            use *dropout*") or a verb of absence next to them."""
            st = cands[x[2]].text[x[3]:x[4]]
            shared = cterms & stem_set(st)
            if negated_near(st, shared, min_hits=self.tuning.neg_min_hits)[0]:
                return True
            if id(x) not in leading:
                return False
            return bool(negated_heads(st) & (cheads or cterms)) or privative_near(st, shared)

        # a sentence that says all the claim says (every content word, every number) with the
        # claim's polarity is the passage's statement of it: a negation in another sentence
        # about some of the same words ("the effect was not significant for grains per spike")
        # denies something else, and is not read against the claim
        restated = any(restates(claim, cterms, c.cnums, cn, cands[x[2]].text[x[3]:x[4]])
                       for x in sents)
        if close and not restated:
            negs = [x for x in close if neg(x)]
            if not cn and negs and not privative_near(claim, cterms):
                x = negs[0]
                st = cands[x[2]].text[x[3]:x[4]]
                # a red mark only where the negated sentence is about what the claim says: most
                # of the claim's words, two of them inside the negation's scope or one its head
                sure = x[0] >= self.tuning.negation_cover and (
                    negated_near(st, cterms & stem_set(st), min_hits=self.tuning.neg_min_hits)[0]
                    or bool(negated_heads(st) & cterms))
                return outcome(CONTRADICTED, "negation",
                               "the passage states it negated; the claim states it as true",
                               x[2], (x[3], x[4]), front(order, x[2]), cands,
                               compared=(claim, st.strip()),
                               check=None if sure else "the negated sentence may be about something else")
            # a negated claim is contradicted only where the passage states the very thing it
            # denies (a passage may deny in other words: "discarded" for "not retained")
            stated = [x for x in close if denied_stated(claim, cpos, cands[x[2]].text[x[3]:x[4]])]
            if cn and cheads:
                # a negation agrees with a negated claim only where it is about what the claim
                # denies ("did not *reduce* fade" finds no agreement in "not significant for fade")
                negs = [x for x in negs if cheads <= stem_set(cands[x[2]].text[x[3]:x[4]])]
            if cn and not negs and stated and not privative_near(cands[stated[0][2]].text, cterms):
                x = stated[0]
                return outcome(CONTRADICTED, "negation", "the claim denies what the passage states",
                               x[2], (x[3], x[4]), front(order, x[2]), cands,
                               compared=(claim, cands[x[2]].text[x[3]:x[4]].strip()))
            if cn and negs:
                c.order, c.best = front(order, negs[0][2]), negs[0][2]
        return None

    def _similarity(self, c: _Case, support: float | None) -> dict:
        """8. similarity alone"""
        best, order, cands = c.best, c.order, c.cands
        sup = support if support is not None else max(x.score for x in cands)
        if self.threshold is not None and sup < self.threshold:
            return outcome(UNSUPPORTED, "low_support",
                           f"no passage states this claim (best support {sup:.2f} < "
                           f"{self.threshold:.2f})", best, None, order, cands, compared=(c.claim, None))
        if c.grid_agrees:
            return outcome(SUPPORTED, "match", c.grid_agrees, best, None, order, cands,
                           compared=(", ".join(fmt_num(n) for n in c.cnums), None))
        stated = [n.text for k, n in enumerate(c.cnums) if c.found_n[best][k]] + \
                 [e.text for k, e in enumerate(c.cents) if c.found_e[best][k]]
        text = ("the passage states " + ", ".join(stated[:6])) if stated else \
            "the passage states the claim's content words"
        return outcome(SUPPORTED, "match", text, best, None, order, cands,
                       compared=(", ".join(stated[:6]) or c.claim, None))

    # -- pieces --------------------------------------------------------------------------------

    def _number_in_place(self, c: _Case, n: Num) -> tuple[int, Num | None, str | None]:
        """``(passage, its number in the place of the claim's n, None)`` for the first passage
        in evidence order (the best one first) whose number stands for the same quantity
        (:func:`~.evidence.number_aligned`); when none does, the best passage's candidate and why
        the alignment is uncertain.  Another passage counts only when it is from the best one's
        paper and on the claim's topic (its share of the claim's words reaches
        ``number_topic_cover``)."""
        ev = c.ev
        other = aligned_number(c.claim, n, ev)
        why = number_aligned(c.claim, n, ev, other, c.cnums)
        if why is None:
            return c.best, other, None
        for i in c.order:
            cand = c.cands[i]
            if i == c.best or cand.paper != ev.paper or not cand.nums \
                    or claim_topic_share(c.claim, cand.text) < self.tuning.number_topic_cover:
                continue
            alt = aligned_number(c.claim, n, cand)
            if alt is not None and number_aligned(c.claim, n, cand, alt, c.cnums) is None:
                return i, alt, None
        return c.best, other, why

    def _name_aligned(self, c: _Case, e: Ent, sib: Ent) -> str | None:
        """``None`` when the sentence naming ``sib`` instead of the claim's ``e`` says what the
        claim says around the name (its share of the claim's other words reaches
        ``number_topic_cover``): the same role, another name; else why that is uncertain."""
        sa, sb = sentence_of(c.ev.text, sib.start)
        rest = c.cterms - stem_set(e.text)
        share = len(rest & stem_set(c.ev.text[sa:sb])) / (len(rest) or 1)
        if share >= self.tuning.number_topic_cover:
            return None
        return f"the sentence naming {sib.text} says little else of the claim"

    def _known(self, e: Ent) -> bool:
        """Whether the papers in scope name ``e`` (a hyphenated compound such as ``root-to-w2``
        counts when each of its parts is named)."""
        if len(e.key) < 3 or self.in_scope(e.text):
            return True  # two-letter acronyms ("MT") are too ambiguous to judge absence by
        if re.search(r"[A-Z]s$", e.text) and self.in_scope(e.text[:-1]):
            return True  # "GANs" = "GAN"
        parts = [p for p in re.split(r"-(?:to-)?", e.text) if len(p) >= 2]
        if len(parts) < 2 or not all(re.search(r"[A-Za-z]", p) for p in parts):
            return False  # "CoNLL-2012": the number is part of the name
        return all(self.in_scope(p) for p in parts)

