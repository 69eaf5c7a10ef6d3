"""Benchmark ``lint --claims`` (and ``trace``) on a wiki written the way the agent writes (issue 31).

The corpus is ``benchmarks/prose_corpus/``: wiki pages written by an agent following the
``wiki-ingest`` skill on eight papers of different fields (four ``dev`` papers of the collected
corpus and two of ``../shared/data/papers-more``, counted ``dev``; two ``heldout`` papers of the
corpus), every sentence labelled by hand against its paper (``labels.jsonl``: true, or false and
why), and seeded falsified copies of 56 sentences (``edits.jsonl``: a number changed, a comparison
reversed, a named setting or role swapped, a negation, a name swapped).  See
``prose_corpus/README.md``.

Steps:

1. restore the eight PDFs (the corpus cache ``$EPISTEME_PAPERS`` or ``~/.cache/episteme/papers``,
   filled by ``benchmarks/papers/restore.py``; ``../shared/data/papers-more``), check their
   sha256, and store them in a temp wiki with the real CLI (``episteme ingest``, no pages
   written), cached under the temp folder by the papers' sha256 and the store code's commit;
2. copy the labelled pages (and index.md/index.json/log.md/SCHEMA.md) into a copy of that wiki;
3. ``episteme lint --claims --format json`` (a subprocess, the code of ``--tree``) on the clean
   wiki, then on a copy with all seeded edits applied (``--edits-mode all``, default) or one page
   at a time (``--edits-mode page``);
4. report per split (the paper's manifest split): errors (``claim-contradicted``) and warnings
   (other ``claim-*`` findings) per 100 true sentences, the share of red marks that are right,
   and the seeded edits flagged (error or warning) and flagged as errors.

``--trace`` also traces each labelled sentence alone against its paper (what
``episteme trace --answer S --papers PAPER --verifier offline`` does and prints, run in one
process of the ``--tree`` code so the model loads once; verdicts checked equal to the CLI's on a
sample) and reports true kept / false rejected, seeded edits included, and the median bytes of
the printed output (what the agent reads per claim).

    python benchmarks/bench_prose.py [--tree DIR] [--trace] [--edits-mode all|page] [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "benchmarks" / "prose_corpus"
MANIFEST = REPO / "benchmarks" / "papers" / "MANIFEST.tsv"
MORE = REPO.parent / "shared" / "data" / "papers-more"
MORE_MANIFEST = MORE / "MANIFEST.tsv"
STRUCTURAL = ("index.md", "index.json", "log.md", "SCHEMA.md")
ERROR_RULE = "claim-contradicted"


# --------------------------------------------------------------------------------------- data

def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def corpus_cache() -> Path:
    env = os.environ.get("EPISTEME_PAPERS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "episteme" / "papers"


def manifest_rows() -> dict[str, dict]:
    """file -> row, for the collected corpus (with ``split``) and papers-more (split ``dev``)."""
    rows: dict[str, dict] = {}
    lines = MANIFEST.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    for line in lines[1:]:
        row = dict(zip(head, line.split("\t"), strict=False))
        rows[row["file"]] = {"sha256": row["sha256"], "split": row["split"], "path": corpus_cache() / row["file"]}
    if MORE_MANIFEST.exists():
        lines = MORE_MANIFEST.read_text(encoding="utf-8").splitlines()
        head = lines[0].split("\t")
        for line in lines[1:]:
            row = dict(zip(head, line.split("\t"), strict=False))
            rows[row["file"]] = {"sha256": row["sha256"], "split": "dev", "path": MORE / row["file"]}
    return rows


def papers_of(labels: list[dict]) -> list[str]:
    out: list[str] = []
    for lab in labels:
        for p in lab["paper"].split(";"):
            if p not in out:
                out.append(p)
    return out


def restore(names: list[str]) -> list[Path]:
    rows = manifest_rows()
    paths = []
    for name in names:
        row = rows.get(name)
        if row is None:
            raise SystemExit(f"{name}: not in MANIFEST.tsv nor in {MORE_MANIFEST}")
        p = Path(row["path"])
        if not p.exists():
            raise SystemExit(f"{name}: missing at {p}; run `python benchmarks/papers/restore.py` "
                             f"(corpus) or check ../shared/data/papers-more")
        digest = hashlib.sha256(p.read_bytes()).hexdigest()
        if digest != row["sha256"]:
            raise SystemExit(f"{name}: sha256 {digest[:12]} differs from the manifest's {row['sha256'][:12]}")
        paths.append(p)
    return paths


# ------------------------------------------------------------------------------------ running

def env_for(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT",
                        "EMBEDDING_MODEL", "ANTHROPIC_API_KEY", "LLM_API_KEY", "PYTHONPATH")}
    env["PYTHONPATH"] = str(tree / "plugin")
    return env


def store_commit(tree: Path) -> str:
    """The last commit touching the code that builds the stores (part of the cache key)."""
    try:
        out = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%H", "--", "plugin/episteme/pdf",
                              "plugin/episteme/ingest", "plugin/episteme/stores"],
                             capture_output=True, text=True, check=True).stdout.strip()
        return out or "nogit"
    except (OSError, subprocess.CalledProcessError):
        return "nogit"


def build_template(tree: Path, papers: list[Path], cache: Path) -> tuple[Path, float | None]:
    """The papers stored (raw/, SQLite, Chroma) in a wiki with no pages; cached."""
    h = hashlib.sha256(store_commit(tree).encode())
    for p in papers:
        h.update(p.name.encode() + hashlib.sha256(p.read_bytes()).digest())
    target = cache / f"stored-{h.hexdigest()[:16]}"
    if (target / "done").exists():
        return target / "wiki", None
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "ingest", *map(str, papers), "--wiki",
                           str(target / "wiki"), "--no-progress"], capture_output=True, text=True, env=env_for(tree))
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed:\n{proc.stderr[-3000:]}")
    dt = time.monotonic() - t0
    (target / "done").write_text(f"{dt:.1f}\n")
    return target / "wiki", dt


def wiki_copy(template: Path, dest: Path) -> Path:
    """A fresh copy of the stored wiki with the labelled pages in place (no claim cache)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(template, dest, ignore=shutil.ignore_patterns("claims-cache*"))
    src = CORPUS / "wiki"
    for f in src.rglob("*"):
        if f.is_file():
            rel = f.relative_to(src)
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest / rel)
    return dest


def lint_claims(tree: Path, wiki: Path) -> tuple[list[dict], float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "lint", "--wiki", str(wiki), "--claims",
                           "--format", "json"], capture_output=True, text=True, env=env_for(tree))
    dt = time.monotonic() - t0
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"lint printed no JSON (exit {proc.returncode}):\n{proc.stderr[-3000:]}") from None
    return [f for f in data["findings"] if f["rule"].startswith("claim-") and f.get("claim")], dt


def norm(text: str) -> str:
    text = re.sub(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]", r"\1", text)
    return " ".join(re.findall(r"[0-9a-z]+", text.lower().replace("-", " ")))


def finding_for(findings: list[dict], page: str, text: str) -> dict | None:
    """The finding on this page whose claim is this sentence (or contains it, or is inside it).

    An error wins over a warning when several findings touch the sentence.
    """
    t = norm(text)
    best = None
    for f in findings:
        if f["file"] != page:
            continue
        c = norm(f["claim"])
        same = c == t or (len(t) > 20 and t in c) or (len(c) > 20 and c in t)
        if same and (best is None or (f["rule"] == ERROR_RULE and best["rule"] != ERROR_RULE)):
            best = f
    return best


def apply_edits(wiki: Path, edits: list[dict]) -> None:
    for e in edits:
        p = wiki / e["page"]
        text = p.read_text(encoding="utf-8")
        if text.count(e["original"]) != 1:
            raise SystemExit(f"edit not applicable on {e['page']}: {e['original'][:60]}")
        p.write_text(text.replace(e["original"], e["edited"]), encoding="utf-8")


# ----------------------------------------------------------------------------------- measures

def clean_measures(labels: list[dict], findings: list[dict], splits: dict[str, str]) -> dict:
    per: dict[str, Counter] = defaultdict(Counter)
    marks = []
    matched = set()
    for lab in labels:
        split = splits.get(lab["paper"].split(";")[0], "dev")
        f = finding_for(findings, lab["page"], lab["text"])
        c = per[split]
        truth = lab["label"] == "true"
        c["true" if truth else "false"] += 1
        if f is not None:
            matched.add(id(f))
            sev = "error" if f["rule"] == ERROR_RULE else "warning"
            c[f"{sev}_on_{'true' if truth else 'false'}"] += 1
            marks.append({"id": lab["id"], "page": lab["page"], "label": lab["label"], "rule": f["rule"],
                          "reason": (f.get("reason") or {}).get("code", ""), "text": lab["text"],
                          "message": f.get("message", "")[:400]})
    unmatched = [f for f in findings if id(f) not in matched]
    return {"per_split": per, "marks": marks, "unmatched": unmatched}


def edit_measures(edits: list[dict], findings_by_page: dict[str, list[dict]], splits: dict[str, str],
                  labels: list[dict], clean_findings: list[dict]) -> dict:
    """Seeded edits flagged; ``already`` counts those whose untouched sentence was flagged the same
    way on the clean wiki (the edit's flag then says nothing about the edit)."""
    paper_of_section = {lab["section"]: lab["paper"].split(";")[0] for lab in labels}
    per: dict[str, Counter] = defaultdict(Counter)
    kinds: dict[str, Counter] = defaultdict(Counter)
    rows = []
    for e in edits:
        split = splits.get(paper_of_section.get(e["section"], ""), "dev")
        f = finding_for(findings_by_page.get(e["page"], []), e["page"], e["edited"])
        flagged = f is not None
        err = flagged and f["rule"] == ERROR_RULE
        before = finding_for(clean_findings, e["page"], e["original"])
        already = flagged and before is not None and (before["rule"] == ERROR_RULE) == err
        per[split]["already"] += already
        kinds[e["kind"]]["already"] += already
        per[split]["n"] += 1
        per[split]["flagged"] += flagged
        per[split]["error"] += err
        kinds[e["kind"]]["n"] += 1
        kinds[e["kind"]]["flagged"] += flagged
        kinds[e["kind"]]["error"] += err
        rows.append({**e, "finding": f["rule"] if f else None, "clean_finding": before["rule"] if before else None,
                     "reason": ((f or {}).get("reason") or {}).get("code", "")})
    return {"per_split": per, "kinds": kinds, "rows": rows}


# ------------------------------------------------------------------------------------- trace

TRACE_DRIVER = r"""
import contextlib, io, json, sys
from pathlib import Path
from episteme.commands.show import emit_sourced
from episteme.config import load_settings
from episteme.query.trace import Tracer
wiki = Path(sys.argv[1])
items = json.load(open(sys.argv[2]))
settings = load_settings(wiki)
tracer = Tracer(settings)
out = []
for it in items:
    res = tracer.trace(it["text"], papers=it["papers"], top=3)
    res["verifier"] = "offline"
    verdicts = [c.get("verdict") for c in res.get("claims", [])]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):  # what `episteme trace` prints (boxes attached, JSON)
        emit_sourced(tracer.settings, res, fmt="json", render=None, text=str)
    out.append({"key": it["key"], "verdicts": verdicts, "bytes": len(buf.getvalue().encode())})
json.dump(out, open(sys.argv[3], "w"))
"""


def run_traces(tree: Path, wiki: Path, items: list[dict], work: Path) -> tuple[dict[str, dict], float]:
    (work / "trace_in.json").write_text(json.dumps(items), encoding="utf-8")
    (work / "trace_driver.py").write_text(TRACE_DRIVER, encoding="utf-8")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(work / "trace_driver.py"), str(wiki), str(work / "trace_in.json"),
                           str(work / "trace_out.json")], capture_output=True, text=True, env=env_for(tree))
    dt = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"trace driver failed:\n{proc.stderr[-3000:]}")
    return {r["key"]: r for r in json.loads((work / "trace_out.json").read_text())}, dt


def rejected(verdicts: list[str]) -> bool:
    """A sentence is rejected when any of its claims is not supported."""
    return any(v != "supported" for v in verdicts)


# ------------------------------------------------------------------------------------- report

def pct(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def per100(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}" if b else "n/a"


def report(args, clean: dict, edits_all: dict, timings: dict, trace: dict | None, n_pages: int) -> str:
    lines = []
    splits = sorted(set(clean["per_split"]) | set(edits_all["per_split"]))
    lines.append("| split | true sentences | errors / 100 true | warnings / 100 true | false sentences | "
                 "false flagged | red marks right (clean) | seeded edits | edits flagged | edits as errors | "
                 "red marks right (clean + edits) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    tot_c, tot_e = Counter(), Counter()
    for s in splits + ["all"]:
        if s == "all":
            c, e = tot_c, tot_e
        else:
            c, e = clean["per_split"].get(s, Counter()), edits_all["per_split"].get(s, Counter())
            tot_c.update(c)
            tot_e.update(e)
        errs = c["error_on_true"] + c["error_on_false"]
        right = c["error_on_false"]
        lines.append(
            f"| {s} | {c['true']} | {per100(c['error_on_true'], c['true'])} ({c['error_on_true']}) | "
            f"{per100(c['warning_on_true'], c['true'])} ({c['warning_on_true']}) | {c['false']} | "
            f"{c['error_on_false'] + c['warning_on_false']} | {pct(right, errs)} ({right}/{errs}) | {e['n']} | "
            f"{pct(e['flagged'], e['n'])} ({e['flagged']}; {e['flagged'] - e['already']} new) | "
            f"{pct(e['error'], e['n'])} ({e['error']}) | "
            f"{pct(right + e['error'], errs + e['error'])} ({right + e['error']}/{errs + e['error']}) |")
    lines.append("")
    lines.append("Seeded edits by kind (flagged / as errors; 'same flag before' = the untouched sentence "
                 "already had that flag on the clean wiki):")
    lines.append("")
    lines.append("| kind | n | flagged | as errors | same flag before |")
    lines.append("|---|---|---|---|---|")
    for k, c in sorted(edits_all["kinds"].items()):
        lines.append(f"| {k} | {c['n']} | {c['flagged']} | {c['error']} | {c['already']} |")
    reasons = Counter(m["reason"] or m["rule"] for m in clean["marks"] if m["label"] == "true" and m["rule"] == ERROR_RULE)
    if reasons:
        lines.append("")
        lines.append("Why true sentences got errors (reason codes): "
                     + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    if trace is not None:
        lines.append("")
        lines.append("`--trace` (each sentence alone against its paper; offline verifier):")
        lines.append("")
        lines.append("| split | true kept | false rejected (labelled false + seeded edits) | median output bytes |")
        lines.append("|---|---|---|---|")
        for s, c in sorted(trace["per_split"].items()):
            lines.append(f"| {s} | {pct(c['kept'], c['true'])} ({c['kept']}/{c['true']}) | "
                         f"{pct(c['rejected'], c['false'])} ({c['rejected']}/{c['false']}) | {c['median_bytes']} |")
    lines.append("")
    lines.append(f"Timings: store the papers {timings.get('ingest', 'cached')}; lint --claims clean "
                 f"{timings['lint_clean']:.1f} s, with edits {timings['lint_edits']:.1f} s"
                 + (f"; traces {timings['trace']:.1f} s" if 'trace' in timings else "") + f". Pages: {n_pages}.")
    lines.append(f"Findings on the clean wiki not matched to a labelled sentence: {len(clean['unmatched'])}. "
                 "'new' = edits whose untouched sentence did not already carry the same flag.")
    return "\n".join(lines)


def machine() -> str:
    try:
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except (AttributeError, OSError):
        load = "n/a"
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"load average {load} (1/5/15 min) at the end of the run")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, default=REPO, help="the episteme checkout whose code is measured")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "episteme-bench-prose")
    ap.add_argument("--edits-mode", choices=["all", "page"], default="all",
                    help="apply the seeded edits all at once (one lint run) or one page at a time")
    ap.add_argument("--trace", action="store_true", help="also trace each labelled sentence alone")
    ap.add_argument("--write", action="store_true", help="write benchmarks/RESULTS-prose.md")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "RESULTS-prose.md")
    ap.add_argument("--details", type=Path, help="write every red mark and edit outcome as JSON here")
    args = ap.parse_args()
    tree = args.tree.resolve()

    labels = read_jsonl(CORPUS / "labels.jsonl")
    edits = read_jsonl(CORPUS / "edits.jsonl")
    names = papers_of(labels)
    rows = manifest_rows()
    splits = {n: rows[n]["split"] for n in names if n in rows}
    papers = restore(names)
    args.cache.mkdir(parents=True, exist_ok=True)
    template, ingest_s = build_template(tree, papers, args.cache)
    timings: dict = {"ingest": f"{ingest_s:.1f} s" if ingest_s is not None else "cached"}
    work = Path(tempfile.mkdtemp(prefix="run-", dir=args.cache))
    try:
        clean_wiki = wiki_copy(template, work / "clean")
        findings, timings["lint_clean"] = lint_claims(tree, clean_wiki)
        clean = clean_measures(labels, findings, splits)

        by_page: dict[str, list[dict]] = {}
        t_edits = 0.0
        if args.edits_mode == "all":
            w = wiki_copy(template, work / "edited")
            apply_edits(w, edits)
            fs, t_edits = lint_claims(tree, w)
            for f in fs:
                by_page.setdefault(f["file"], []).append(f)
        else:
            for page in sorted({e["page"] for e in edits}):
                w = wiki_copy(template, work / "edited")
                apply_edits(w, [e for e in edits if e["page"] == page])
                fs, dt = lint_claims(tree, w)
                t_edits += dt
                by_page[page] = [f for f in fs if f["file"] == page]
        timings["lint_edits"] = t_edits
        edited = edit_measures(edits, by_page, splits, labels, findings)

        trace = None
        if args.trace:
            items = []
            for lab in labels:
                if lab["kind"] == "claim":
                    items.append({"key": lab["id"], "text": lab["text"], "papers": lab["paper"].split(";")})
            sec_paper = {lab["section"]: lab["paper"] for lab in labels}
            for i, e in enumerate(edits):
                items.append({"key": f"edit{i}", "text": e["edited"],
                              "papers": sec_paper.get(e["section"], "").split(";")})
            results, timings["trace"] = run_traces(tree, clean_wiki, items, work)
            per: dict[str, Counter] = defaultdict(Counter)
            sizes: dict[str, list[int]] = defaultdict(list)
            for lab in labels:
                if lab["kind"] != "claim":
                    continue
                r = results[lab["id"]]
                s = splits.get(lab["paper"].split(";")[0], "dev")
                sizes[s].append(r["bytes"])
                if lab["label"] == "true":
                    per[s]["true"] += 1
                    per[s]["kept"] += not rejected(r["verdicts"])
                else:
                    per[s]["false"] += 1
                    per[s]["rejected"] += rejected(r["verdicts"])
            for i, e in enumerate(edits):
                r = results[f"edit{i}"]
                s = splits.get(sec_paper.get(e["section"], "").split(";")[0], "dev")
                per[s]["false"] += 1
                per[s]["rejected"] += rejected(r["verdicts"])
            for s in per:
                xs = sorted(sizes[s])
                per[s]["median_bytes"] = xs[len(xs) // 2] if xs else 0
            trace = {"per_split": per}

        n_pages = len([p for p in (CORPUS / "wiki").rglob("*.md") if p.name not in STRUCTURAL])
        table = report(args, clean, edited, timings, trace, n_pages)
        print(table)
        if args.details:
            args.details.write_text(json.dumps({"marks": clean["marks"], "edits": edited["rows"],
                                                "unmatched": clean["unmatched"]}, indent=1, ensure_ascii=False),
                                    encoding="utf-8")
        if args.write:
            commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
            branch = subprocess.run(["git", "-C", str(tree), "rev-parse", "--abbrev-ref", "HEAD"],
                                    capture_output=True, text=True).stdout.strip()
            text = (f"# lint --claims on agent-written prose (benchmarks/bench_prose.py)\n\n"
                    f"Code measured: `{branch}` at {commit}. Corpus: `benchmarks/prose_corpus/` "
                    f"({len(labels)} labelled sentences on {n_pages} pages, {len(names)} papers; {len(edits)} seeded edits, "
                    f"applied {'all at once' if args.edits_mode == 'all' else 'one page at a time'}).\n"
                    f"Machine: {machine()}.\n\n"
                    "Errors are `claim-contradicted` findings (red marks); warnings are the other `claim-*` "
                    "findings. A red mark is right when its sentence is labelled false or is a seeded edit. "
                    "Splits follow the papers' manifest split (papers-more counts as `dev`); `heldout` is two "
                    "papers written after the `dev` part and never tuned on.\n\n" + table + "\n")
            args.out.write_text(text, encoding="utf-8")
            print(f"\nwrote {args.out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
