"""The graph command's fast path gives the same answers as the full scan.

``WikiGraph.build(keep_links=False)`` (what ``graph_query.py`` and lint use) scans pages without
line numbers (``episteme.wiki.links.link_targets``) and reads line numbers back only for
dangling/ambiguous links.  Every result here is compared
with the full scan (``scan_links`` with lines, one process), which the other graph tests check
against independent plain scans.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from episteme import graph as G
from episteme.commands.graph import main
from episteme.wiki import frontmatter, links, scan
from helpers.compare import same

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "plugin" / "scripts" / "graph_query.py"


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------------- scanning pieces

TOKENS = [
    b"[[", b"]]", b"!", b"|", b"\\|", b"#", b"#^", b"\\", b"`", b"``", b"```", b"~~~", b"~",
    b"\n", b"\n```\n", b"\n~~~~\n", b"\n   ```py\n", b" `x` ", b"   ", b"a", b"B", b"x.md", b".MD",
    b" ", b"\xc3\xa9", b"\xff", b"---\n", b"[", b"]", b"\t", b"\xe2\x80\x83", b"![[",
]


def test_link_targets_equal_scan_links_on_random_bodies():
    rnd = random.Random(20261129)
    for _ in range(40_000):
        body = b"".join(rnd.choice(TOKENS) for _ in range(rnd.randint(0, 40)))
        start = min(len(body), rnd.randint(0, 6))
        assert links.link_targets(body, start) == links.scan_links(body[start:]).targets, (body, start)


def test_link_line_equals_scan_links_lines_on_random_bodies():
    """The line of a link found by its target's text (what the lean graph does for the links
    lint reports) is the parser's line for that link, or ``None`` (then the page is parsed)."""
    rnd = random.Random(20261201)
    tokens = [t for t in TOKENS if b"\\" not in t] + [b"[[a]]", b"[[B|a]]", b" a ", b"[[a#x]]"]
    found = 0
    for _ in range(30_000):
        body = b"".join(rnd.choice(tokens) for _ in range(rnd.randint(0, 40)))
        if rnd.random() < 0.1:
            body += b"\\"  # a backslash: never answered this way
        ll = links.scan_links(body, 3)
        for k in range(len(ll)):
            line = links.link_line(body, 3, ll.targets, k)
            assert line in (None, ll.lines[k]), (body, k)
            found += line is not None
    assert found > 10_000


def test_link_lines_of_several_links_at_once_equal_the_parsers_lines():
    """All of a page's links asked together (what the lean graph does: the code blocks are
    found once for them all) give the parser's lines, in the order asked, on pages with code."""
    rnd = random.Random(7)
    tokens = [t for t in TOKENS if b"\\" not in t] + [b"[[a]]", b"`[[a]]`", b"\n```\n", b"[[B|a]]"]
    checked = 0
    for _ in range(5_000):
        body = b"".join(rnd.choice(tokens) for _ in range(rnd.randint(0, 40)))
        ll = links.scan_links(body, 2)
        ks = [k for k in range(len(ll)) if rnd.random() < 0.6][::-1]
        got = links.link_lines(body, 2, ll.targets, ks)
        if got is not None:
            assert got == [ll.lines[k] for k in ks], (body, ks)
            checked += bool(ks)
        assert got == (None if got is None else [links.link_line(body, 2, ll.targets, k) for k in ks])
    assert checked > 1_000


@pytest.mark.parametrize(
    "body, k, line",
    [
        (b"x [[A]]\n[[A|a]] [[B]]\n\n[[a]] [[A#h]]", 4, 4),  # the 3rd link to "A", not the 1st
        (b"[[B|A]] ![[A]]\n`[[A]]` A [[ A ]]", 1, 2),  # label, embed, code span, prose skipped
        (b"```\n[[A]]\n```\n[[[A]]", 0, 4),  # fenced block skipped; "[[[A]]" links A
    ],
)
def test_link_line_cases(body: bytes, k: int, line: int):
    ll = links.scan_links(body)
    assert ll.lines[k] == line
    assert links.link_line(body, 1, ll.targets, k) == line


@pytest.mark.parametrize(
    "body, targets",
    [
        (b"[[A]] ![[img.png]] [[B|label]] ![[C]] [[D#h]]", ("A", "B", "D")),
        (b"`[[no]]` [[yes]]\n```\n[[fenced]]\n```\n[[after]] ![[emb]]", ("yes", "after")),
        (b"[[a\\b]] [[t\\|label]] [[x.md]] [[ y ]] [[#same]]", ("a\\b", "t", "x", "y")),
        (b"~~~\n[[in]]\n~~~\n~~ [[tilde2]]", ("tilde2",)),
    ],
)
def test_link_targets_rules(body: bytes, targets: tuple[str, ...]):
    assert links.link_targets(body) == targets == links.scan_links(body).targets


def test_frontmatter_bounds_equal_the_regex_definition():
    opening = re.compile(rb"---[ \t\r]*(?:\n|\Z)")
    closing = re.compile(rb"^---[ \t\r]*$", re.M)

    def reference(data: bytes):
        m = opening.match(data)
        if not m:
            return None
        c = closing.search(data, m.end())
        return (-1, -1, -1) if not c else (m.end(), c.start(), min(c.end() + 1, len(data)))

    toks = [b"---", b"\n", b" ", b"\t", b"\r", b"-", b"a", b"----", b"\n---\n", b"\r\n"]
    rnd = random.Random(7)
    for _ in range(60_000):
        data = b"".join(rnd.choice(toks) for _ in range(rnd.randint(0, 12)))
        assert frontmatter.frontmatter_bounds(data) == reference(data), data


@pytest.mark.parametrize(
    "block",
    ["a: b\xa0\n", "a: b\u2003\n", "a: [x\xa0, y]\n", "a:\n  - b\xa0\n", "a: b \n", "a: [ ]\n", "t: x\nt: y\n"],
)
def test_fast_frontmatter_keeps_what_pyyaml_keeps(block: str):
    """YAML separates with spaces (and tabs) only: a no-break space belongs to the value."""
    fast = frontmatter.fast_frontmatter(block)
    assert fast is not None
    assert fast == (yaml.load(block, Loader=yaml.CSafeLoader) or {})


def test_fast_frontmatter_lists_are_fresh_per_page():
    a = frontmatter.fast_frontmatter("tags: [x, y]\n")
    b = frontmatter.fast_frontmatter("tags: [x, y]\n")  # served from the line cache
    assert a == b == {"tags": ["x", "y"]}
    a["tags"].append("z")
    assert b["tags"] == ["x", "y"] and frontmatter.fast_frontmatter("tags: [x, y]\n") == {"tags": ["x", "y"]}


# ------------------------------------------------------------------------ lean == full graph


def assert_same_graph(full: G.WikiGraph, lean: G.WikiGraph) -> None:
    assert lean.ids == full.ids
    assert [p.props for p in lean.pages] == [p.props for p in full.pages]
    assert lean.out_edges == full.out_edges
    assert lean.in_edges == full.in_edges
    assert lean.in_degrees() == full.in_degrees()
    assert lean.link_count == full.link_count and lean.link_counts == full.link_counts
    assert lean.dangling_count == full.dangling_count == len(full.dangling)
    assert lean.ambiguity_count == full.ambiguity_count == len(full.ambiguities)
    assert lean.frontmatter_errors == full.frontmatter_errors
    assert lean.tiers == full.tiers
    for tier in (None, "active", "archived", "frozen"):
        assert G.stats(lean, tier) == G.stats(full, tier)
        assert G.hubs(lean, None, tier) == G.hubs(full, None, tier)
    assert lean.dangling == full.dangling  # read back with line numbers
    assert lean.ambiguities == full.ambiguities
    assert G.orphans(lean) == G.orphans(full)


def test_names_by_node_are_the_pages_lowercased_titles_and_stems(tricky_wiki: Path):
    g = G.WikiGraph.build(tricky_wiki, keep_links=False)
    titles = [None if (t := frontmatter.frontmatter_title(p.props)) is None else t.lower() for p in g.pages]
    assert any(titles) and None in titles
    assert g.names_by_node("title") == titles
    assert g.names_by_node("stem") == [p.stem.lower() for p in g.pages]
    with pytest.raises(Exception, match="title' or 'stem"):
        g.names_by_node("alias")


@pytest.fixture(scope="module")
def tricky_wiki(tmp_path_factory) -> Path:
    """Ambiguous names, dangling links (twice, in two spellings), code, embeds, self-links,
    malformed frontmatter, path-qualified and aliased links, tiers."""
    root = tmp_path_factory.mktemp("tricky")
    write(root, "SCHEMA.md", "```yaml\nmemory_tiers:\n  active_days: 30\n  archived_days: 90\n```\n")
    write(root, "a/note.md", "---\ntitle: Note A\nupdated: 2026-11-01\n---\n[[note]] [[Ghost]]\n[[ghost]] [[b/note]]\n")
    write(root, "b/note.md", "---\ntitle: Note B\nupdated: 2026-06-01\n---\n[[note]] [[Self]] ![[Note A]]\n")
    write(root, "self.md", "---\naliases: [me]\nupdated: 2020-01-01\n---\n[[self]] [[me]] `[[Ghost]]`\n```\n[[x]]\n```\n[[Nowhere#h|t]]\n")
    write(root, "broken.md", "---\ntitle: [unclosed\n---\n[[Note A]] [[note]]\n")
    write(root, "c/deep/note.md", "text [[note]] [[NOTE A]] [[./self]] [[/a/note]]\n")
    return root


def test_lean_build_equals_full_build_on_tricky_wiki(tricky_wiki: Path):
    full = G.WikiGraph.build(tricky_wiki, today=datetime.date(2026, 11, 29))
    lean = G.WikiGraph.build(tricky_wiki, today=datetime.date(2026, 11, 29), keep_links=False)
    assert full.ambiguities and full.dangling and full.frontmatter_errors  # the fixture exercises them
    assert all(len(p.links) == 0 for p in lean.pages)
    assert_same_graph(full, lean)


def test_lean_build_equals_full_build_on_real_vaults(vaults_dir: Path):
    for name in ("13th-age-srd", "dendron-site"):
        root = vaults_dir / name
        full = G.WikiGraph.build(root)
        assert_same_graph(full, G.WikiGraph.build(root, keep_links=False))


@pytest.fixture(scope="module")
def synthetic(shared: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "v"
    subprocess.run(
        [sys.executable, str(shared / "tools" / "gen_vault.py"), "--pages", "1500", "--seed", "3", "--out", str(out)],
        check=True, stdout=subprocess.DEVNULL,
    )
    return out


def test_lean_scan_has_the_full_scans_targets(synthetic: Path):
    full = scan.scan(synthetic)
    lean = scan.scan(synthetic, lines=False)
    assert [p.id for p in lean.pages] == [p.id for p in full.pages]
    assert [p.targets for p in lean.pages] == [p.links.targets for p in full.pages]
    assert_same_graph(G.WikiGraph.build(synthetic), G.WikiGraph.build(synthetic, keep_links=False))


def test_the_script_prints_what_the_command_prints(synthetic: Path, capsys):
    assert main(["--wiki", str(synthetic), "--mode", "stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["pages"] == 1500 and stats["dangling"] > 0
    r = subprocess.run([sys.executable, str(SCRIPT), "--wiki", str(synthetic), "--mode", "stats"],
                       capture_output=True, text=True, timeout=120, env={**os.environ})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == stats


def test_hubs_order_is_score_then_id(synthetic: Path):
    g = G.WikiGraph.build(synthetic, keep_links=False)
    indeg = [len(x) for x in g.in_edges]
    outdeg = [len(x) for x in g.out_edges]
    expected = sorted(g.ids, key=lambda pid: (-(indeg[g.index[pid]] + 0.5 * outdeg[g.index[pid]]), pid))
    ties = len(expected) - len({indeg[i] + 0.5 * outdeg[i] for i in range(len(g.ids))})
    assert ties > 100  # many equal scores: the id tie-break is exercised
    assert [h["id"] for h in G.hubs(g, None)["hubs"]] == expected
    assert [h["id"] for h in G.hubs(g, 20)["hubs"]] == expected[:20]
    assert [h["id"] for h in G.hubs(g, 0)["hubs"]] == []


FM_VALUES = [
    "a", "b c", "1", "-2", "2024-01-02", "2024-13-02", "x/y", "null", "~", "yes", "No", "é", "a\xa0", "\xa0a",
    "'q'", '"d"', "'it''s'", "[a, b]", "[a,b]", "[ ]", "[a, 'b c', \"d\"]", "[1, 2024-01-01]", "3.5", "0x1f",
    "?x", ":x", "a:?b", "a:b", "a #c", "#c", "", "  ", "[a:?b]", "[a, ]", "[x\xa0, y]", "*a", "&a x", "!t x",
    "|", "> x", "@x", "`x", "%x", "[ml/x, ml, ml/x]",
]


def test_fast_frontmatter_equals_pyyaml_on_random_blocks():
    """Random blocks of the shapes the fast path takes (and some it must decline): whenever
    it answers, PyYAML gives the same mapping (types included)."""
    rnd = random.Random(11)
    keys = ["title", "type", "tags", "yes", "null", "a.b", "_k", "k-1", "on"]
    answered = 0
    for _ in range(12_000):
        lines = []
        for _ in range(rnd.randint(0, 5)):
            r, k = rnd.random(), rnd.choice(keys)
            if r < 0.7:
                lines.append(f"{k}: {rnd.choice(FM_VALUES)}")
            elif r < 0.85:
                lines.append(f"{k}:")
                indent = rnd.choice(["  ", "", "    "])
                lines += [f"{indent}- {rnd.choice(FM_VALUES)}" for _ in range(rnd.randint(0, 3))]
            elif r < 0.93:
                lines.append(rnd.choice(["", "# c", "  # c"]))
            else:
                lines.append(f"{k}:{rnd.choice(FM_VALUES)}")
        block = "\n".join(lines) + "\n"
        fast = frontmatter.fast_frontmatter(block)
        if fast is None:
            continue
        answered += 1
        try:
            expected = yaml.load(block, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            expected = "error"
        assert same(fast, expected if expected is not None else {}), block
    assert answered > 2_000
