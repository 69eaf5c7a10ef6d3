"""Run the light layers (graph, lint, lint --fix, a wiki write) on a copy of a wiki and print
one JSON digest of everything they answered: run it normally and under the Windows stand-in
(``tests/helpers/no_fork_no_fcntl``) and compare.  usage: light_digest.py WIKI WORKDIR"""

import datetime as dt
import json
import os
import shutil
import sys
from pathlib import Path

from episteme.commands.graph import graph_query
from episteme.lint import apply_fixes, lint_wiki
from episteme.wiki.edit import create_section

TODAY = dt.date(2026, 11, 29)


def main() -> None:
    src, work = Path(sys.argv[1]), Path(sys.argv[2])
    wiki = work / "wiki"
    shutil.copytree(src, wiki, symlinks=True)
    out: dict = {"platform": {"fcntl_hidden": sys.modules.get("fcntl", 0) is None, "fork": hasattr(os, "fork")}}
    for mode, kw in (("stats", {}), ("hubs", {"limit": 50}), ("orphans", {}), ("query", {"query": "title: Hub"})):
        r = graph_query(wiki, mode, today=TODAY, **kw)
        r.pop("wiki")
        out[f"graph-{mode}"] = r
    report = lint_wiki(wiki, today=TODAY)
    out["lint"] = [f.to_dict() for f in report.findings]
    out["fixes"] = apply_fixes(wiki, report)
    out["lint-after-fix"] = [f.to_dict() for f in lint_wiki(wiki, today=TODAY).findings]
    res = create_section(wiki, "portable-note", title="Portable", description="Written without fork or fcntl.",
                         body="Links to [[Hub]].", sources=["attention.pdf"])
    out["write"] = {"page": res.page, "section": res.section_id}
    out["page"] = (wiki / res.page).read_text(encoding="utf-8")
    out["index.json"] = json.loads((wiki / "index.json").read_text(encoding="utf-8"))
    out["lint-after-write"] = [f.to_dict() for f in lint_wiki(wiki, today=TODAY).findings]
    print(json.dumps(out, sort_keys=True, default=str))


if __name__ == "__main__":
    main()
