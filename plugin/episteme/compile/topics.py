"""Which of a paper's topic sections get a top-level page of their own (issue 35).

Written one page per section, a 74-paper library became 675 top-level pages, most of them one
paper's small subsections ("3.2 Failure of a Replica") that no other paper will ever share.
The offline writer now shapes a paper's topics before it matches them to the wiki:

* **Folding** (:func:`fold_groups`): a numbered subsection (shorter than :data:`FOLD_WORDS`)
  joins the page of its nearest ancestor that is itself one of the paper's topics (not a
  generic or framing heading such as "Background" or "Evaluation"), as a section of its own
  there (its heading kept, so a question about it still finds it by name): "3 Chain
  Replication" with "3.1 Protocol Details" and "3.2 Failures" is one page, three sections.
* **Budget** (:func:`keep_top_level`): of the groups that merge into no existing wiki section,
  only the :data:`MAX_NEW_TOPIC_PAGES` largest get a new top-level page; the others become
  pages under the paper's page (``papers/<paper>-<topic>.md``), listed on it, where they stay
  readable and traceable but do not crowd the wiki's top level.  A group that merges into an
  existing topic section costs nothing: that is the knowledge that accumulates.

* **Merging on shared names** (:func:`shared_evidence`): a topic whose key text is at least
  :data:`EVIDENCE_SIMILARITY` like an existing topic section's joins it when both sections and
  both titles name the same specific thing (a technique, dataset or metric written as a name, a
  phrase or a hyphenated word: :func:`keyterms.specific_terms`), attributed (:func:`attribution`).

Pure functions over section numbers, titles, sizes and texts, so the rules are testable without
a wiki.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: new top-level topic pages per paper, at most (issue 35's target: <= 4 per paper on average
#: over a 50+ paper library; benchmarks/bench_library.py, benchmarks/RESULTS-library.md)
MAX_NEW_TOPIC_PAGES = 3
#: a subsection shorter than this (words) joins its parent topic's page as a section instead of
#: making a page; only a chapter-length part stands alone (with 200, the Transformer's
#: "Multi-Head Attention" left "Model Architecture" for a page under the paper's page, where no
#: later paper's section can merge into it: merges look for topic sections on top-level pages)
FOLD_WORDS = 3000


#: headings that organise a paper without naming a topic, beyond naming's generic ones: a
#: top-level page "definitions.md" (one paper's definitions) on the 73-paper library benchmark
ORGANISING_HEADINGS = frozenset({"definition", "definitions", "terminology", "notation", "notations",
                                 "untitled"})


def organising_heading(title: str) -> bool:
    """Whether a heading only organises the paper (:data:`ORGANISING_HEADINGS`)."""
    return " ".join(title.lower().replace(":", " ").split()) in ORGANISING_HEADINGS


@dataclass(frozen=True)
class TopicItem:
    """What the rules read of one topic section: its number ("3.2", ``None`` when
    unnumbered), its cleaned title and its size in words."""

    number: str | None
    title: str
    words: int


@dataclass(frozen=True)
class Group:
    """One topic page of the paper: the indexes of its sections (the head first, the others in
    paper order), and the title it takes (the head's, or its ancestor heading's)."""

    members: tuple[int, ...]
    title: str

    @property
    def head(self) -> int:
        return self.members[0]


def _ancestors(number: str | None) -> list[str]:
    """``"3.2.1"`` -> ``["3", "3.2"]`` (outermost first)."""
    if not number:
        return []
    parts = number.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def fold_groups(items: Sequence[TopicItem], generic_title: Callable[[str], bool],
                fold_words: int = FOLD_WORDS) -> list[Group]:
    """The paper's topic pages: a numbered topic section of fewer than ``fold_words`` words in
    the group of its nearest ancestor that is itself one of the paper's topics (a heading that
    names something, ``generic_title`` false), else a group of its own.  Groups in the order
    of their head, each head first."""
    numbered = {it.number: i for i, it in enumerate(items) if it.number}
    group_of: list[int] = []
    for i, it in enumerate(items):
        g = i
        if it.words < fold_words:
            for anc in reversed(_ancestors(it.number)):
                j = numbered.get(anc)
                if j is not None and j < i and not generic_title(items[j].title):
                    g = group_of[j]
                    break
        group_of.append(g)
    members: dict[int, list[int]] = {}
    for i, g in enumerate(group_of):
        members.setdefault(g, []).append(i)
    return [Group(tuple(m), items[g].title) for g, m in sorted(members.items())]


def keep_top_level(groups: Sequence[Group], items: Sequence[TopicItem], merged: Sequence[bool],
                   limit: int = MAX_NEW_TOPIC_PAGES, eligible: Sequence[bool] | None = None) -> list[bool]:
    """Per group, whether it gets a top-level page: every group that merges into an existing
    wiki section (``merged``), and the ``limit`` largest of the other ``eligible`` ones (by the
    words of all their sections; ties to the earlier group).  Not eligible: a heading that
    names no topic ("Untitled", the one section of a paper without headings)."""
    size = [sum(items[j].words for j in g.members) for g in groups]
    ok = list(eligible) if eligible is not None else [True] * len(groups)
    new = sorted((k for k in range(len(groups)) if not merged[k] and ok[k]), key=lambda k: (-size[k], k))
    keep = set(new[:limit])
    return [bool(merged[k]) or k in keep for k in range(len(groups))]


# ------------------------------------------------------------------ merging on shared names

#: the cosine (MiniLM) of key texts above which a topic may join an existing section on
#: specific evidence alone (below the writer's MERGE_SIMILARITY, which also wants like titles)
EVIDENCE_SIMILARITY = 0.45


def quoted_text(body: str) -> str:
    """The paper's own words in a written wiki section: its quoted lines (``> ...``, ``- “...”``),
    without the writer's labels ("From [[...]], §3.1 Alignment Model (p. 3):"), whose
    capitalised headings would read as names."""
    out = []
    for line in body.split("\n"):
        line = line.strip()
        if line.startswith("> "):
            out.append(line[2:])
        elif line.startswith("- \u201c"):
            out.append(line[3:].split("\u201d", 1)[0])
    return "\n".join(out)


def shared_evidence(title_a: str, text_a: str, title_b: str, text_b: str) -> list[str]:
    """The specific terms (:func:`keyterms.specific_terms`: a phrase both texts write out, a
    hyphenated or numbered word, a name in both) that two topic sections' texts share *and*
    that both their titles name: "Multi-Head Attention" and "Multihead Self-Attention" share
    "multi-head"; two sections that only share a field's vocabulary, or a name neither is
    titled after, share no evidence.  The texts are the paper's words (a wiki section's:
    :func:`quoted_text`), never headings.  Empty when they share none."""
    from .keyterms import names_shared_topic, specific_terms, terms

    ca, cb = terms(text_a), terms(text_b)
    fb: dict[str, int] = {}  # "multihead" and "multi-head" are one word
    for t, n in cb.items():
        fb[t.replace("-", "")] = fb.get(t.replace("-", ""), 0) + n
    shared = sorted((t for t in ca if t.replace("-", "") in fb),
                    key=lambda t: (-min(ca[t], fb[t.replace("-", "")]), t))
    specific = specific_terms(shared, text_a, text_b, n=8)
    return [t for t in specific if names_shared_topic(title_a, [t]) and names_shared_topic(title_b, [t])]


# ------------------------------------------------------------------------- attribution

def attribution(authors: Sequence[str], year: object = None) -> str:
    """"Vaswani et al., 2017" / "Fox and Brewer, 1999" / "Lamport, 1978": how a paragraph
    names the paper it quotes, so a section that several papers feed says whose words are
    whose.  Empty when the paper has no authors on record."""
    surnames = [a.replace(",", " ").split()[-1] for a in authors if a and a.split()]
    if not surnames:
        return ""
    who = (surnames[0] if len(surnames) == 1 else f"{surnames[0]} and {surnames[1]}"
           if len(surnames) == 2 else f"{surnames[0]} et al.")
    return f"{who}, {year}" if year else who
