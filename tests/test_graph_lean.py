"""The graph command's fast path gives the same answers as the full scan.

``WikiGraph.build(keep_links=False)`` (what ``graph_query.py`` uses) scans pages without line
numbers (``pages.link_targets``), with the second process of ``pages.fork_map`` on big wikis,
and reads line numbers back only for dangling/ambiguous links.  Every result here is compared
with the full scan (``scan_links`` with lines, one process), which the other graph tests check
against independent plain scans.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from episteme import graph as G
from episteme import pages
from episteme.commands.graph import main

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
        assert pages.link_targets(body, start) == pages.scan_links(body[start:]).targets, (body, start)


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
    assert pages.link_targets(body) == targets == pages.scan_links(body).targets


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
        assert pages._frontmatter_bounds(data) == reference(data), data


@pytest.mark.parametrize(
    "block",
    ["a: b\xa0\n", "a: b\u2003\n", "a: [x\xa0, y]\n", "a:\n  - b\xa0\n", "a: b \n", "a: [ ]\n", "t: x\nt: y\n"],
)
def test_fast_frontmatter_keeps_what_pyyaml_keeps(block: str):
    """YAML separates with spaces (and tabs) only: a no-break space belongs to the value."""
    fast = pages.fast_frontmatter(block)
    assert fast is not None
    assert fast == (yaml.load(block, Loader=yaml.CSafeLoader) or {})


def test_fast_frontmatter_lists_are_fresh_per_page():
    a = pages.fast_frontmatter("tags: [x, y]\n")
    b = pages.fast_frontmatter("tags: [x, y]\n")  # served from the line cache
    assert a == b == {"tags": ["x", "y"]}
    a["tags"].append("z")
    assert b["tags"] == ["x", "y"] and pages.fast_frontmatter("tags: [x, y]\n") == {"tags": ["x", "y"]}


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
    full = G.WikiGraph.build(tricky_wiki, today=G._dt.date(2026, 11, 29), jobs=1)
    lean = G.WikiGraph.build(tricky_wiki, today=G._dt.date(2026, 11, 29), jobs=1, keep_links=False)
    assert full.ambiguities and full.dangling and full.frontmatter_errors  # the fixture exercises them
    assert all(len(p.links) == 0 for p in lean.pages)
    assert_same_graph(full, lean)


def test_lean_build_equals_full_build_on_real_vaults(vaults_dir: Path):
    for name in ("13th-age-srd", "dendron-site"):
        root = vaults_dir / name
        full = G.WikiGraph.build(root, jobs=1)
        assert_same_graph(full, G.WikiGraph.build(root, jobs=1, keep_links=False))
        assert_same_graph(full, G.WikiGraph.build(root, jobs=2, keep_links=False))


@pytest.fixture(scope="module")
def synthetic(shared: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "v"
    subprocess.run(
        [sys.executable, str(shared / "tools" / "gen_vault.py"), "--pages", "1500", "--seed", "3", "--out", str(out)],
        check=True, stdout=subprocess.DEVNULL,
    )
    return out


def test_two_processes_give_the_same_scan(synthetic: Path):
    one = pages.scan_wiki(synthetic, jobs=1)
    two = pages.scan_wiki(synthetic, jobs=2)
    assert [(p.id, p.path, p.props, list(p.links), p.fm_error) for p in two] == [
        (p.id, p.path, p.props, list(p.links), p.fm_error) for p in one
    ]
    ids1, rows1 = pages.scan_wiki_lean(synthetic, jobs=1)
    ids3, rows3 = pages.scan_wiki_lean(synthetic, jobs=3)
    assert ids1 == ids3 == [p.id for p in one] and rows1 == rows3
    assert [r[4] for r in rows1] == [p.links.targets for p in one]
    full = G.WikiGraph.build(synthetic, jobs=1)
    assert_same_graph(full, G.WikiGraph.build(synthetic, jobs=2, keep_links=False))


def test_command_output_is_the_same_with_one_or_two_processes(synthetic: Path, capsys):
    results = {}
    for mode in ("stats", "hubs", "orphans"):
        out = []
        for jobs in ("1", "2"):
            assert main(["--wiki", str(synthetic), "--mode", mode, "--jobs", jobs]) == 0
            out.append(json.loads(capsys.readouterr().out))
        assert out[0] == out[1]
        results[mode] = out[0]
    assert results["stats"]["pages"] == 1500 and results["stats"]["dangling"] > 0
    # the script as users run it (forks by $EPISTEME_JOBS, exits without tearing down)
    r = subprocess.run([sys.executable, str(SCRIPT), "--wiki", str(synthetic), "--mode", "stats"],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "EPISTEME_JOBS": "2"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == results["stats"]


# ---------------------------------------------------------------------------- processes


def test_default_jobs_policy(monkeypatch):
    monkeypatch.delenv("EPISTEME_JOBS", raising=False)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    assert pages.default_jobs(100) == 1
    assert pages.default_jobs(2 * pages.PARALLEL_MIN_PAGES - 1) == 1
    big = 100 * pages.PARALLEL_MIN_PAGES
    assert pages.default_jobs(big) == cpus  # no load-average gate: the CPUs this process may use
    assert pages.default_jobs(2 * pages.PARALLEL_MIN_PAGES) == min(cpus, 2)
    monkeypatch.setenv("EPISTEME_JOBS", "3")
    assert pages.default_jobs(10) == 3
    monkeypatch.setenv("EPISTEME_JOBS", "0")
    assert pages.default_jobs(big) == 1
    monkeypatch.setenv("EPISTEME_JOBS", "many")
    assert pages.default_jobs(big) == cpus


def _ids_and_pid(root: str, ids: list[str]) -> list[tuple[str, int]]:
    return [(i, os.getpid()) for i in ids]


def _fails_in_child(root: str, ids: list[str], parent: int = os.getpid()) -> list[str]:
    if os.getpid() != parent:
        raise RuntimeError("child failure")
    return list(ids)


def test_fork_map_runs_parts_in_children_and_recovers_from_a_failed_child():
    parts = [["a", "b"], ["c"], ["d", "e"]]
    got = pages.fork_map(_ids_and_pid, "root", parts)
    assert [[i for i, _ in part] for part in got] == parts
    assert got[0][0][1] == os.getpid() and got[1][0][1] != os.getpid() and got[2][0][1] != got[1][0][1]
    assert pages.fork_map(_fails_in_child, "root", parts) == parts  # the parent did their parts


def test_fork_map_meanwhile_runs_before_the_children_are_read_and_errors_leave_no_child():
    seen = []
    got = pages.fork_map(_ids_and_pid, "root", [["a"], ["b"]], meanwhile=lambda part, rows: seen.append((part, rows)))
    assert seen == [(["a"], [("a", os.getpid())])] and [i for i, _ in got[1]] == ["b"]

    def boom(part, rows):
        raise KeyError("meanwhile failed")

    with pytest.raises(KeyError):
        pages.fork_map(_ids_and_pid, "root", [["a"], ["b"], ["c"]], meanwhile=boom)
    with pytest.raises(ChildProcessError):  # both children were killed and reaped
        os.waitpid(-1, os.WNOHANG)


def test_followup_children_answer_after_their_part_and_failures_are_none():
    prepared = []

    def request(parts, results):
        return {"parts": len(parts), "first": results[0]}

    def serve(req, index, part, result):
        if part == ["boom"]:
            raise RuntimeError("child failure")
        return (index, req["parts"], req["first"], part, [x for x, _ in result], prepared, os.getpid())

    fu = pages.Followup(request, serve, prepare=lambda index, part, result: prepared.append(index))
    parts = [["a"], ["b", "c"], ["boom"], ["d"]]
    got = pages.fork_map(_ids_and_pid, "root", parts, followup=fu)
    assert [[i for i, _ in part] for part in got] == parts  # the results come first, as ever
    answers = fu.answers()
    assert [a and a[:5] for a in answers] == [
        (1, 4, [("a", os.getpid())], ["b", "c"], ["b", "c"]), None, (3, 4, [("a", os.getpid())], ["d"], ["d"])]
    assert answers[0][5] == [1] and answers[2][5] == [3]  # prepare ran in each child, before serve
    assert prepared == [] and answers[0][6] != os.getpid()
    assert fu.answers() == []  # collected once
    with pytest.raises(ChildProcessError):  # every child was reaped
        os.waitpid(-1, os.WNOHANG)


def test_an_early_request_bigger_than_the_pipe_still_arrives():
    """Sent before the child's result is read: what does not fit waits until it is, so a big
    request and a big result never block each other."""
    big = "x" * (3 << 20)

    def work(root, part):
        return [big] if part == ["b"] else list(part)

    fu = pages.Followup(lambda parts, results: (len(results), results[1], big),
                        lambda req, i, part, result: (req[0], req[1], len(req[2]), len(result[0])), early=True)
    got = pages.fork_map(work, "root", [["a"], ["b"]], followup=fu)
    assert got == [["a"], [big]]
    assert fu.answers() == [(2, None, len(big), len(big))]  # made before the child's result was in


def test_followup_close_ends_children_never_asked():
    import time

    fu = pages.Followup(lambda parts, results: None, lambda req, i, part, result: time.sleep(60))
    pages.fork_map(_ids_and_pid, "root", [["a"], ["b"]], followup=fu)
    t = time.monotonic()
    fu.close()  # killed, not waited for a minute
    assert time.monotonic() - t < 5
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_no_fork_while_other_threads_run(synthetic: Path):
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not pages._can_fork()
        ids, rows = pages.scan_wiki_lean(synthetic, jobs=2)  # scanned in this process
    finally:
        stop.set()
        t.join()
    # Other tests in this worker may have left daemon threads (servers, pools): the policy must
    # follow whatever is alive now, and the result must not depend on it.
    assert pages._can_fork() == (threading.active_count() <= 1)
    assert (ids, rows) == pages.scan_wiki_lean(synthetic, jobs=2)


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
    from test_pages import same

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
        fast = pages.fast_frontmatter(block)
        if fast is None:
            continue
        answered += 1
        try:
            expected = yaml.load(block, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            expected = "error"
        assert same(fast, expected if expected is not None else {}), block
    assert answered > 2_000
