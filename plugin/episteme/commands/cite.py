"""``episteme cite PAPER|PAGE``: BibTeX for an ingested paper, or for every paper a wiki page cites.

The entry is built from what ingest stored per paper (title, authors, and the year, venue,
arXiv id and DOI read from the PDF by :mod:`episteme.pdf.meta`).  Given a wiki page instead of a
paper, it prints one entry per ingested paper the page names (its sources and links).
``--json`` prints the records instead of BibTeX.
"""

from __future__ import annotations

import sys

from ..cliutil import ArgumentParser, print_json, run_main
from ._stores import add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme cite", description=__doc__.splitlines()[0])
    p.add_argument("target", help="a paper id (file name in raw/) or a wiki page name")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    add_store_options(p)
    return p


def cited_papers(settings, target: str) -> list[dict]:
    """The stored papers ``target`` names: itself when it is a paper id, otherwise the papers
    whose ids the wiki page ``target`` mentions (in page order)."""
    from ..errors import NotFoundError
    from ..fsutil import safe_join
    from ..stores.sqlite import open_store

    with open_store(settings, readonly=True) as st:
        papers = {p["id"]: p for p in st.papers()}
    name = target.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    if name in papers:
        return [papers[name]]
    page = target if target.endswith(".md") else f"{target}.md"
    try:
        path = safe_join(settings.wiki, page)
    except Exception as e:
        raise NotFoundError(f"no ingested paper or wiki page named {target!r}") from e
    if not path.is_file():  # a bare page name: the page of that name in any folder
        base = page.rsplit("/", 1)[-1]
        path = next((p for p in sorted(settings.wiki.rglob(base))
                     if not any(part.startswith(".") or part == "raw"
                                for part in p.relative_to(settings.wiki).parts)), None)
    if path is None or not path.is_file():
        raise NotFoundError(f"no ingested paper or wiki page named {target!r}")
    text = path.read_text(encoding="utf-8", errors="replace")
    found = sorted((text.find(pid), pid) for pid in papers if pid in text)
    return [papers[pid] for _, pid in found]


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..pdf.meta import bibtex, cite_key

        papers = cited_papers(settings_from_args(args), args.target)
        if args.json:
            print_json({"target": args.target, "papers": [
                {"paper": p["id"], "key": cite_key(p), "title": p["title"],
                 "authors": p["authors"], **(p.get("meta") or {}), "bibtex": bibtex(p)}
                for p in papers]})
        else:
            sys.stdout.write("\n".join(bibtex(p) for p in papers))
        return 0

    return run_main(body)
