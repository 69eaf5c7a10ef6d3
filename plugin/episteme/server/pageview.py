"""Wiki text as the web UI shows it: every ``[[link]]`` found by the one link parser
(:func:`episteme.wiki.links.link_marks`) and resolved by the graph, so the browser renders links
and never parses them.

Why not HTML: the UI's markdown renderer (``static/markdown.js``) escapes every character of the
text itself and only adds its own tags; handing it text with links already decided keeps that
one escaping path.  Each link is replaced by a token ``\\ue000N\\ue001`` (Unicode private-use
characters, removed from the page text first, so a page cannot forge one) and ``links[N]``
says what it is::

    {"raw": "[[Attention|the paper]]", "kind": "link" | "embed" | "self",
     "target": "Attention", "anchor": "", "page": "attention.md" | None,
     "display": "the paper", "plain": "the paper", "dangling": False}

``page`` is where ``episteme graph`` sends the link from this page (same-folder preference
included) and ``dangling`` is exactly ``lint``'s ``link-dangling``; embeds (``![[...]]``) and
same-page links (``[[#heading]]``) are not links for graph and lint, so they are never dangling.
``plain`` is the text the tracer reads for the link (:func:`episteme.wiki.links.display_text`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..wiki.links import LinkMark, display_text, link_marks, normalize_target

OPEN, CLOSE = "\ue000", "\ue001"
_NO_TOKENS = str.maketrans("", "", OPEN + CLOSE)


def link_record(mark: LinkMark, raw: str, resolve: Callable[[str], str | None] | None) -> dict:
    """What the UI needs to render one link; ``resolve(target)`` -> page id or None (None for
    ``resolve`` itself: nothing to resolve against, e.g. an answer without a wiki graph)."""
    target = normalize_target(mark.text)
    head, bar, label = mark.text.partition("|")
    if bar and head.endswith("\\"):
        head = head[:-1]
    anchor = head.split("#", 1)[1].strip() if "#" in head else ""
    kind = "embed" if mark.embed else ("link" if target else "self")
    page = resolve(target) if kind == "link" and resolve is not None else None
    if bar and label.strip():
        display = label.strip()
    elif target:
        display = target + (" › " + anchor if anchor else "")
    else:
        display = "› " + anchor if anchor else ""
    return {
        "raw": raw,
        "kind": kind,
        "target": target,
        "anchor": anchor,
        "page": page,
        "display": display,
        "plain": display_text(raw),
        "dangling": kind == "link" and resolve is not None and page is None,
    }


def tokenize(text: str, links: list[dict], resolve: Callable[[str], str | None] | None) -> str:
    """``text`` with each link replaced by its token; the records are appended to ``links``
    (one list for a whole page, so tokens are unique across its sections)."""
    text = text.translate(_NO_TOKENS)
    marks = link_marks(text)
    if not marks:
        return text
    out: list[str] = []
    pos = 0
    for m in marks:
        start = m.start - 1 if m.embed else m.start
        out.append(text[pos:start])
        out.append(f"{OPEN}{len(links)}{CLOSE}")
        links.append(link_record(m, text[start : m.end], resolve))
        pos = m.end
    out.append(text[pos:])
    return "".join(out)


def graph_resolver(graph, from_id: str | None) -> Callable[[str], str | None]:
    """Resolution as the graph does it for links on page ``from_id``, memoised per target."""
    cache: dict[str, str | None] = {}

    def resolve(target: str) -> str | None:
        if target not in cache:
            r = graph.resolve(target, from_id)
            cache[target] = graph.ids[r.node] if r.node is not None else None
        return cache[target]

    return resolve
