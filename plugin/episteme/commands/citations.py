"""``episteme citations [--paper P] [--references]``: which ingested papers cite each other.

Every stored paper's reference list is parsed and each entry resolved to an ingested paper when
it names one (arXiv id or DOI, else the paper's printed title; :mod:`episteme.query.citations`).
Prints, per paper, what it cites and what cites it, the links with the evidence, and the most
cited papers of the wiki; ``--paper P --references`` adds P's reference entries that are not in
the wiki (a reading list, with ids where printed).  Nothing is stored: a paper ingested later
is linked the next time this runs.  ``--write`` puts the same into the paper pages (a
``Citations`` section of links and the reading list; ``ingest --write`` does it for the papers
it writes).
"""

from __future__ import annotations

import sys

from ..cliutil import ArgumentParser, format_is_json, print_json, run_main
from ._stores import add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme citations", description=__doc__.splitlines()[0])
    p.add_argument("--paper", default=None, help="only this paper (its raw/ file name)")
    p.add_argument("--references", action="store_true",
                   help="with --paper: also list its reference entries that are not in the wiki")
    p.add_argument("--limit", type=int, default=10, help="most-cited papers listed (default 10)")
    p.add_argument("--write", action="store_true",
                   help="also (re)write every paper page's Citations section (ingest --write does "
                        "this for the papers it writes)")
    p.add_argument("--format", choices=["json", "text"], default="json")
    add_store_options(p)
    return p


def format_text(result: dict) -> str:
    """One line per paper that cites or is cited, then the most cited."""
    lines = []
    for p in result["papers"]:
        if not (p["cites"] or p["cited_by"]) and len(result["papers"]) > 1:
            continue
        lines.append(f"{p['paper']} ({p['title'] or 'untitled'}): {p['references']} references")
        if p["cites"]:
            lines.append("  cites:    " + ", ".join(p["cites"]))
        if p["cited_by"]:
            lines.append("  cited by: " + ", ".join(p["cited_by"]))
    if result["most_cited"]:
        lines.append("most cited: " + ", ".join(f"{m['paper']} ({m['cited_by']})"
                                                for m in result["most_cited"]))
    for r in result.get("reading_list") or []:
        ids = " ".join(x for x in (r.get("arxiv") and f"arXiv:{r['arxiv']}",
                                   r.get("doi") and f"doi:{r['doi']}") if x)
        lines.append(f"  - {r.get('title') or r['raw'][:120]} ({r.get('year') or 'n.d.'}) {ids}".rstrip())
    if not lines:
        lines.append("no citations between the ingested papers")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..errors import NotFoundError, UsageError
        from ..query.citations import citation_graph
        from ..stores.sqlite import open_store

        if args.references and not args.paper:
            raise UsageError("--references needs --paper")
        if args.limit < 1:
            raise UsageError("--limit must be at least 1")
        settings = settings_from_args(args)
        with open_store(settings, readonly=True) as st:
            graph = citation_graph(st)
        if args.paper and args.paper not in graph.papers:
            raise NotFoundError(f"no ingested paper {args.paper!r}")
        result = graph.to_dict(paper=args.paper, limit=args.limit)
        if args.write:
            from ..compile.citelinks import update_citation_sections

            result["written"] = update_citation_sections(
                settings, papers=[args.paper] if args.paper else None)
        if args.references:
            result["reading_list"] = graph.reading_list(args.paper)
        if args.format == "text":
            sys.stdout.write(format_text(result))
        else:
            print_json(result)
        return 0

    return run_main(body, json_errors=lambda: format_is_json(argv, default=True))
