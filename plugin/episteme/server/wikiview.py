"""The wiki as the routes read it: the page list, one page with its sections, resolved links
and the UI's tokenized view (:mod:`.pageview`), an answer's view, the sections an answer used,
and one page's ``lint --claims`` findings.

Every page name from a request goes through :func:`page_file` / :func:`contained`
(``safe_join``: no ``..``, absolute path or escaping symlink; no hidden or ``raw/`` file) before
a path is built.
"""

import contextlib
from pathlib import Path

from ..errors import EpistemeError, MissingDependencyError, NotFoundError, UsageError
from .shapes import AnswerView, PageClaimsJSON, PageSummary, SectionRef, WikiPageJSON


def section_pages(wiki: Path, section_ids: list[str]) -> list[SectionRef]:
    """``[{id, page, description}]`` for section ids, read from ``index.md``."""
    from ..wiki.index import read_index_md

    try:
        entries = read_index_md(wiki).entries
    except (EpistemeError, OSError):
        entries = {}
    out: list[SectionRef] = []
    for sid in section_ids:
        e = entries.get(sid)
        out.append({"id": sid, "page": e.page if e else None,
                    "description": e.description if e else None})
    return out


def _tags(props: dict) -> list[str]:
    from ..wiki.frontmatter import frontmatter_tags

    return frontmatter_tags(props)


def list_pages(wiki: Path) -> list[PageSummary]:
    """Every page with its title, type and tags (read from the files on every call)."""
    from ..wiki.scan import scan_wiki

    out: list[PageSummary] = []
    for p in scan_wiki(wiki):
        t = p.props.get("type")
        out.append({
            "page": p.id,
            "title": p.title,
            "type": None if t is None else str(t),
            "tags": _tags(p.props),
            "links": len(p.links),
        })
    return out


#: The longest page argument accepted (a path of a few folders and a long title fits easily).
MAX_PAGE_ARG = 1024


def page_file(wiki: Path, page: str) -> str | None:
    """``page`` as a page id if it names a page file directly (path-checked), else None."""
    from ..wiki.files import RAW_DIR, is_structural

    page = page.strip().replace("\\", "/")
    cands = [page] if page.endswith(".md") else [page + ".md", page]
    for cand in cands:
        target = contained(wiki, cand)  # rejects ../, absolute paths, escaping symlinks
        rel = target.relative_to(wiki.resolve()).as_posix()
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or parts[0] == RAW_DIR:
            raise NotFoundError(f"{page!r} is not a wiki page")
        if (len(parts) == 1 and is_structural(rel)) or not rel.endswith(".md"):
            continue
        try:
            if target.is_file():
                return rel
        except OSError:  # e.g. a name longer than the file system allows: no such page
            continue
    return None


def contained(wiki: Path, rel: str) -> Path:
    """``safe_join`` for a request: the real path of ``rel`` inside the wiki, a name the file
    system refuses (too long, ...) is simply no page."""
    from ..fsutil import safe_join

    try:
        return safe_join(wiki, rel)
    except OSError as e:
        raise NotFoundError(f"no page matches {rel[:80]!r} ({e.strerror})") from None


def read_wiki_page(wiki: Path, page: str) -> WikiPageJSON:
    """One page: frontmatter, markdown, sections (with ids) and where its links point."""
    from ..graph import WikiGraph
    from ..wiki.files import read_bytes
    from ..wiki.frontmatter import parse_frontmatter, strip_bom
    from ..wiki.sections import parse_page
    from .pageview import graph_resolver, tokenize

    wiki = Path(wiki)
    if not page or "\x00" in page:
        raise UsageError("empty page name")
    if len(page) > MAX_PAGE_ARG:
        raise UsageError(f"page name longer than {MAX_PAGE_ARG} characters")
    pid = page_file(wiki, page)
    g = WikiGraph.build(wiki)
    if pid is None:
        pid = g.ids[g.find_page(page)]  # a title, alias or stem, as a [[link]] would say it
    # every lookup ends here: the real path must be inside the wiki, a regular file, capped
    path = contained(wiki, pid)
    try:
        text = read_bytes(str(path)).decode("utf-8", "replace")
    except OSError as e:
        raise NotFoundError(f"{pid} cannot be read: {e.strerror or e}") from None
    fm = parse_frontmatter(text.encode("utf-8"))
    parsed = parse_page(text, strict=False)
    node = g.index.get(pid)
    resolve = graph_resolver(g, pid)
    links: dict[str, str | None] = {}
    backlinks: list[dict] = []
    if node is not None:
        for link in g.pages[node].links:
            if link.target not in links:
                links[link.target] = resolve(link.target)
        backlinks = [{"page": g.ids[i], "title": g.pages[i].title} for i in sorted(set(g.in_edges[node]))
                     if i != node]
    props = g.pages[node].props if node is not None else fm.props
    # the text as the UI renders it: links found by wiki.links, resolved as the graph does
    refs: list[dict] = []
    view = {
        "preamble": tokenize(parsed.preamble or "", refs, resolve),
        "sections": [{"id": s.id, "title": tokenize(s.title or "", refs, resolve),
                      "body": tokenize(s.body or "", refs, resolve)} for s in parsed.sections],
        # what the UI renders when there is neither a section nor a preamble
        "body": "" if parsed.sections or (parsed.preamble or "").strip() else tokenize(
            strip_bom(text.encode("utf-8", "surrogatepass"))[fm.body_offset:].decode("utf-8", "replace"),
            refs, resolve),
        "links": refs,
    }
    t = props.get("type")
    return {
        "page": pid,
        "title": g.pages[node].title if node is not None else Path(pid).stem,
        "type": None if t is None else str(t),
        "tags": _tags(props),
        "frontmatter": props,
        "markdown": text,
        "preamble": parsed.preamble,
        "sections": [
            {"id": s.id, "title": s.title, "level": s.level, "description": s.description,
             "sources": s.sources, "body": s.body}
            for s in parsed.sections
        ],
        "links": links,
        "backlinks": backlinks,
        "view": view,
    }


def answer_view(wiki: Path, answer: str) -> AnswerView:
    """An answer as the UI renders it: ``{"text", "links"}`` with its ``[[links]]`` found by
    wiki.links and resolved against the wiki's graph (see :mod:`.pageview`)."""
    from .pageview import graph_resolver, tokenize

    refs: list[dict] = []
    resolve = None
    if "[[" in answer:
        from ..graph import WikiGraph

        resolve = graph_resolver(WikiGraph.build(Path(wiki)), None)
    return {"text": tokenize(answer, refs, resolve), "links": refs}


def page_claims(settings, page: str, *, tracer=None, lock=None) -> PageClaimsJSON:
    """The ``lint --claims`` findings of one page, for the wiki view's inline marks.

    Sections whose cache entry (``.episteme/claims-cache.json``) still matches their body and
    their sources' hashes are answered from it; the others are verified now, only this page's,
    and the cache keeps every other page's entries.  A wiki without an SQLite store (nothing
    ingested) answers an empty list with a ``reason``: there is nothing to check against."""
    wiki = Path(settings.wiki)
    pid = read_wiki_page(wiki, page)["page"]  # the same name and path checks as GET /wiki/{page}
    out: PageClaimsJSON = {"page": pid, "findings": [], "reason": None, "summary": None,
                 "sections_verified": 0, "sections_cached": 0}
    if not Path(settings.sqlite_path).exists():
        out["reason"] = "no papers are ingested in this wiki (no SQLite store): nothing to check claims against"
        return out
    try:
        from ..lint.claims_run import check_claims
        from ..query.claims import ClaimChecker
    except ImportError as e:  # pragma: no cover - a broken install
        out["reason"] = f"claim checking is not available ({e})"
        return out
    with lock or contextlib.nullcontext():
        checker = ClaimChecker(settings, tracer=tracer)
        try:
            # since={pid}: only this page is checked, and the other pages' cache entries stay
            run = check_claims(str(wiki), settings, [pid], since={pid}, checker=checker, progress=False)
        except (ImportError, MissingDependencyError) as e:
            out["reason"] = f"the stores cannot be opened to check claims ({e})"
            return out
        finally:
            checker.close()
    out["findings"] = [f.to_dict() for f in run.findings]
    out["summary"] = run.pages.get(pid)
    out["sections_verified"] = run.sections_checked
    out["sections_cached"] = run.sections_cached
    return out
