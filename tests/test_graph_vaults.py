"""graph_query.py on the real vaults, checked against an independent plain scan.

The plain scan below shares no code with episteme: os.walk + full PyYAML + a simple regex over
the body with fenced blocks and inline code removed.  It is slow and simple on purpose.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from episteme.commands.graph import main
from episteme.graph import WikiGraph

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "plugin" / "scripts" / "graph_query.py"

FENCE = re.compile(r"^ {0,3}(```|~~~)[^\n]*\n.*?^ {0,3}\1[^\n]*$", re.M | re.S)
INLINE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!!)\[\[([^\[\]\n]+)\]\]")


def plain_scan(root: Path) -> dict[str, dict]:
    """id -> {"props": dict, "links": [target text]} for every page."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and not (rel_dir == "." and d == "raw")]
        for name in filenames:
            if not name.endswith(".md") or (rel_dir == "." and name in ("index.md", "log.md", "SCHEMA.md")):
                continue
            text = Path(dirpath, name).read_text(encoding="utf-8", errors="replace")
            props, body = {}, text
            m = re.match(r"---\n(.*?)\n---\n", text, re.S)
            if m:
                try:
                    props = yaml.safe_load(m.group(1)) or {}
                except yaml.YAMLError:
                    props = {}
                body = text[m.end() :]
            body = INLINE.sub("", FENCE.sub("", body))
            rel = os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/")
            out[rel] = {"props": props if isinstance(props, dict) else {}, "links": LINK.findall(body)}
    return out


@pytest.fixture(scope="module")
def age_root(vaults_dir: Path) -> Path:
    return vaults_dir / "13th-age-srd"


@pytest.fixture(scope="module")
def age_plain(age_root: Path) -> dict[str, dict]:
    return plain_scan(age_root)


@pytest.fixture(scope="module")
def age_graph(age_root: Path) -> WikiGraph:
    return WikiGraph.build(age_root)


def run_json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_age_pages_and_path_qualified_links_resolve(age_root: Path, age_plain, age_graph: WikiGraph):
    assert sorted(age_plain) == age_graph.ids
    checked = 0
    for src, rec in age_plain.items():
        for raw in rec["links"]:
            target = re.split(r"\\?\|", raw, maxsplit=1)[0].split("#", 1)[0].strip()
            if "/" not in target:
                continue
            path = target[:-3] if target.lower().endswith(".md") else target
            if (age_root / f"{path}.md").is_file() and f"{path}.md" != src:
                i, j = age_graph.index[src], age_graph.index[f"{path}.md"]
                assert j in age_graph.out_edges[i], (src, raw)
                checked += 1
    assert checked > 500  # the vault links mostly by path


def test_age_query_type_and_level_equal_plain_scan(age_root: Path, age_plain, capsys):
    def plain(pred) -> set[str]:
        return {pid for pid, rec in age_plain.items() if pred(rec["props"])}

    def ids(q: str) -> set[str]:
        r = run_json(capsys, "--wiki", str(age_root), "--mode", "query", "--query", q)
        assert r["count"] == len(r["matches"])
        return {m["id"] for m in r["matches"]}

    dragons = plain(lambda p: str(p.get("type", "")).lower() == "dragon")
    assert dragons and ids("type: dragon") == dragons
    lvl = plain(lambda p: isinstance(p.get("level"), int) and not isinstance(p.get("level"), bool) and p["level"] >= 5)
    assert lvl and ids("level >= 5") == lvl
    both = plain(lambda p: str(p.get("type", "")).lower() == "dragon" and isinstance(p.get("level"), int) and p["level"] >= 10)
    assert both and ids("TYPE: Dragon and LEVEL >= 10") == both
    assert ids("NOT (type: dragon) AND level >= 5") == lvl - dragons


def test_age_cluster_nested_tags(age_root: Path, age_plain, capsys):
    r = run_json(capsys, "--wiki", str(age_root), "--mode", "cluster", "--tag", "13a/bestiary")

    def tagged(p) -> bool:
        tags = p.get("tags") or []
        tags = [tags] if isinstance(tags, str) else tags
        return any(str(t).lower() == "13a/bestiary" or str(t).lower().startswith("13a/bestiary/") for t in tags)

    expected = sorted(pid for pid, rec in age_plain.items() if tagged(rec["props"]))
    assert len(expected) > 100 and [m["id"] for m in r["members"]] == expected
    assert 0 <= r["density"] <= 1 and r["anchor"] in expected


def test_age_hubs_degrees_equal_plain_edges(age_root: Path, age_graph: WikiGraph, capsys):
    r = run_json(capsys, "--wiki", str(age_root), "--mode", "hubs", "--limit", "10")
    assert len(r["hubs"]) == 10
    for h in r["hubs"]:
        i = age_graph.index[h["id"]]
        assert h["in"] == len(age_graph.in_edges[i]) and h["out"] == len(age_graph.out_edges[i])
        assert h["score"] == h["in"] + 0.5 * h["out"]
    total_in = sum(len(x) for x in age_graph.in_edges)
    assert total_in == age_graph.edge_count


@pytest.mark.parametrize("vault", ["13th-age-srd", "dendron-site"])
def test_every_mode_runs_on_real_vaults(vaults_dir: Path, vault: str, capsys):
    root = str(vaults_dir / vault)
    stats = run_json(capsys, "--wiki", root, "--mode", "stats")
    assert stats["pages"] > 900 and stats["edges"] > 500 and stats["frontmatter_errors"] == 0
    hub = run_json(capsys, "--wiki", root, "--mode", "hubs", "--limit", "3")["hubs"][0]["id"]
    nb = run_json(capsys, "--wiki", root, "--mode", "neighbors", "--seed", hub, "--depth", "2")
    assert nb["layers"][0][0]["id"] == hub and len(nb["layers"]) >= 2
    far = nb["layers"][-1][-1]["id"]
    sp = run_json(capsys, "--wiki", root, "--mode", "shortest-path", "--src", hub, "--dst", far)
    assert sp["length"] == len(nb["layers"]) - 1 and sp["paths"][0][0] == hub and sp["paths"][0][-1] == far
    orph = run_json(capsys, "--wiki", root, "--mode", "orphans")
    assert orph["orphan_count"] == len(orph["orphans"]) and orph["dangling_count"] == stats["dangling"]
    for fmt in ("text", "mermaid"):
        assert main(["--wiki", root, "--mode", "neighbors", "--seed", hub, "--format", fmt]) == 0
        assert capsys.readouterr().out.strip()


def test_dendron_reversed_links_are_dangling_not_crashes(vaults_dir: Path):
    g = WikiGraph.build(vaults_dir / "dendron-site")
    dangling = {(d.source, d.target) for d in g.dangling}
    # [[Publishing your notes|dendron.tutorial.publishing]]: the label comes first in Dendron,
    # so the target we read is the label, which names no page
    hits = [
        (p.id, link.target)
        for p in g.pages
        for link in p.links
        if link.target == "Publishing your notes"
    ]
    assert hits and all((pid, t) in dangling for pid, t in hits)


def test_script_runs_as_a_process(vaults_dir: Path):
    """The thin script: bootstrap, one JSON document on stdout, exit 0."""
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--wiki", str(vaults_dir / "13th-age-srd"), "--mode", "stats"],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pages"] == 1003
