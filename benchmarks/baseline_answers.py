"""Capture graph answers + lint findings (JSON) for a vault. usage: baseline.py REPO_PLUGIN VAULT OUTDIR"""
import json
import os
import subprocess
import sys

plugin, vault, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
env = dict(os.environ, PYTHONPATH=plugin)
PY = "/work/main/.venv/bin/python"
def run(name, *argv):
    p = subprocess.run([PY, "-m", "episteme.cli", *argv], capture_output=True, text=True, env=env)
    txt = p.stdout
    if name.startswith("lint"):
        lines = []
        for row in txt.splitlines():
            try:
                d = json.loads(row)
            except ValueError:
                lines.append(row)
                continue
            if isinstance(d, dict) and "summary" in d and isinstance(d["summary"], dict):
                d["summary"].pop("seconds", None)
            lines.append(json.dumps(d, sort_keys=True))
        txt = "\n".join(lines) + "\n"
    with open(os.path.join(out, name + ".json"), "w") as f:
        f.write(f"rc={p.returncode}\n" + txt + ("\nSTDERR:" + p.stderr[-500:] if p.returncode not in (0, 1) else ""))
# seeds: first and last md files by sorted path
mds = sorted(os.path.relpath(os.path.join(d, f), vault) for d, ds, fs in os.walk(vault) if "/." not in d and "/raw" not in d for f in fs if f.endswith(".md"))
mds = [m for m in mds if m not in ("index.md", "log.md", "SCHEMA.md") and not m.startswith(".")]
a, b, c = mds[len(mds)//3], mds[2*len(mds)//3], mds[len(mds)//2]
T = ["--today", "2026-01-01"]
run("stats", "graph", "--wiki", vault, *T)
run("hubs", "graph", "--wiki", vault, "--mode", "hubs", "--limit", "50", *T)
run("orphans", "graph", "--wiki", vault, "--mode", "orphans", *T)
run("neighbors", "graph", "--wiki", vault, "--mode", "neighbors", "--seed", c, "--depth", "2", *T)
run("path", "graph", "--wiki", vault, "--mode", "shortest-path", "--src", a, "--dst", b, *T)
tag = {"v10k": "physics", "13th-age-srd": "13A/Characters"}.get(os.path.basename(vault), "example")
run("cluster", "graph", "--wiki", vault, "--mode", "cluster", "--tag", tag, *T)
run("cluster_text", "graph", "--wiki", vault, "--mode", "cluster", "--tag", tag, "--format", "mermaid", *T)
run("lint_text", "lint", "--wiki", vault, *T)
run("query", "graph", "--wiki", vault, "--mode", "query", "--query", "type: entity OR tags: project", "--limit", "100", *T)
run("stats_text", "graph", "--wiki", vault, "--format", "text", *T)
run("lint", "lint", "--wiki", vault, "--format", "json", *T)
