"""Link resolution, tiers and every graph_query.py mode on small fixture wikis."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.commands.graph import main
from episteme.graph import WikiGraph
from episteme.wiki.schema import TierConfig, compute_tier, load_schema, page_date, parse_schema

TODAY = dt.date(2026, 6, 1)


def make_wiki(root: Path, files: dict[str, str], tiers: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    if tiers is not None:
        (root / "SCHEMA.md").write_text(f"# Schema\n\n```yaml\n{tiers}```\n", encoding="utf-8")
    return root


def page(body: str = "", **props) -> str:
    if not props:
        return body
    lines = []
    for k, v in props.items():
        if isinstance(v, list):
            lines.append(f"{k}: [{', '.join(str(x) for x in v)}]")
        else:
            lines.append(f"{k}: {v}")
    return "---\n" + "\n".join(lines) + "\n---\n" + body


def run(capsys, *argv: str) -> tuple[int, dict | str, str]:
    rc = main([*argv])
    out, err = capsys.readouterr()
    try:
        return rc, json.loads(out), err
    except json.JSONDecodeError:
        return rc, out, err


def ago(days: int) -> str:
    return (TODAY - dt.timedelta(days=days)).isoformat()


# -------------------------------------------------------------------------------- resolution


def test_resolution_steps_in_order(tmp_path: Path):
    root = make_wiki(
        tmp_path,
        {
            "x/one.md": page(title="Shared Name"),
            "Shared Name.md": page("stem equals the title of x/one"),
            "shared.md": page("root page whose path is 'shared'"),
            "z/shared.md": page("stem 'shared' too"),
            "n/nick.md": page("stem nick"),
            "aliased.md": page(aliases=["Nick", "Only Alias"]),
            "p/q.md": page(title="Q Title"),
            "src.md": page("[[shared name]] [[SHARED]] [[z/shared]] [[nick]] [[only alias]] [[P/Q.md]] [[q title]]"),
        },
    )
    g = WikiGraph.build(root, today=TODAY)

    def res(t: str) -> tuple[str, str]:
        r = g.resolve(t, "src.md")
        return g.ids[r.node], r.step

    assert res("shared name") == ("x/one.md", "title")  # title beats the stem "Shared Name"
    assert res("SHARED") == ("shared.md", "path")  # path beats the stem of z/shared.md
    assert res("z/shared") == ("z/shared.md", "path")
    assert res("nick") == ("n/nick.md", "stem")  # stem beats the alias "Nick"
    assert res("Only Alias") == ("aliased.md", "alias")
    assert res("P/Q.md") == ("p/q.md", "path")
    assert res("q") == ("p/q.md", "stem")
    assert g.resolve("nowhere").node is None
    src = g.index["src.md"]
    assert [g.ids[j] for j in g.out_edges[src]] == sorted(
        ["x/one.md", "shared.md", "z/shared.md", "n/nick.md", "aliased.md", "p/q.md"]
    )
    assert g.ambiguities == []


def test_ambiguity_tie_breaks_and_is_recorded(tmp_path: Path):
    root = make_wiki(
        tmp_path,
        {
            "f1/dup.md": "", "f2/dup.md": "", "f2/sub/dup.md": "", "longer/dup.md": "",
            "aa/two.md": "", "b/two.md": "",
            "f2/from.md": "[[dup]]\n",  # same folder wins
            "f2/sub/from.md": "[[dup]]\n",  # exact folder: f2/sub, not f2
            "other/from.md": "[[dup]] [[two]]\n",  # equal length -> alphabetical; shorter wins
        },
    )
    g = WikiGraph.build(root, today=TODAY)
    assert g.ids[g.resolve("dup", "f2/from.md").node] == "f2/dup.md"
    assert g.ids[g.resolve("dup", "f2/sub/from.md").node] == "f2/sub/dup.md"
    assert g.ids[g.resolve("dup", "other/from.md").node] == "f1/dup.md"
    assert g.ids[g.resolve("two", "other/from.md").node] == "b/two.md"
    amb = {(a.source, a.target): a for a in g.ambiguities}
    assert set(amb) == {("f2/from.md", "dup"), ("f2/sub/from.md", "dup"), ("other/from.md", "dup"), ("other/from.md", "two")}
    a = amb[("other/from.md", "dup")]
    assert a.step == "stem" and a.chosen == "f1/dup.md" and a.line == 1
    assert a.candidates == ("f1/dup.md", "f2/dup.md", "f2/sub/dup.md", "longer/dup.md")


def test_edges_unique_self_links_dropped_dangling_pairs(tmp_path: Path):
    root = make_wiki(
        tmp_path,
        {
            "a.md": "[[b]] [[B]] [[b|again]] [[a]] [[Ghost]] [[ghost]] [[GHOST#x]]\n[[Other Ghost]]\n"
            "![[b]] `[[c]]`\n```\n[[c]]\n```\n[[#local]]\n",
            "b.md": "[[Ghost]]",
            "c.md": "",
            "index.md": "[[c]] structural files are not nodes",
        },
    )
    g = WikiGraph.build(root, today=TODAY)
    assert g.ids == ["a.md", "b.md", "c.md"]
    assert g.out_edges[0] == [1] and g.edge_count == 1
    assert [(d.source, d.target, d.line) for d in g.dangling] == [
        ("a.md", "Ghost", 1), ("a.md", "Other Ghost", 2), ("b.md", "Ghost", 1),
    ]


# ----------------------------------------------------------------------------------- tiers


def test_compute_tier_rules():
    cfg = TierConfig(enabled=True, driving_field="published_at", active_days=30, archived_days=90)
    assert compute_tier({"published_at": TODAY - dt.timedelta(days=30)}, cfg, TODAY) == "active"  # inclusive
    assert compute_tier({"published_at": TODAY - dt.timedelta(days=31)}, cfg, TODAY) == "archived"
    assert compute_tier({"published_at": TODAY - dt.timedelta(days=90)}, cfg, TODAY) == "archived"
    assert compute_tier({"published_at": TODAY - dt.timedelta(days=91)}, cfg, TODAY) == "frozen"
    # fallbacks: driving field -> ingested_at -> updated
    assert compute_tier({"ingested_at": ago(60), "updated": ago(1)}, cfg, TODAY) == "archived"
    assert compute_tier({"updated": ago(200)}, cfg, TODAY) == "frozen"
    assert compute_tier({"published_at": "not a date", "updated": ago(2)}, cfg, TODAY) == "active"
    assert compute_tier({}, cfg, TODAY) == "active"  # no usable date
    # overrides win
    assert compute_tier({"updated": ago(500), "tier_override": "pin"}, cfg, TODAY) == "active"
    assert compute_tier({"updated": ago(1), "tier_override": "Frozen"}, cfg, TODAY) == "frozen"
    assert compute_tier({"updated": ago(1), "tier_override": "archived"}, cfg, TODAY) == "archived"
    # disabled: everything active, overrides included
    off = TierConfig(enabled=False)
    assert compute_tier({"updated": ago(5000), "tier_override": "frozen"}, off, TODAY) == "active"


def test_schema_tier_block_parsing(tmp_path: Path):
    assert load_schema(tmp_path).tiers.enabled is False  # no SCHEMA.md
    s = parse_schema("```yaml\nmemory_tiers:\n  active_days: 10\n```\n")
    assert s.tiers == TierConfig(True, "updated", 10, 730)  # a block enables tiers
    assert parse_schema("```yaml\nmemory_tiers: {enabled: false}\n```\n").tiers.enabled is False
    s = parse_schema("```yaml\nfields:\n  type: {type: string}\n```\nprose\n```yaml\nlint: {disable: [x]}\n```\n")
    assert s.fields == {"type": {"type": "string"}} and s.lint == {"disable": ["x"]} and not s.tiers.enabled
    assert parse_schema("```yaml\n: : bad\n```\n").errors


def test_page_date_forms():
    assert page_date(dt.date(2025, 1, 2)) == dt.date(2025, 1, 2)
    assert page_date(dt.datetime(2025, 1, 2, 23, 0)) == dt.date(2025, 1, 2)
    assert page_date("2025-01-02T10:00") == dt.date(2025, 1, 2)
    assert page_date(1655178973169) == dt.date(2022, 6, 14)  # Dendron epoch milliseconds
    assert page_date(True) is None and page_date("soon") is None and page_date(None) is None


# ------------------------------------------------------------------------------------ modes


@pytest.fixture
def gwiki(tmp_path: Path) -> Path:
    """a->b->c->d, a->e->d, a->Missing, f isolated, h (archived) -> a, k (frozen, pinned)."""
    tiers = "memory_tiers:\n  enabled: true\n  driving_field: updated\n  active_days: 30\n  archived_days: 90\n"
    return make_wiki(
        tmp_path / "w",
        {
            "concepts/a.md": page("[[b]] [[E Title]] [[Missing]]\n", title="A", type="concept", tags=["ml/attention", "nlp", "x"], updated=ago(1)),
            "concepts/b.md": page("[[c]]", type="concept", tags=["ml"], updated=ago(3), sources=["p1.pdf", "p2.pdf", "p3.pdf"]),
            "entities/c.md": page("[[d]]", type="entity", tags=["other"], updated=ago(2)),
            "entities/d.md": page("", type="entity", tags=["ML/vision"], updated=ago(10)),
            "entities/e.md": page("[[d]]", title="E Title", type="entity", updated=ago(4), aliases=["Eee"]),
            "f.md": page("", type="note", tags=["nlp"], updated=ago(5)),
            "old/h.md": page("[[A]] [[Nope]]", type="concept", tags=["ml"], updated=ago(60)),
            "old/k.md": page("[[A]]", type="concept", updated=ago(400), tier_override="pin"),
            "old/z.md": page("", type="synthesis", updated=ago(400)),
        },
        tiers=tiers,
    )


def args(wiki: Path, *extra: str) -> list[str]:
    return ["--wiki", str(wiki), "--today", TODAY.isoformat(), *extra]


def test_stats_keys_and_counts(gwiki: Path, capsys):
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "stats"))
    assert rc == 0
    for key in ("pages", "edges", "dangling", "tiers", "frontmatter_errors", "active", "archived", "frozen"):
        assert key in r
    assert r["pages"] == 9 and r["edges"] == 7 and r["dangling"] == 2
    assert r["tiers"] == {"active": 7, "archived": 1, "frozen": 1}
    assert r["frontmatter_errors"] == 0


def test_stats_counts_frontmatter_errors_and_keeps_the_page(tmp_path: Path, capsys):
    root = make_wiki(tmp_path, {"bad.md": "---\ntitle: [unclosed\n---\n[[good]]\n", "good.md": "---\ntitle: Good\n---\n"})
    rc, r, _ = run(capsys, "--wiki", str(root), "--mode", "stats")
    assert rc == 0 and r["pages"] == 2 and r["edges"] == 1 and r["frontmatter_errors"] == 1
    (err,) = r["frontmatter_error_pages"]
    # PyYAML notices the unclosed list at the end of the block: the closing --- (line 3)
    assert err["id"] == "bad.md" and err["line"] == 3 and "invalid YAML" in err["error"]


def test_neighbors_layers_undirected(gwiki: Path, capsys):
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "neighbors", "--seed", "d", "--depth", "2"))
    assert rc == 0
    ids = [[n["id"] for n in layer] for layer in r["layers"]]
    assert ids == [["entities/d.md"], ["entities/c.md", "entities/e.md"], ["concepts/a.md", "concepts/b.md"]]
    a = r["layers"][2][0]
    assert set(a) >= {"id", "title", "type", "tags", "tier"}
    assert a["title"] == "A" and a["type"] == "concept" and a["tags"] == ["ml/attention", "nlp"] and a["tier"] == "active"
    # default tier for neighbors is all: the archived page h appears, annotated
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "neighbors", "--seed", "A"))
    assert {n["id"]: n["tier"] for n in r["layers"][1]}["old/h.md"] == "archived"
    # explicit --tier active drops archived h but keeps the seed itself when archived
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "neighbors", "--seed", "old/h", "--tier", "active"))
    assert [n["id"] for n in r["layers"][0]] == ["old/h.md"]
    assert [n["id"] for n in r["layers"][1]] == ["concepts/a.md"]
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "neighbors", "--seed", "A", "--tier", "active"))
    assert "old/h.md" not in [n["id"] for n in r["layers"][1]]


@pytest.mark.parametrize("depth", ["0", "5"])
def test_neighbors_depth_bounds(gwiki: Path, capsys, depth: str):
    rc, r, err = run(capsys, *args(gwiki, "--mode", "neighbors", "--seed", "A", "--depth", depth))
    assert rc == 2 and "depth" in r["error"] and err.count("\n") == 1


def test_shortest_path_and_alias_arguments(gwiki: Path, capsys):
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "shortest-path", "--src", "A", "--dst", "entities/d.md"))
    assert rc == 0 and r["length"] == 2
    assert r["paths"] == [["concepts/a.md", "entities/e.md", "entities/d.md"]]
    assert r["nodes"]["entities/e.md"]["type"] == "entity" and r["nodes"]["entities/e.md"]["tier"] == "active"
    rc, r2, _ = run(capsys, *args(gwiki, "--mode", "shortest-path", "--src", "eee", "--dst", "b"))
    assert r2["paths"] == [["entities/e.md", "concepts/a.md", "concepts/b.md"]]  # alias "Eee"


def test_shortest_path_first_three_in_id_order(tmp_path: Path, capsys):
    files = {"s.md": "[[m4]] [[m2]] [[m1]] [[m3]]"}
    files.update({f"m{i}.md": "[[t]]" for i in range(1, 5)})
    files["t.md"] = ""
    root = make_wiki(tmp_path, files)
    rc, r, _ = run(capsys, "--wiki", str(root), "--mode", "shortest-path", "--src", "s", "--dst", "t")
    assert r["length"] == 2
    assert r["paths"] == [["s.md", "m1.md", "t.md"], ["s.md", "m2.md", "t.md"], ["s.md", "m3.md", "t.md"]]


def test_shortest_path_none_gives_candidates(gwiki: Path, capsys):
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "shortest-path", "--src", "f", "--dst", "d"))
    assert rc == 0 and r["paths"] == [] and r["length"] is None
    # f (tag nlp) is isolated; in d's component, a shares the tag nlp with f
    assert r["closest"][0] == {"id": "concepts/a.md", "side": "dst", "hops": 2, "shared": ["tag:nlp"], "score": 1}


def test_hubs_score_and_tier_default(gwiki: Path, capsys):
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "hubs", "--tier", "all"))
    top = r["hubs"][0]
    assert set(top) >= {"id", "in", "out", "score"}
    # a: in from h, k = 2, out 2 -> 3.0 ; d: in 2 out 0 -> 2.0
    assert top == {**top, "id": "concepts/a.md", "in": 2, "out": 2, "score": 3.0}
    scores = [(-h["score"], h["id"]) for h in r["hubs"]]
    assert scores == sorted(scores)
    # default for hubs with tiers enabled = active: h (archived) and z (frozen) vanish, and
    # the edge h -> a no longer counts
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "hubs"))
    by = {h["id"]: h for h in r["hubs"]}
    assert "old/h.md" not in by and "old/z.md" not in by and by["concepts/a.md"]["in"] == 1
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "hubs", "--limit", "2", "--tier", "all"))
    assert len(r["hubs"]) == 2


def test_orphans_leaves_dangling(gwiki: Path, capsys):
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "orphans"))
    assert r["orphans"] == ["f.md"]  # z is frozen: outside the default active view
    assert r["leaves"] == ["entities/d.md"]
    assert r["dangling"] == [{"from": "concepts/a.md", "target": "Missing", "line": 7}]
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "orphans", "--tier", "all"))
    assert r["orphans"] == ["f.md", "old/z.md"]
    assert {d["target"] for d in r["dangling"]} == {"Missing", "Nope"}


def test_cluster_nested_tags_density(gwiki: Path, capsys):
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "cluster", "--tag", "#ML", "--tier", "all"))
    assert [m["id"] for m in r["members"]] == ["concepts/a.md", "concepts/b.md", "entities/d.md", "old/h.md"]
    assert r["anchor"] == "concepts/a.md"  # 2 in-links in the whole graph
    # member pairs linked: a-b, h-a ; external: a->e, b->c
    assert r["intra_edges"] == 2 and r["external_edges"] == 2
    assert r["density"] == pytest.approx(2 / 6)
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "cluster", "--tag", "ml"))  # default active
    assert [m["id"] for m in r["members"]] == ["concepts/a.md", "concepts/b.md", "entities/d.md"]
    assert r["intra_edges"] == 1 and r["density"] == pytest.approx(1 / 3)
    rc, r, err = run(capsys, *args(gwiki, "--mode", "cluster", "--tag", "nlpp"))
    assert rc == 1 and "nlp" in r["error"]


def test_query_mode(gwiki: Path, capsys):
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "query", "--query", "type: entity"))
    assert [m["id"] for m in r["matches"]] == ["entities/c.md", "entities/e.md", "entities/d.md"]  # updated desc
    assert r["matches"][0]["properties"]["type"] == "entity"
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "query", "--query", "tags contains ml AND sources >= 3"))
    assert [m["id"] for m in r["matches"]] == ["concepts/b.md"]
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "query", "--query", "type: concept", "--sort", "updated"))
    # ascending; k is old but pinned (active), h is archived and filtered out by default
    assert [m["id"] for m in r["matches"]] == ["old/k.md", "concepts/b.md", "concepts/a.md"]
    rc, r, _ = run(capsys, *args(gwiki, "--mode", "query", "--query", "type: concept", "--tier", "all"))
    assert "old/h.md" in [m["id"] for m in r["matches"]]
    rc, r, err = run(capsys, *args(gwiki, "--mode", "query", "--query", "type: entity AND (updated >"))
    assert rc == 2 and "column" in r["error"] and err.count("\n") == 1


def test_unknown_page_exit_1_with_nearest(gwiki: Path, capsys):
    rc, r, err = run(capsys, *args(gwiki, "--mode", "neighbors", "--seed", "E Titel"))
    assert rc == 1 and "entities/e.md" in r["details"]["nearest"]
    assert err.startswith("error: no page matches") and err.count("\n") == 1
    rc, out, err = run(capsys, *args(gwiki, "--mode", "shortest-path", "--src", "A", "--dst", "zzzz", "--format", "text"))
    assert rc == 1 and out == "" and err.startswith("error:")


@pytest.mark.parametrize(
    "argv",
    [
        ["--mode", "bogus"],
        ["--mode", "neighbors"],
        ["--mode", "stats", "--tier", "warm"],
        ["--mode", "hubs", "--limit", "-1"],
    ],
)
def test_usage_errors_exit_2(gwiki: Path, capsys, argv):
    rc, r, err = run(capsys, *args(gwiki, *argv))
    assert rc == 2 and "error" in r and err.startswith("error:")


def test_mermaid_refused_for_stats_in_one_line(gwiki: Path, capsys):
    rc, out, err = run(capsys, *args(gwiki, "--mode", "stats", "--format", "mermaid"))
    assert rc == 2 and out == "" and "mermaid" in err and err.count("\n") == 1


def test_missing_wiki_exit_1(tmp_path: Path, capsys):
    rc, r, _ = run(capsys, "--wiki", str(tmp_path / "nope"), "--mode", "stats")
    assert rc == 1 and "not found" in r["error"]


def test_text_report_layout(gwiki: Path, capsys):
    for mode, extra in [
        ("stats", []), ("hubs", []), ("orphans", []), ("neighbors", ["--seed", "A"]),
        ("shortest-path", ["--src", "A", "--dst", "d"]), ("cluster", ["--tag", "ml"]),
        ("query", ["--query", "type: entity"]),
    ]:
        rc, out, _ = run(capsys, *args(gwiki, "--mode", mode, "--format", "text", *extra))
        assert rc == 0
        heads = [line for line in out.splitlines() if re.match(r"\[[A-Z]", line)]
        assert [h.split("]")[0] + "]" for h in heads[:5]] == [
            "[Operation]", "[Scanned]", "[Results]", "[Summary]", "[Suggested next]"
        ], mode
        assert "[Scanned] 9 pages, 7 edges (2 dangling)" in out


def test_wiki_path_env_default(gwiki: Path, capsys, monkeypatch):
    monkeypatch.setenv("WIKI_PATH", str(gwiki))
    rc, r, _ = run(capsys, "--mode", "stats")
    assert rc == 0 and r["pages"] == 9


def test_graph_command_imports_only_stdlib_and_yaml(gwiki: Path):
    code = (
        "import sys, io, contextlib\n"
        "from episteme.commands.graph import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['--wiki', {str(gwiki)!r}, '--mode', 'query', '--query', 'type: entity'])\n"
        "heavy = {'numpy', 'torch', 'chromadb', 'anthropic', 'onnxruntime', 'pypdf', 'tqdm'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "plugin")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
