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


def is_generic(section: PaperSection) -> bool:
    if section.kind in ("abstract",):
        return True
    t = re.sub(r"[^a-z ]+", " ", section.title.lower())
    return " ".join(t.split()) in GENERIC_TITLES


def short_title(title: str) -> str:
    """``BERT: Pre-training of ...`` → ``BERT``; long titles → their first six words."""
    head = title.split(":", 1)[0].strip()
    if 0 < len(head.split()) <= 5 and head != title:
        return head
    words = title.split()
    return " ".join(words[:6]) if len(words) > 6 else title


def paper_page_for(wiki, info: PaperInfo) -> str:
    """``papers/<slug>.md`` for the paper; a slug taken by another paper's page falls back to
    the stored file name."""
    for stem in (slugify(short_title(info.title), max_len=60), slugify(info.id.rsplit(".", 1)[0], max_len=60)):
        rel = f"{PAPERS_FOLDER}/{stem}.md"
        path = wiki / rel
        if not path.exists():
            return rel
        try:
            _, _, fm = load_page(wiki, rel)
        except Exception:  # noqa: BLE001 - an unreadable page is not ours to reuse
            continue
        if info.id in [str(s) for s in (fm.get("sources") or [])]:
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
