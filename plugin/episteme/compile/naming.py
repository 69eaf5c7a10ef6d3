"""How the writers name things: a paper section's cleaned title, whether a heading is generic
(it frames the paper, or organises it, rather than naming a topic), a paper's short title and
its page (``papers/<slug>.md``), ``[[links]]`` with readable labels, and the page types a wiki's
``SCHEMA.md`` allows a new page to take.
"""

from __future__ import annotations

import re

from ..fsutil import slugify
from ..paper import PaperSection
from ..wiki.edit import load_page
from .inputs import PAPERS_FOLDER, PaperInfo

#: Section titles that describe the paper rather than a topic: they go on the paper's page.
GENERIC_TITLES = frozenset({
    "abstract", "introduction", "background", "related work", "prior work", "previous work",
    "conclusion", "conclusions", "discussion", "results", "experiments", "experiment",
    "experimental setup", "experimental results", "evaluation", "training", "method", "methods",
    "methodology", "approach", "overview", "summary", "analysis", "setup", "preliminaries",
    "future work", "limitations", "acknowledgements", "acknowledgments", "appendix",
    "supplementary material", "conclusion and future work", "conclusions and future work",
    "discussion and conclusion", "results and discussion", "motivation", "model", "our approach",
    "proposed method", "implementation details", "implementation", "ablation studies",
    "ablation study", "ablations", "additional ablation studies", "detailed experimental setup",
})


def clean_title(title: str) -> str:
    t = " ".join(title.replace("“", '"').replace("”", '"').split()).strip(" .:;#")
    return t[:120].rstrip() or "Untitled"


#: Generic titles that frame the paper (why, what came before, what it concludes): they stay on
#: the paper's page whatever their content; the other generic titles (results, experiments,
#: setup, ...) are the paper's own experiments and get pages under the paper's page.
FRAMING_TITLES = frozenset({
    "abstract", "introduction", "background", "related work", "prior work", "previous work",
    "conclusion", "conclusions", "discussion", "future work", "limitations", "acknowledgements",
    "acknowledgments", "appendix", "supplementary material", "conclusion and future work",
    "conclusions and future work", "discussion and conclusion", "motivation", "preliminaries",
    "overview", "summary", "method", "methods", "methodology", "approach", "model", "our approach",
    "proposed method", "training",
})


def _title_key(title: str) -> str:
    return " ".join(re.sub(r"[^a-z ]+", " ", title.lower()).split())


def is_framing(section: PaperSection) -> bool:
    """The abstract and the sections that frame the paper (:data:`FRAMING_TITLES`)."""
    return section.kind == "abstract" or _title_key(section.title) in FRAMING_TITLES


#: words that name no topic on their own: a heading made only of these (and of articles and
#: ordinals), such as "A First Algorithm", "A Dilemma", "Main Results", "Acknowledgement",
#: organises the paper (issue 35: such headings became top-level pages of a 74-paper wiki)
GENERIC_HEAD_WORDS = frozenset(["acknowledgement", "acknowledgements", "acknowledgment", "acknowledgments", "algorithm", "algorithms", "analysis", "appendix", "approach", "approaches", "attempt", "background", "case", "cases", "conclusion", "conclusions", "dilemma", "discussion", "evaluation", "example", "examples", "experiment", "experiments", "extension", "extensions", "idea", "ideas", "implementation", "introduction", "lemma", "limitations", "main", "method", "methods", "model", "models", "notation", "observation", "observations", "overview", "preliminaries", "problem", "problems", "proof", "proofs", "remark", "remarks", "result", "results", "setting", "settings", "setup", "solution", "solutions", "step", "steps", "summary", "theorem"])
_HEAD_FILLER = frozenset(["a", "an", "the", "our", "some", "more", "further", "final", "first", "second", "third", "fourth", "fifth", "last", "next", "other", "another", "simple", "naive", "basic", "general", "new", "and", "of"])


def is_generic(section: PaperSection) -> bool:
    """Whether a heading frames or organises the paper instead of naming a topic: the abstract,
    a heading of :data:`GENERIC_TITLES`, or one made only of :data:`GENERIC_HEAD_WORDS` with
    articles and ordinals ("A Second Algorithm")."""
    if section.kind in ("abstract",):
        return True
    t = " ".join(re.sub(r"[^a-z ]+", " ", section.title.lower()).split())
    if t in GENERIC_TITLES:
        return True
    words = [w for w in t.split() if w not in _HEAD_FILLER]
    return bool(words) and all(w in GENERIC_HEAD_WORDS for w in words)


def short_title(title: str) -> str:
    """``BERT: Pre-training of ...`` → ``BERT``; long titles → their first six words."""
    head = title.split(":", 1)[0].strip()
    if 0 < len(head.split()) <= 5 and head != title:
        return head
    words = title.split()
    return " ".join(words[:6]) if len(words) > 6 else title


#: longest paper-page slug: a whole title fits (cut at a word beyond this)
PAPER_SLUG_CHARS = 100


def title_slug(title: str, limit: int = PAPER_SLUG_CHARS) -> str:
    """The slug of a whole title, cut at a word when longer than ``limit``."""
    slug = slugify(title, max_len=10_000)
    if len(slug) > limit:
        cut = slug[:limit + 1]
        slug = cut.rsplit("-", 1)[0] if "-" in cut else slug[:limit]
    return slug


def _cites(wiki, rel: str, paper_id: str) -> bool:
    try:
        _, _, fm = load_page(wiki, rel)
    except Exception:  # noqa: BLE001 - an unreadable page is not ours to reuse
        return False
    return paper_id in [str(s) for s in (fm.get("sources") or [])]


def paper_page_for(wiki, info: PaperInfo) -> str:
    """``papers/<slug-of-the-whole-title>.md`` for the paper (issue 34: a cut title such as
    ``learning-deep-transformer-models-for-machine`` reads as a typo).  A page this paper
    already has keeps its name -- also one named by the older rule (the title before a colon
    or its first six words) -- and a slug taken by another paper's page falls back to the
    stored file name."""
    whole = title_slug(info.title)
    older = slugify(short_title(info.title), max_len=60)
    by_file = slugify(info.id.rsplit(".", 1)[0], max_len=60)
    for stem in dict.fromkeys((whole, older, by_file)):
        rel = f"{PAPERS_FOLDER}/{stem}.md"
        if (wiki / rel).exists() and _cites(wiki, rel, info.id):
            return rel
    for stem in (whole, by_file):
        rel = f"{PAPERS_FOLDER}/{stem}.md"
        if not (wiki / rel).exists():
            return rel
    return f"{PAPERS_FOLDER}/{slugify(info.id, max_len=70)}.md"


def _alias(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").replace("|", "/").split())


def wikilink(page: str, label: str) -> str:
    """``[[papers/bert|BERT]]``: the page path without ``.md`` (unambiguous for the graph's
    resolver), and a readable label."""
    target = page[:-3] if page.endswith(".md") else page
    return f"[[{target}|{_alias(label)}]]"


def one_line(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def quote_lines(sentences: list[str]) -> str:
    return "\n\n".join(f"> {s}" for s in sentences)


def page_type_for(title: str, sentences: list[str] | None = None, parents: list[str] | None = None,
                  text: str = "") -> str:
    """A topic page's ``type`` from its heading, sentences, parent headings and text
    (:func:`roles.topic_type`)."""
    from .roles import topic_type

    return topic_type(title, sentences or [], parents or [], text)


ROLE_LABEL = {"result": "results", "setup": "experimental setup", "dataset": "data"}
#: a wiki whose SCHEMA.md predates these page types gets the nearest older type instead
_FALLBACK_TYPE = {"result": "note", "setup": "note", "dataset": "entity"}


def allowed_type(ptype: str, allowed: set[str]) -> str:
    """``ptype`` when the wiki's schema allows it, else its older stand-in, else ``concept``."""
    if ptype in allowed:
        return ptype
    fallback = _FALLBACK_TYPE.get(ptype, "concept")
    return fallback if fallback in allowed else "concept"


def allowed_types(wiki) -> set[str]:
    """The page types the wiki's ``SCHEMA.md`` allows (every known type when it lists none)."""
    from ..wiki.schema import PAGE_TYPES, load_schema

    values = (load_schema(wiki).fields.get("type") or {}).get("values")
    return {str(v) for v in values} if isinstance(values, list) and values else set(PAGE_TYPES)


def field_defined(wiki, name: str) -> bool:
    """Whether a frontmatter field may be written without a lint warning: the wiki's schema
    defines it, or defines no fields at all."""
    from ..wiki.schema import load_schema

    fields = load_schema(wiki).fields
    return not fields or name in fields
