#!/usr/bin/env python3
"""How much of what matters reaches the offline wiki: the extractive writer, before vs after.

    nice -n 10 python benchmarks/bench_writer_coverage.py [--baseline REV] [--out FILE]
                                                          [--work DIR [--reuse-before]]

Both writers (``--baseline``: the plugin tree of a git revision, via ``git archive``; "after":
this checkout's ``plugin/``) write the same stored papers into fresh copies of one ingested
wiki (the 10 dev papers; cached like ``bench_trace``, under ``EPISTEME_BENCH_CACHE``), each
writer in its own subprocess with its own code on ``PYTHONPATH``.  Each written wiki gets the
starter ``SCHEMA.md`` of its own code (what ``episteme init`` gives a new wiki).  Measured on
the written pages' text (frontmatter and section markers left out):

* **gold facts reached** -- the gold quotes of ``gold/dev_trace.jsonl`` and the quotes of the
  true claims of ``gold/dev_verify.jsonl``, each looked for in the wiki text of its paper's
  pages after normalising both (lower case, letters and digits only, single spaces): the share
  of quotes found, and the share of items with at least one quote found;
* **table captions with their numbers** -- the paper's stored tables whose caption (first
  sentence) is in the wiki *and* at least one of whose numeric cells is quoted with it;
* **page types** (distribution), **words per page**, **median words per section** (readable
  length: the writer's budget must keep it bounded), lint findings of the written wiki;

on the dev papers split in two fixed halves (A: tuned on, B: measured only) and, for page types
and lint, on the 6 ``papers-more`` papers (held out: other fields and layouts).  The claim
check that ``ingest --write`` runs after planning is skipped here (it writes nothing).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import unicodedata
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))
sys.path.insert(0, str(REPO / "benchmarks"))
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared")).resolve()
GOLD = SHARED / "data" / "gold"
DEFAULT_BASELINE = "2ad1fd9"  # main before issue 18 item 3
# fixed halves of the dev papers (alphabetical order, alternating): tune on A, report both
HALF_A = ("attention_1706.03762v5.pdf", "bert_1810.04805v2.pdf", "gan_1406.2661v1.pdf",
          "resnet_1512.03385v1.pdf", "vit_2010.11929.pdf")
HALF_B = ("bahdanau_1409.0473v7.pdf", "citesee_2302.07302v1.pdf", "pasa_2501.10120v1.pdf",
          "s2orc_acl2020.pdf", "word2vec_explained_1411.2738v4.pdf")

_DRIVER = r"""
import datetime as dt, json, sys, time
from episteme.compile.writer import write_paper
from episteme.config import load_settings
from episteme.stores.sqlite import Store
wiki = sys.argv[1]
settings = load_settings(wiki, env={}, dotenv=None)
with Store(settings.sqlite_path, readonly=True) as st:
    ids = sorted(p["id"] for p in st.papers())
t0, c0 = time.perf_counter(), time.process_time()
for pid in ids:
    write_paper(settings, pid, writer="extractive", today=dt.date(2026, 11, 29), check_claims=False)
print(json.dumps({"papers": ids, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
"""


def norm(text: str) -> str:
    """Lower case, letters and digits only (ligatures such as "ﬁ" unfolded), single spaces."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", unicodedata.normalize("NFKC", text).lower()).split())


def first_sentence(caption: str) -> str:
    """A caption's first sentence without its label (the metric's fixed notion of "the
    caption", the same for both writers)."""
    text = " ".join(re.sub(r"^\s*(?:table|figure|fig\.|algorithm)\s*[\w.]{1,6}\s*[:.|]\s*", "",
                           caption or "", flags=re.I).split())
    m = re.search(r"(?<=[a-z0-9)\]])[.!?](?=\s+[A-Z(])", text)
    return text[: m.end()] if m and m.end() >= 20 else text[:200]


def plugin_tree(rev: str, dest: Path) -> Path:
    """``plugin/`` as it was at ``rev`` (git archive), unpacked under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    arch = subprocess.run(["git", "-C", str(REPO), "archive", rev, "plugin"], check=True,
                          capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=arch, check=True)
    return dest / "plugin"


def write_wiki(plugin: Path, papers_wiki: Path, out: Path) -> dict:
    """Copy the ingested wiki to ``out`` and write every paper with the writer in ``plugin``."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(papers_wiki, out, ignore=shutil.ignore_patterns("trace_vectors", "wiki_index.db*", "tmp"))
    shutil.copy(plugin / "episteme" / "data" / "SCHEMA.md", out / "SCHEMA.md")
    env = {k: v for k, v in os.environ.items()
           if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT")}
    env["PYTHONPATH"] = str(plugin)
    proc = subprocess.run([sys.executable, "-c", _DRIVER, str(out)], capture_output=True, text=True,
                          env=env, cwd=str(plugin.parent))
    if proc.returncode != 0:
        raise SystemExit(f"writing with {plugin} failed:\n{proc.stderr[-3000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    lint = subprocess.run([sys.executable, "-m", "episteme.cli", "lint", "--wiki", str(out), "--format", "json"],
                          capture_output=True, text=True, env=env, cwd=str(plugin.parent))
    try:
        res["lint"] = json.loads(lint.stdout)
    except json.JSONDecodeError:
        res["lint"] = {"error": lint.stderr[-500:]}
    return res


def read_pages(wiki: Path) -> dict[str, dict]:
    """page -> {"type", "paper", "sources", "sections": [(title, body)]}."""
    import yaml
    from episteme.wiki.sections import parse_page

    out = {}
    for path in sorted(wiki.rglob("*.md")):
        rel = path.relative_to(wiki).as_posix()
        if rel in ("index.md", "log.md", "SCHEMA.md") or rel.startswith(("raw/", ".")):
            continue
        text = path.read_text(encoding="utf-8")
        fm = {}
        if text.startswith("---\n"):
            fm = yaml.safe_load(text[4:text.find("\n---", 4)]) or {}
        parsed = parse_page(text, strict=False)
        srcs = sorted({s for sec in parsed.sections for s in sec.sources} | set(fm.get("sources") or []))
        out[rel] = {"type": str(fm.get("type", "")), "paper": fm.get("paper"), "sources": srcs,
                    "tags": [str(t) for t in (fm.get("tags") or [])],
                    "sections": [(sec.title, sec.body) for sec in parsed.sections]}
    return out


def gold_items() -> list[dict]:
    items = []
    for line in (GOLD / "dev_trace.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            items.append({"set": "trace", "id": r["id"], "paper": r["paper"], "quotes": r["gold_quotes"]})
    for line in (GOLD / "dev_verify.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if r["label"] == "supported":
                items.append({"set": "verify", "id": r["id"], "paper": r["paper"], "quotes": r["gold_quotes"],
                              "in_table": bool(r.get("in_table"))})
    return items


def paper_texts(pages: dict[str, dict]) -> dict[str, str]:
    """paper id -> normalised text of every page section citing it."""
    acc: dict[str, list[str]] = {}
    for p in pages.values():
        for title, body in p["sections"]:
            for s in p["sources"]:
                acc.setdefault(s, []).append(f"{title}\n{body}")
    return {k: " " + norm("\n".join(v)) + " " for k, v in acc.items()}


def coverage(pages: dict[str, dict], papers: tuple[str, ...]) -> dict:
    texts = paper_texts(pages)
    rows = {"trace": [0, 0, 0, 0], "verify": [0, 0, 0, 0], "verify-table": [0, 0, 0, 0]}
    for it in gold_items():
        if it["paper"] not in papers:
            continue
        t = texts.get(it["paper"], "")
        found = [bool(norm(q)) and f" {norm(q)} " in t for q in it["quotes"]]
        keys = [it["set"]] + (["verify-table"] if it.get("in_table") else [])
        for k in keys:
            r = rows[k]
            r[0] += sum(found)
            r[1] += len(found)
            r[2] += any(found)
            r[3] += 1
    return rows


def table_coverage(wiki: Path, pages: dict[str, dict], papers: tuple[str, ...]) -> tuple[int, int, int]:
    """(captions found, captions found with a numeric cell quoted in the same section, tables)."""
    from episteme.config import load_settings
    from episteme.stores.sqlite import open_store

    settings = load_settings(wiki, env={}, dotenv=None)
    with open_store(settings, readonly=True) as store:
        tables = [o for p in papers for o in store.objects(p) if o["kind"] == "table"]
    secs: dict[str, list[str]] = {}
    for p in pages.values():
        for _title, body in p["sections"]:
            for s in p["sources"]:
                secs.setdefault(s, []).append(" " + norm(body) + " ")
    cap_found = with_nums = 0
    for o in tables:
        cap = norm(first_sentence(o["caption"]))
        if not cap:
            continue
        hits = [b for b in secs.get(o["paper_id"], []) if f" {cap} " in b]
        if not hits:
            continue
        cap_found += 1
        nums = {norm(c) for row in o["text"].splitlines() for c in row.split("\t")
                if re.fullmatch(r"[\s\d.,±%()+-]*\d[\s\d.,±%()+-]*", c.strip())}
        nums = {n for n in nums if n and len(n.replace(" ", "")) >= 2}
        if any(f" {n} " in b for b in hits for n in nums):
            with_nums += 1
    return cap_found, with_nums, len(tables)


def shape(pages: dict[str, dict], papers: tuple[str, ...]) -> dict:
    mine = {k: p for k, p in pages.items() if set(p["sources"]) & set(papers)}
    types = Counter(p["type"] for p in mine.values())
    words = [sum(len(b.split()) for _t, b in p["sections"]) for p in mine.values()]
    sec_words = [len(b.split()) for p in mine.values() for _t, b in p["sections"]]
    top_level = sum(1 for k, p in mine.items() if "/" not in k)
    nested = sum(1 for k, p in mine.items() if k.startswith("papers/") and p["type"] != "paper")
    return {"pages": len(mine), "types": dict(types), "top_level": top_level, "nested": nested,
            "words_median": statistics.median(words) if words else 0,
            "sec_median": statistics.median(sec_words) if sec_words else 0,
            "sec_p90": sorted(sec_words)[int(0.9 * (len(sec_words) - 1))] if sec_words else 0,
            "sec_max": max(sec_words) if sec_words else 0, "words_total": sum(words)}


LABELS = REPO / "benchmarks" / "writer_type_labels.json"


def type_agreement(pages: dict[str, dict], half: str) -> tuple[int, int, Counter]:
    """(pages whose written ``type`` is the hand label, labelled pages written, the
    disagreements as "label→written" counts), for one half's hand labels
    (``writer_type_labels.json``, labelled before the type rule was written)."""
    labels = json.loads(LABELS.read_text(encoding="utf-8")).get(half, {})
    agree, n, wrong = 0, 0, Counter()
    for rel, label in labels.items():
        if rel not in pages:
            continue
        n += 1
        if pages[rel]["type"] == label:
            agree += 1
        else:
            wrong[f"{label}→{pages[rel]['type']}"] += 1
    return agree, n, wrong


def tag_stats(pages: dict[str, dict], papers: tuple[str, ...]) -> dict:
    """Tags of the pages of ``papers`` (paper pages aside): per page (median), distinct, the
    share of tags whose words are in their page's text, and of tags on two or more pages."""
    mine = {k: p for k, p in pages.items() if set(p["sources"]) & set(papers) and p["type"] != "paper"}
    per = [len(p["tags"]) for p in mine.values()]
    uses = Counter(t for p in mine.values() for t in p["tags"])
    grounded = total = 0
    for p in mine.values():
        text = " " + norm(" ".join(f"{t} {b}" for t, b in p["sections"])) + " "
        for t in p["tags"]:
            total += 1
            grounded += f" {norm(t.replace('-', ' ').replace('/', ' '))} " in text
    return {"median": statistics.median(per) if per else 0, "distinct": len(uses), "total": total,
            "grounded": grounded, "shared": sum(1 for c in uses.values() if c >= 2)}


def explanation_count(pages: dict[str, dict], papers: tuple[str, ...]) -> int:
    """Sentences quoted under an "Explanations:" label on the pages of ``papers``."""
    n = 0
    for p in pages.values():
        if not set(p["sources"]) & set(papers):
            continue
        for _t, body in p["sections"]:
            inside = False
            for line in body.split("\n"):
                if line == "Explanations:":
                    inside = True
                elif inside and line.startswith("> "):
                    n += 1
                elif inside and line.strip() and not line.startswith("> "):
                    inside = False
    return n


def ensure_more(bt, bv) -> Path | None:
    """The 6 ``papers-more`` papers ingested once (``bench_verify``'s cache of them)."""
    if not sorted(bv.MORE.glob("*.pdf")):
        return None
    return bv.more_wiki()


def lint_summary(res: dict) -> str:
    lint = res.get("lint") or {}
    if "error" in lint:
        return "lint failed: " + lint["error"][:200]
    c = lint.get("summary") or {}
    fs = lint.get("findings") or []
    rules = Counter(f.get("rule") for f in fs)
    return (f"{c.get('errors', 0)} errors, {c.get('warnings', 0)} warnings"
            + (f" ({', '.join(f'{r} {n}' for r, n in rules.most_common(4))})" if rules else ""))


def written_runs(results: dict, more_papers: tuple[str, ...]):
    """``(half, papers, writer, results key)`` of every written wiki in ``results``, in table
    order: each half of the dev papers, then papers-more; the *before* writer, then *after*."""
    for half, papers in (("A (tuned)", HALF_A), ("B (held out)", HALF_B),
                         ("papers-more (held out)", more_papers)):
        corpus = "more" if papers is more_papers else "dev"
        for name in ("before", "after"):
            key = f"{name}-{corpus}"
            if key in results:
                yield half, papers, name, key


def pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100.0 * a / b:.1f} %)" if b else "—"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision of the 'before' writer")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "RESULTS-writer-coverage.md"))
    ap.add_argument("--work", default=None, help="where the written wikis go (default: a temp dir)")
    ap.add_argument("--reuse-before", action="store_true",
                    help="keep the baseline wikis already written under --work (iterating on 'after')")
    args = ap.parse_args()

    import bench_trace as bt
    import bench_verify as bv

    papers_wiki = bt.ensure_wiki()
    more_wiki = ensure_more(bt, bv)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-writer-coverage-"))
    base_plugin = plugin_tree(args.baseline, work / "baseline-src")
    variants = {"before": base_plugin, "after": REPO / "plugin"}
    results: dict[str, dict] = {}
    for name, plugin in variants.items():
        for corpus, src in (("dev", papers_wiki), ("more", more_wiki)):
            if src is None:
                continue
            print(f"writing {corpus} with {name} ({plugin})...", file=sys.stderr)
            out = work / f"{name}-{corpus}"
            done = out / ".written.json"
            if name == "before" and args.reuse_before and done.is_file():
                res = json.loads(done.read_text(encoding="utf-8"))  # the baseline, written earlier in --work
            else:
                res = write_wiki(plugin, src, out)
                done.write_text(json.dumps(res), encoding="utf-8")
            res["pages"] = read_pages(out)
            res["wiki"] = out
            results[f"{name}-{corpus}"] = res

    more_papers = tuple(results["after-more"]["papers"]) if "after-more" in results else ()
    lines = [
        "# Offline writer: what reaches the wiki (before vs after)",
        "",
        f"Produced by `nice -n 10 .venv/bin/python benchmarks/bench_writer_coverage.py` on "
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        "(other helpers' jobs running).",
        "",
        f"*before* = the extractive writer at `{args.baseline}`; *after* = this checkout.  Both write the "
        "same stored papers (the 10 dev papers, one wiki; the 6 `papers-more` papers, another) with "
        "a fixed date; claim check skipped (it writes nothing).  Gold quotes are matched after "
        "normalising (lower case, letters and digits, single spaces) against the text of every "
        "wiki section that cites the quote's paper.  Half A (tuned on): "
        + ", ".join(HALF_A) + ".  Half B (measured only): " + ", ".join(HALF_B) + ".",
        "",
        "## Gold facts in the wiki text",
        "",
        "| set | papers | before: quotes | after: quotes | before: items ≥ 1 quote | after: items ≥ 1 quote |",
        "|---|---|---|---|---|---|",
    ]
    for half, papers in (("A (tuned)", HALF_A), ("B (held out)", HALF_B), ("all 10", HALF_A + HALF_B)):
        cb = coverage(results["before-dev"]["pages"], papers)
        ca = coverage(results["after-dev"]["pages"], papers)
        for k, label in (("trace", "dev_trace gold quotes"), ("verify", "dev_verify true claims"),
                         ("verify-table", "… of them in a table")):
            lines.append(f"| {label} | {half} | {pct(cb[k][0], cb[k][1])} | {pct(ca[k][0], ca[k][1])} | "
                         f"{pct(cb[k][2], cb[k][3])} | {pct(ca[k][2], ca[k][3])} |")
    lines += ["", "## Tables: caption in the wiki, with a number of the table beside it", "",
              "| papers | tables | before: caption | before: caption + number | after: caption | after: caption + number |",
              "|---|---|---|---|---|---|"]
    for half, papers in (("A (tuned)", HALF_A), ("B (held out)", HALF_B), ("papers-more (held out)", more_papers)):
        corpus = "more" if papers is more_papers else "dev"
        if f"before-{corpus}" not in results:
            continue
        b = table_coverage(results[f"before-{corpus}"]["wiki"], results[f"before-{corpus}"]["pages"], papers)
        a = table_coverage(results[f"after-{corpus}"]["wiki"], results[f"after-{corpus}"]["pages"], papers)
        lines.append(f"| {half} | {b[2]} | {pct(b[0], b[2])} | {pct(b[1], b[2])} | {pct(a[0], a[2])} | {pct(a[1], a[2])} |")
    lines += ["", "## Pages: types, nesting, length, lint", "",
              "| papers | writer | pages | top-level | under a paper | page types | words/page (median) | "
              "words/section (median / p90 / max) | lint | write s (wall / CPU) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for half, papers, name, key in written_runs(results, more_papers):
        s = shape(results[key]["pages"], papers)
        types = ", ".join(f"{t} {n}" for t, n in sorted(s["types"].items(), key=lambda x: (-x[1], x[0])))
        timing = (f"{results[key]['wall']:.0f} / {results[key]['cpu']:.0f}" if half != "B (held out)" else "(one run with A)")
        lines.append(f"| {half} | {name} | {s['pages']} | {s['top_level']} | {s['nested']} | {types} | "
                     f"{s['words_median']:.0f} | {s['sec_median']:.0f} / {s['sec_p90']} / {s['sec_max']} | "
                     f"{lint_summary(results[key])} | {timing} |")
    lines += ["", "## Page types against hand labels", "",
              "The types of the pages written for each half, against hand labels of the same pages "
              "(`benchmarks/writer_type_labels.json`, labelled before the type rule was written; B "
              "was not looked at while writing it).  A page whose path the writer no longer makes is "
              "left out (the count says how many were compared).", "",
              "| half | writer | agree | most common disagreements (label→written) |", "|---|---|---|---|"]
    for half in ("A", "B"):
        for name in ("before", "after"):
            agree, n, wrong = type_agreement(results[f"{name}-dev"]["pages"], half)
            lines.append(f"| {half} | {name} | {pct(agree, n)} | "
                         + ", ".join(f"{k} {v}" for k, v in wrong.most_common(5)) + " |")
    lines += ["", "## Tags and explanations", "",
              "Tags of the non-paper pages: per page (median), distinct tags, tags whose words are in "
              "their page's text, tags on two or more pages (what `graph cluster` groups by); and "
              "the sentences quoted as explanations.", "",
              "| papers | writer | tags/page | distinct | in the page's text | on ≥ 2 pages | explanations |",
              "|---|---|---|---|---|---|---|"]
    for half, papers, name, key in written_runs(results, more_papers):
        ts = tag_stats(results[key]["pages"], papers)
        lines.append(f"| {half} | {name} | {ts['median']:.0f} | {ts['distinct']} | "
                     f"{pct(ts['grounded'], ts['total'])} | {ts['shared']} | "
                     f"{explanation_count(results[key]['pages'], papers)} |")
    lines += ["", "Lint is of the whole written wiki (both halves for the dev papers); the write "
              "time is of all papers of that wiki (wall / CPU seconds, one process, claim check off)"
              + ("; the *before* wikis were written by an earlier run of this command in the same "
                 "`--work` folder (`--reuse-before`), their times are from that run." if args.reuse_before else "."),
              ""]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    print(f"written wikis kept under {work}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
