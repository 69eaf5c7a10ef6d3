"""Mermaid output is valid for the REAL Mermaid parser (npm ``mermaid``, run by node).

``tests/mermaid/`` pins mermaid + jsdom (package-lock.json); the session fixture installs them
once with ``npm ci`` into a cache folder outside the repo (``ingested_wiki.cached_build``:
``$EPISTEME_TEST_CACHE``), keyed by the hash of the package files and the parse script, so a
fresh CI machine installs and later runs reuse it.  The parser then reports each diagram's nodes (labels decoded the way
Mermaid renders them) and edges, which must equal the pages and links of the graph result.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from episteme import graph as G
from episteme.graph.format import MERMAID_MAX_EDGES, render_mermaid
from ingested_wiki import cache_root, cached_build

HERE = Path(__file__).resolve().parent / "mermaid"


@pytest.fixture(scope="session")
def mermaid_parse():
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.fail("node and npm are required for the Mermaid parser test (apt-get install nodejs npm)")
    files = ("package.json", "package-lock.json", "parse.mjs")
    digest = hashlib.sha256(b"".join((HERE / name).read_bytes() for name in files)).hexdigest()[:16]
    with cached_build(f"mermaid-{digest}", ".installed") as build:  # (one installer per machine)
        if build is not None:
            for name in files:
                shutil.copy(HERE / name, build / name)
            r = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=build, capture_output=True, text=True, timeout=600,
            )
            assert r.returncode == 0, f"npm ci failed:\n{r.stderr[-3000:]}"
            (build / ".installed").write_text(digest)
    target = cache_root() / f"mermaid-{digest}"

    def parse(diagrams: list[str]) -> list[dict]:
        r = subprocess.run(
            [node, str(target / "parse.mjs")], input=json.dumps(diagrams), cwd=target,
            capture_output=True, text=True, timeout=180,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        return json.loads(r.stdout)

    return parse


NASTY_TITLES = [
    'Say "hi"', "C# & F#; &amp; #quot;", "<script>alert(1)</script>", "end", "graph",
    "a --> b", "[brackets] (parens) {braces}", "pipe | here", "semi; colon: x", "%% not a comment",
    "back`tick", "ünïcödé 名前", "click callback", "style n0 fill:red", "subgraph", "A\\B",
]


def _yaml_quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


@pytest.fixture
def nasty_wiki(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    names = [f"dir.with.dots/Page {i}.md" if i % 2 else f"end/p{i}.md" for i in range(len(NASTY_TITLES))]
    for i, (name, title) in enumerate(zip(names, NASTY_TITLES, strict=True)):
        nxt = Path(names[(i + 1) % len(names)]).stem
        other = Path(names[(i + 5) % len(names)]).stem
        updated = "2020-01-01" if i % 3 == 0 else ("2026-05-01" if i % 3 == 1 else "2025-10-01")
        text = (
            f"---\ntitle: {_yaml_quote(title)}\ntags: [nasty, n{i % 2}]\nupdated: {updated}\n---\n"
            f"[[{nxt}]] [[{other}]]\n"
        )
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (root / "lonely.md").write_text("---\ntitle: Lonely \"one\"\n---\n", encoding="utf-8")
    (root / "SCHEMA.md").write_text(
        "```yaml\nmemory_tiers: {active_days: 60, archived_days: 300}\n```\n", encoding="utf-8"
    )
    return root


def _check(parsed: dict, diagram: str, order: list[str], title: dict[str, str], result_edges: list[list[str]]):
    """``order``: the page ids in the order the renderer declares them (n0, n1, ...)."""
    assert parsed["ok"], f"{parsed.get('error')}\n{diagram}"
    assert parsed["type"].startswith("flowchart")
    decl = [line.split("[", 1)[0].strip() for line in diagram.splitlines()[1:] if '["' in line]
    assert decl == [f"n{k}" for k in range(len(order))]
    labels = dict(parsed["nodes"])
    assert set(labels) == set(decl)
    id_of = dict(zip(decl, order, strict=True))
    for nid, pid in id_of.items():
        assert labels[nid] == title[pid]  # the exact title, after Mermaid decodes the label
    got_edges = sorted([id_of[a], id_of[b]] for a, b in parsed["edges"])
    if len(result_edges) > MERMAID_MAX_EDGES:  # cut to what Mermaid accepts, and said so
        assert len(got_edges) == MERMAID_MAX_EDGES and "more links not drawn" in diagram
        assert got_edges == sorted(result_edges[:MERMAID_MAX_EDGES])
    else:
        assert got_edges == sorted(result_edges)


def _path_order(sp: dict) -> list[str]:
    seen: list[str] = []
    for p in sp["paths"]:
        for i in p:
            if i not in seen:
                seen.append(i)
    return seen


def test_mermaid_output_parses_with_real_mermaid(nasty_wiki: Path, mermaid_parse):
    import datetime as dt

    g = G.WikiGraph.build(nasty_wiki, today=dt.date(2026, 6, 1))
    assert set(g.tiers) == {"active", "archived", "frozen"}  # tier classes get emitted too
    seed = g.index["end/p0.md"]
    nb = G.neighbors(g, seed, 2)
    sp = G.shortest_paths(g, g.index["end/p0.md"], g.index["dir.with.dots/Page 7.md"])
    none = G.shortest_paths(g, seed, g.index["lonely.md"])
    cl = G.cluster(g, "nasty")
    diagrams = [
        render_mermaid("neighbors", nb),
        render_mermaid("shortest-path", sp),
        render_mermaid("cluster", cl),
        render_mermaid("shortest-path", none),
        'graph TD\n    n0["broken " label"]\n',  # control: the parser must reject this
    ]
    out = mermaid_parse(diagrams)
    title = {pid: g.pages[g.index[pid]].title for pid in g.ids}
    nb_ids = [n["id"] for layer in nb["layers"] for n in layer]
    assert len(nb_ids) > 5
    _check(out[0], diagrams[0], nb_ids, title, nb["edges"])
    assert sp["length"] >= 2
    _check(out[1], diagrams[1], _path_order(sp), title, sp["edges"])
    _check(out[2], diagrams[2], [m["id"] for m in cl["members"]], title, cl["edges"])
    assert out[3]["ok"], out[3]
    assert out[4]["ok"] is False and "Parse error" in out[4]["error"]
    # every nasty title survived as the exact label text
    assert sorted(dict(out[2]["nodes"]).values()) == sorted(NASTY_TITLES)
    assert "classDef archived" in diagrams[0] and "classDef frozen" in diagrams[0]


def test_mermaid_on_real_vault(vaults_dir: Path, mermaid_parse):
    g = G.WikiGraph.build(vaults_dir / "13th-age-srd")
    hub = G.hubs(g, 1)["hubs"][0]["id"]
    nb = G.neighbors(g, g.index[hub], 1)
    cl = G.cluster(g, "13A/Combat")
    diagrams = [render_mermaid("neighbors", nb), render_mermaid("cluster", cl)]
    out = mermaid_parse(diagrams)
    title = {pid: g.pages[g.index[pid]].title for pid in g.ids}
    nb_ids = [n["id"] for layer in nb["layers"] for n in layer]
    _check(out[0], diagrams[0], nb_ids, title, nb["edges"])
    _check(out[1], diagrams[1], [m["id"] for m in cl["members"]], title, cl["edges"])
    assert len(out[0]["nodes"]) > 100 and len(nb["edges"]) > MERMAID_MAX_EDGES
