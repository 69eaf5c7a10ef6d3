"""A generated wiki that breaks every non-store lint rule exactly once (used by tests/test_lint*.py).

``build_broken_wiki(root)`` writes the wiki and returns ``{rule: (file, line)}``: where each
finding must be.  Lines are found by searching the written text for the offending snippet, so
they do not depend on lint's own line arithmetic.  Everything not meant to break is clean: all
pages link to ``hub.md`` and the hub links back, so only ``orphan.md`` and ``leaf.md`` stand out.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

TODAY = "2026-11-29"

SCHEMA = """# Wiki schema

```yaml
fields:
  title:         {type: string, required: true}
  type:          {type: string, required: true, values: [concept, paper, note]}
  tags:          {type: list}
  created:       {type: date}
  updated:       {type: date}
  tier_override: {type: string, values: [pin, active, archived, frozen]}
memory_tiers:
  enabled: true
  driving_field: updated
  active_days: 180
  archived_days: 730
```

```yaml
lint:
  disable: [no-such-rule]
```
"""


def _marker(sid: str, desc: str, sources: list[str]) -> str:
    return "<!-- section " + json.dumps({"id": sid, "description": desc, "sources": sources}) + " -->"


def _page(title: str | None, body: str, *, type_: str = "concept", updated: str = "2026-11-01",
          extra: str = "") -> str:
    fm = []
    if title is not None:
        fm.append(f"title: {title}")
    if type_:
        fm.append(f"type: {type_}")
    if updated:
        fm.append(f"updated: {updated}")
    if extra:
        fm.append(extra)
    return "---\n" + "\n".join(fm) + "\n---\n" + body


def line_of(text: str, needle: str, nth: int = 1) -> int:
    pos = -1
    for _ in range(nth):
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1


# pages other than the hub: (file, title, content-builder)
BACK = "\nSee [[Hub]].\n"


def build_broken_wiki(root: Path) -> dict[str, tuple[str, int | None]]:
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    files["SCHEMA.md"] = SCHEMA
    linked = ["alpha", "leaf", "notes/twin", "other/twin", "dup1", "dup2", "bad", "noreq", "unknown", "typed",
              "value", "date", "tier", "stale", "paper", "zz-dup", "broken"]
    hub_body = (
        "# Hub\n\n"
        + "".join(f"- [[{t}]]\n" for t in linked)
        + "\nA typo: [[Alpah]].\n"
        + "The index file: [[index]].\n"
        + "An ambiguous one: [[twin]].\n"
    )
    files["hub.md"] = _page("Hub", hub_body)
    files["alpha.md"] = _page("Alpha", BACK)
    files["leaf.md"] = _page("Leaf", "\nA dead end.\n")
    files["orphan.md"] = _page("Orphan", "\nNobody links here.\n")
    files["notes/twin.md"] = _page("Twin A", BACK)
    files["other/twin.md"] = _page("Twin B", BACK)
    files["dup1.md"] = _page("Same Title", BACK)
    files["dup2.md"] = _page("Same Title", BACK)
    files["bad.md"] = "---\ntitle: Bad\ntype: [concept\n---\n" + BACK
    files["noreq.md"] = _page("No Type", BACK, type_="")
    files["unknown.md"] = _page("Unknown", BACK, extra="color: red")
    files["typed.md"] = _page("Typed", BACK, extra="tags: just-a-string")
    files["value.md"] = _page("Value", BACK, type_="gadget")
    files["date.md"] = _page("Date", BACK, extra="created: 2026/11/01  # first draft")
    files["tier.md"] = _page("Tier", BACK, extra="tier_override: forever")
    files["stale.md"] = _page("Stale", BACK, updated="2024-01-01")
    paper_body = (
        "\nIntro links to [[Hub]].\n\n"
        + _marker("sec_001", "What attention is.", ["attention.pdf"]) + "\n## Attention\n\nAttention weighs tokens.\n\n"
        + _marker("sec_002", "Unsourced claim.", []) + "\n## Claim\n\nA claim without a source.\n\n"
        + _marker("sec_003", "An empty section.", ["attention.pdf"]) + "\n## Empty\n\n"
        + _marker("sec_004", "Not indexed yet.", ["attention.pdf"]) + "\n## New\n\nFresh text.\n"
    )
    files["paper.md"] = _page("Paper", paper_body, type_="paper")
    files["zz-dup.md"] = _page("Zz Dup", BACK + "\n" + _marker("sec_001", "A copy.", ["gan.pdf"]) + "\n## Copy\n\nCopied.\n")
    # a section written twice (what a write re-run after a crash left): same heading, same sources
    twice = _marker("sec_005", "GAN summary.", ["gan.pdf"]) + "\n## Summary\n\nGANs.\n\n"
    files["twice.md"] = _page("Twice", BACK + "\n" + twice + twice.replace("sec_005", "sec_006"))
    files["broken.md"] = _page("Broken", BACK + '\n<!-- section {"id": "bad"} -->\n## Broken\n\nText.\n')
    index_md = (
        "# Index\n\nHand-kept header.\n\n"
        "## sec_001\nWhat attention is.\nPage: paper.md\nSource: attention.pdf\n\n"
        "## sec_002\nUnsourced claim.\nPage: paper.md\nSource:\n\n"
        "## sec_003\nAn outdated description.\nPage: paper.md\nSource: attention.pdf\n\n"
        "## sec_001\nWhat attention is.\nPage: paper.md\nSource: attention.pdf\n\n"
        "## sec_090\nGone.\nPage: paper.md\nSource: attention.pdf\n\n"
        "## sec_005\nGAN summary.\nPage: twice.md\nSource: gan.pdf\n\n"
        "## sec_006\nGAN summary.\nPage: twice.md\nSource: gan.pdf\n"
    )
    files["index.md"] = index_md
    files["index.json"] = (
        '{\n  "sec_001": ["attention.pdf"],\n  "sec_002": [],\n  "sec_003": ["attention.pdf"],\n'
        '  "sec_091": ["gan.pdf"],\n  "sec_005": ["gan.pdf"],\n  "sec_006": ["gan.pdf"]\n}\n'
    )
    files["log.md"] = (
        "# Log\n\n## [2026-11-01] ingest | attention.pdf\n- pages: paper.md\n- created: sec_001\n\n"
        "## a heading that is not an entry\n"
    )
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    # a page that is a symlink to a file outside the wiki: listed as not read, never read
    outside = root.parent / f"{root.name}-outside.txt"
    outside.write_text("---\ntitle: Secret\n---\nnot wiki content\n", encoding="utf-8")
    (root / "outside.md").symlink_to(outside)
    (root / ".episteme").mkdir(exist_ok=True)
    (root / ".episteme" / "pending-write.json").write_text('{"pid": 1, "op": "ingest"}\n', encoding="utf-8")
    # a page a killed batch left half-made in a new folder (its process gone, two days ago)
    temp = root / "newdir" / ".p.md.batch99999999-0.tmp"
    temp.parent.mkdir()
    temp.write_text("---\ntitle: P\n---\nhalf a batch\n", encoding="utf-8")
    os.utime(temp, (time.time() - 2 * 86400,) * 2)

    hub = files["hub.md"]
    paper = files["paper.md"]
    return {
        "link-dangling": ("hub.md", line_of(hub, "[[Alpah]]")),
        "link-structural": ("hub.md", line_of(hub, "[[index]]")),
        "link-ambiguous": ("hub.md", line_of(hub, "[[twin]]")),
        "page-orphan": ("orphan.md", 1),
        "page-leaf": ("leaf.md", 1),
        "page-stale": ("stale.md", line_of(files["stale.md"], "updated:")),
        "title-duplicate": ("dup2.md", line_of(files["dup2.md"], "title:")),
        "fm-yaml": ("bad.md", line_of(files["bad.md"], "type: [concept") + 1),
        "fm-missing-required": ("noreq.md", 1),
        "fm-unknown-field": ("unknown.md", line_of(files["unknown.md"], "color:")),
        "fm-type": ("typed.md", line_of(files["typed.md"], "tags:")),
        "fm-value": ("value.md", line_of(files["value.md"], "type: gadget")),
        "fm-date": ("date.md", line_of(files["date.md"], "created:")),
        "fm-tier-override": ("tier.md", line_of(files["tier.md"], "tier_override:")),
        "schema-invalid": ("SCHEMA.md", line_of(SCHEMA, "disable:")),
        "section-marker-invalid": ("broken.md", line_of(files["broken.md"], '<!-- section {"id": "bad"}')),
        "page-unreadable": ("outside.md", None),
        "section-duplicate": ("twice.md", line_of(files["twice.md"], '"sec_006"')),
        "section-duplicate-id": ("zz-dup.md", line_of(files["zz-dup.md"], "<!-- section")),
        "section-not-in-index": ("paper.md", line_of(paper, '"sec_004"')),
        "index-stale-entry": ("index.md", line_of(index_md, "## sec_090")),
        "index-json-unknown-section": ("index.json", line_of(files["index.json"], '"sec_091"')),
        "index-out-of-date": ("index.md", line_of(index_md, "## sec_003")),
        "index-malformed": ("index.md", line_of(index_md, "## sec_001", nth=2)),
        "index-interrupted-write": (".episteme/pending-write.json", None),
        "stale-temp-file": ("newdir/.p.md.batch99999999-0.tmp", None),
        "section-no-sources": ("paper.md", line_of(paper, '"sec_002"')),
        "section-empty": ("paper.md", line_of(paper, '"sec_003"')),
        "log-malformed": ("log.md", line_of(files["log.md"], "## a heading")),
    }
