#!/usr/bin/env python3
"""One-time setup: build the virtualenv every episteme script uses, install its dependencies and
prepare the embedding model.  Safe to run again (it only does what is missing).

    python3 plugin/scripts/setup_env.py                 # runtime: ingest, query, server
    python3 plugin/scripts/setup_env.py --dev           # + tests, linters, model comparison
    python3 plugin/scripts/setup_env.py --dev --browser # + Debian chromium for the UI tests

The venv goes to --venv, else $EPISTEME_VENV, else $CLAUDE_PLUGIN_DATA/venv (inside Claude
Code), else <repo>/.venv.  Progress goes to stderr; the last stdout line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
TORCH_PIN = "torch==2.13.0"  # the CPU build; an unpinned torch pulls a multi-GB CUDA build
LOCAL_WHEELS = Path("/opt/wheels")


def default_venv() -> Path:
    if os.environ.get("EPISTEME_VENV"):
        return Path(os.environ["EPISTEME_VENV"])
    if os.environ.get("CLAUDE_PLUGIN_DATA"):
        return Path(os.environ["CLAUDE_PLUGIN_DATA"]) / "venv"
    return REPO / ".venv"


def run(cmd: list[str], **kw) -> None:
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr, **kw)


def pip_cmd(py: Path) -> list[str]:
    cmd = [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if LOCAL_WHEELS.is_dir():
        cmd += ["--find-links", str(LOCAL_WHEELS)]
    return cmd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", type=Path, default=None, help="where to build the virtualenv")
    ap.add_argument("--dev", action="store_true", help="also install test and lint tools")
    ap.add_argument("--browser", action="store_true", help="apt-get install chromium for UI tests")
    ap.add_argument("--skip-model", action="store_true", help="do not prepare the embedding model")
    args = ap.parse_args()
    venv = (args.venv or default_venv()).resolve()
    py = venv / "bin" / "python"
    if not py.exists():
        run([sys.executable, "-m", "venv", str(venv)])
    extras = "dev" if args.dev else "all,model"
    stamp = venv / f".episteme-installed-{extras}"
    pyproject = (REPO / "pyproject.toml").read_bytes()
    if not stamp.exists() or stamp.read_bytes() != pyproject:
        # torch first and pinned, so sentence-transformers does not pull a CUDA build.
        run(pip_cmd(py) + [TORCH_PIN])
        run(pip_cmd(py) + ["-e", f"{REPO}[{extras}]"])
        stamp.write_bytes(pyproject)
    if not args.skip_model:
        run([str(py), "-m", "episteme.embedding", "prepare"])
    if args.browser and not shutil.which("chromium"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "chromium"], env=env)
    print(json.dumps({"status": "ok", "venv": str(venv), "python": str(py)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
