"""Benchmark ``lint --claims``: does the wiki catch its own corrupted sentences?

Steps, per wiki (the dev papers; and papers nobody tuned on, ``../shared/data/papers-more``):

1. build the wiki from real PDFs with the write path an agent uses (``episteme ingest --write``,
   the extractive writer, whose sections are quotes of the paper), cached by the papers' hashes;
2. ``prose`` mode (the default, the hard case): every section is rewritten through
   ``WikiWriter.update_section`` with its quotes turned into plain sentences, so every sentence
   is a claim the verifier must check (a located quote would be skipped); ``quoted`` mode keeps
   the quotes as written;
3. a clean ``lint --claims`` run (false flags on an untouched wiki), then the generic, seeded
   corruptions of ``corrupt_wiki.py`` (numbers, names, language pairs, comparisons, negation,
   a sentence copied into a section about other papers), then ``lint --claims --format json``
   as a subprocess (the real CLI: exit status and findings);
4. found = a finding on the corrupted sentence (same file, line and claim text); false flags =
   untouched sentences with a finding.  Timing: the full run (cache cleared), the cached re-run
   and a plain lint, measured in the same run.

    python benchmarks/bench_claims.py [--wiki-set dev|held|both] [--mode prose|quoted|both] \\
        [--per-kind 20] [--seed 17] [--out benchmarks/RESULTS-claims.md]
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))
sys.path.insert(0, str(REPO / "benchmarks"))

from corrupt_wiki import KINDS, apply_corruptions, plan_corruptions  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
SETS = {"dev": SHARED / "papers", "held": SHARED / "papers-more"}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT",
                        "EMBEDDING_MODEL", "ANTHROPIC_API_KEY", "LLM_API_KEY")}
    env["PYTHONPATH"] = str(REPO / "plugin") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def build_template(name: str, papers: list[Path], cache: Path) -> Path:
    h = hashlib.sha256()
    for p in papers:
        h.update(p.name.encode() + hashlib.sha256(p.read_bytes()).digest())
    target = cache / f"{name}-{h.hexdigest()[:12]}"
    if (target / "done").exists():
        return target / "wiki"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "ingest", *map(str, papers), "--wiki",
                           str(target / "wiki"), "--write", "--writer", "extractive", "--date", "2026-12-01",
                           "--no-progress"], capture_output=True, text=True, env=_env())
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed:\n{proc.stderr[-3000:]}")
    (target / "done").write_text(f"{time.monotonic() - t0:.1f}\n")
    return target / "wiki"


def page_files(wiki: Path) -> list[str]:
    return sorted(p.relative_to(wiki).as_posix() for p in wiki.rglob("*.md")
                  if p.name not in ("index.md", "log.md", "SCHEMA.md") and "raw" not in p.parts
                  and ".episteme" not in p.parts)


def to_prose(wiki: Path) -> int:
    """Rewrite every section with its quotes as plain sentences, through the writer."""
    from episteme.query.claimtext import page_sections
    from episteme.wiki.edit import WikiWriter

    n = 0
    with WikiWriter(wiki, op="bench-prose", subject="bench_claims") as w:
        for rel in page_files(wiki):
            for sec in page_sections((wiki / rel).read_text(encoding="utf-8")):
                body = re.sub(r"(?m)^[ \t]*>[ \t]?", "", sec.body)
                body = re.sub(r"“([^”]*)”", r"\1", body)
                if body != sec.body and body.strip():
                    w.update_section(rel, sec.id, body=body)
                    n += 1
    return n


def units_of(wiki: Path, kind: str) -> list[dict]:
    """The claims lint reads, with where they are (and each section's last body line)."""
    from episteme.query.claimtext import page_sections, section_units
    from episteme.wiki.index import read_index_json

    idx = read_index_json(wiki)
    out = []
    for rel in page_files(wiki):
        text = (wiki / rel).read_text(encoding="utf-8")
        lines = text.split("\n")
        for sec in page_sections(text):
            srcs = idx.get(sec.id, sec.sources)
            blines = sec.body.split("\n")
            last = sec.body_line + max(i for i, ln in enumerate(blines) if ln.strip()) if sec.body.strip() \
                else sec.body_line
            for u in section_units(sec):
                if (u.quote and kind == "claim") or (not u.quote and kind == "quote"):
                    continue
                if not lines[u.line - 1].strip():
                    continue
                out.append({"file": rel, "line": u.line, "text": u.text, "section_id": sec.id,
                            "sources": list(srcs), "section_end": last})
    return out


def lint(wiki: Path, *extra: str) -> tuple[int, dict, float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(REPO / "plugin" / "scripts" / "wiki_lint.py"), "--wiki", str(wiki),
                           "--format", "json", *extra], capture_output=True, text=True, env=_env())
    dt = time.monotonic() - t0
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"lint printed no JSON (exit {proc.returncode}):\n{proc.stderr[-3000:]}") from None
    return proc.returncode, data, dt


def _norm(t: str) -> str:
    return " ".join(re.findall(r"[0-9a-z]+", t.lower()))


def claim_flags(data: dict) -> dict[tuple[str, int, str], dict]:
    out = {}
    for f in data["findings"]:
        if f["rule"].startswith("claim-") and f.get("claim"):
            out[(f["file"], f["line"], _norm(f["claim"]))] = f
    return out


def run_one(set_name: str, template: Path, mode: str, per_kind: int, seed: int, work: Path) -> dict:
    wiki = work / f"{set_name}-{mode}" / "wiki"
    shutil.rmtree(wiki.parent, ignore_errors=True)
    shutil.copytree(template, wiki, ignore=shutil.ignore_patterns("claims-cache.json"))
    rewritten = to_prose(wiki) if mode == "prose" else 0
    kind = "claim" if mode == "prose" else "quote"
    # timing: plain lint, full --claims (no cache), cached re-run — same machine, same minute
    _rc0, plain_data, t_plain = lint(wiki)
    rc_clean, clean, t_full = lint(wiki, "--claims")
    _rc, _d, t_cached = lint(wiki, "--claims")
    _rc0, _d0, t_plain2 = lint(wiki)
    clean_units = units_of(wiki, kind)
    clean_flags = claim_flags(clean)
    clean_flagged = sum(1 for u in clean_units if (u["file"], u["line"], _norm(u["text"])) in clean_flags)

    cs = plan_corruptions(clean_units, per_kind=per_kind, seed=seed)
    applied = apply_corruptions(wiki, cs)
    rc, data, t_corrupt = lint(wiki, "--claims")
    flags = claim_flags(data)
    by_line: dict[tuple[str, int], list[dict]] = {}
    for (f, ln, _t), fd in flags.items():
        by_line.setdefault((f, ln), []).append(fd)

    def found(c) -> dict | None:
        for fd in by_line.get((c.file, c.line), []):
            a, b = set(_norm(fd["claim"]).split()), set(_norm(c.after).split())
            if a and b and len(a & b) / len(a | b) >= 0.6:
                return fd
        return None

    per: dict[str, dict] = {k: {"n": 0, "found": 0, "contradicted": 0, "unsupported": 0, "misquoted": 0, "copy_only": 0}
                            for k in KINDS}
    misses = []
    for c in applied:
        row = per[c.kind]
        row["n"] += 1
        fd = found(c)
        if fd is None:
            misses.append(c)
            continue
        rule = fd["rule"]
        if rule == "claim-misquoted":
            row["misquoted"] += 1  # not counted as found: the verifier said supported
            misses.append(c)
            continue
        row["found"] += 1
        if fd.get("verifier_verdict") == "supported":
            row["copy_only"] += 1  # the verifier said supported; the near-copy check caught it
        row["contradicted" if rule == "claim-contradicted" else "unsupported"] += 1
    touched = {(c.file, c.line) for c in applied}
    after_units = units_of(wiki, kind)
    untouched = [u for u in after_units if (u["file"], u["line"]) not in touched]
    fp = [u for u in untouched if (u["file"], u["line"], _norm(u["text"])) in flags
          and flags[(u["file"], u["line"], _norm(u["text"]))]["rule"] != "claim-misquoted"]
    sections = sum(1 for _ in re.finditer(r"^<!-- section ", "\n".join(
        (wiki / p).read_text(encoding="utf-8") for p in page_files(wiki)), re.M))
    return {
        "set": set_name, "mode": mode, "sections": sections, "sections_rewritten": rewritten,
        "claims": len(clean_units), "clean_flagged": clean_flagged, "clean_exit": rc_clean,
        "corruptions": len(applied), "per_kind": per, "exit": rc,
        "untouched": len(untouched), "untouched_flagged": len(fp),
        "t_plain": min(t_plain, t_plain2), "t_full": t_full, "t_cached": t_cached, "t_corrupt": t_corrupt,
        "plain_findings": len(plain_data["findings"]),
        "misses": [(c.kind, c.file, c.line, c.after[:160]) for c in misses[:12]],
        "false_flags": [(u["file"], u["line"], u["text"][:140],
                         (flags[(u["file"], u["line"], _norm(u["text"]))].get("reason") or {}).get("code"))
                        for u in fp[:12]],
    }


def render(results: list[dict], args) -> str:
    out = ["# lint --claims: corrupted-wiki benchmark", ""]
    out.append(f"`python benchmarks/bench_claims.py --wiki-set {args.wiki_set} --mode {args.mode} "
               f"--per-kind {args.per_kind} --seed {args.seed}` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    out.append(f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}; "
               "other helpers' tests and benchmarks were running on the same 2 cores (timings are noisy; "
               "compare the ratios).")
    out.append("")
    out.append("Wikis: `dev` = the 10 papers of ../shared/data/papers (the verifier was developed on them); "
               "`held` = the 6 papers of ../shared/data/papers-more, not looked at while building this check. "
               "Wiki written by `episteme ingest --write --writer extractive`; `prose` mode rewrites every "
               "section through `WikiWriter.update_section` with its quotes as plain sentences, so every "
               "sentence goes through the verifier (`quoted` keeps the quotes: located ones are skipped).")
    out.append("")
    out.append("| wiki | mode | sections | claims | corruptions | found | untouched flagged | clean wiki flagged | exit |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        n = r["corruptions"]
        f = sum(v["found"] for v in r["per_kind"].values())
        out.append(f"| {r['set']} | {r['mode']} | {r['sections']} | {r['claims']} | {n} | "
                   f"{f}/{n} = {f / max(n, 1):.1%} | {r['untouched_flagged']}/{r['untouched']} = "
                   f"{r['untouched_flagged'] / max(r['untouched'], 1):.1%} | {r['clean_flagged']}/{r['claims']} | "
                   f"{r['exit']} |")
    out.append("")
    out.append("Targets: found >= 85 %, untouched flagged <= 5 %, exit 1.")
    out.append("")
    out.append("| wiki | mode | found by the verifier alone (near-copy check off) |")
    out.append("|---|---|---|")
    for r in results:
        n = r["corruptions"]
        f = sum(v["found"] - v["copy_only"] for v in r["per_kind"].values())
        out.append(f"| {r['set']} | {r['mode']} | {f}/{n} = {f / max(n, 1):.1%} |")
    for r in results:
        out.append("")
        out.append(f"## {r['set']} / {r['mode']}: per corruption kind")
        out.append("")
        out.append("| kind | n | found | as contradicted | as unsupported | only by the near-copy check |")
        out.append("|---|---|---|---|---|---|")
        for k, v in r["per_kind"].items():
            if v["n"]:
                out.append(f"| {k} | {v['n']} | {v['found']} ({v['found'] / v['n']:.0%}) | {v['contradicted']} | "
                           f"{v['unsupported']} | {v['copy_only']} |")
        out.append("")
        out.append(f"Timing ({r['sections']} sections, {r['claims']} claims): plain lint {r['t_plain']:.2f} s; "
                   f"full `--claims` (empty cache) {r['t_full']:.1f} s; cached re-run {r['t_cached']:.2f} s "
                   f"= {r['t_cached'] / max(r['t_plain'], 1e-9):.2f}x plain lint; after the corruptions "
                   f"(only edited sections re-verified) {r['t_corrupt']:.1f} s.")
        if r["misses"]:
            out.append("")
            out.append("Missed (first 12): " + "; ".join(f"{k} `{a[:110]}`" for k, _f, _l, a in r["misses"]))
        if r["false_flags"]:
            out.append("")
            out.append("Untouched but flagged (first 12): " + "; ".join(f"`{t[:100]}` ({code})"
                                                                        for _f, _l, t, code in r["false_flags"]))
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wiki-set", choices=("dev", "held", "both"), default="both")
    ap.add_argument("--mode", choices=("prose", "quoted", "both"), default="prose")
    ap.add_argument("--per-kind", type=int, default=20)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "episteme-bench-claims"))
    ap.add_argument("--templates", default=None,
                    help="use DIR/dev/wiki and DIR/held/wiki (already built by `ingest --write`) instead of building")
    ap.add_argument("--out", default=None, help="write the markdown table here too")
    args = ap.parse_args()
    sets = ["dev", "held"] if args.wiki_set == "both" else [args.wiki_set]
    modes = ["prose", "quoted"] if args.mode == "both" else [args.mode]
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for s in sets:
            papers = sorted(SETS[s].glob("*.pdf"))
            if not papers:
                raise SystemExit(f"no papers in {SETS[s]}")
            template = (Path(args.templates) / s / "wiki") if args.templates else build_template(s, papers, cache)
            for m in modes:
                print(f"[{s}/{m}] running...", file=sys.stderr)
                results.append(run_one(s, template, m, args.per_kind, args.seed, Path(tmp)))
    text = render(results, args)
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    json.dump(results, sys.stderr, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
