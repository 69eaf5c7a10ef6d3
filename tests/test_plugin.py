"""The Claude Code plugin surface: manifests, skill frontmatter, and the scripts skills run.

Claude Code's own validator does not check skill names, so this test does: a skill whose name
differs from its folder, or that tells the agent to run a script that does not exist, would only
fail in a user's session.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SCRIPTS

SKILLS = ["wiki-graph", "wiki-ingest", "wiki-lint", "wiki-query"]
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SCRIPT_REF = re.compile(r"\$\{CLAUDE_PLUGIN_ROOT\}/([\w./-]+\.py)")


def _frontmatter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path} must start with YAML frontmatter"
    end = text.index("\n---", 4)
    data = yaml.safe_load(text[4:end])
    assert isinstance(data, dict), f"{path}: frontmatter is not a mapping"
    return data


def test_plugin_manifest() -> None:
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert NAME_RE.match(manifest["name"]) and len(manifest["name"]) <= 64
    assert manifest["description"] and re.match(r"^\d+\.\d+\.\d+$", manifest["version"])
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'version = "{manifest["version"]}"' in pyproject, "plugin and package versions differ"


def test_marketplace_manifest_lists_this_plugin() -> None:
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    plugin = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert NAME_RE.match(market["name"])
    assert market["owner"]["name"]
    entries = {p["name"]: p for p in market["plugins"]}
    assert plugin["name"] in entries
    source = entries[plugin["name"]]["source"]
    assert isinstance(source, str) and source.startswith("./")
    assert (REPO / source / ".claude-plugin" / "plugin.json").exists()


def test_every_skill_has_valid_frontmatter_and_runnable_paths() -> None:
    found = sorted(p.parent.name for p in (REPO / "skills").glob("*/SKILL.md"))
    assert found == SKILLS
    for name in SKILLS:
        skill = REPO / "skills" / name / "SKILL.md"
        meta = _frontmatter(skill)
        assert meta.get("name") == name, f"{skill}: name must equal its folder"
        assert NAME_RE.match(name) and len(name) <= 64
        desc = meta.get("description")
        assert isinstance(desc, str) and 40 <= len(desc) <= 1024, f"{skill}: description length"
        assert re.search(r"\b(use|when)\b", desc, re.I), f"{skill}: description must say when to use it"
        text = skill.read_text(encoding="utf-8")
        refs = SCRIPT_REF.findall(text)
        assert refs, f"{skill} names no script to run"
        for rel in refs:
            assert (REPO / rel).is_file(), f"{skill} tells the agent to run {rel}, which does not exist"
        for ref in re.findall(r"\]\((references/[^)]+)\)", text):
            assert (skill.parent / ref).is_file(), f"{skill} links to missing {ref}"


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    """A virtualenv with nothing installed: what a user's python3 may look like."""
    root = tmp_path_factory.mktemp("barevenv")
    venv.EnvBuilder(with_pip=False).create(root)
    return root / "bin" / "python"


def test_script_with_missing_dependencies_says_what_to_run(bare_python: Path) -> None:
    env = dict(os.environ, EPISTEME_BOOTSTRAPPED="1")
    proc = subprocess.run(
        [str(bare_python), str(SCRIPTS / "ingest.py"), "x.pdf"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert proc.returncode == 3
    assert "setup_env.py" in proc.stderr and "Traceback" not in proc.stderr


def test_script_reexecs_into_the_episteme_venv(bare_python: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "EPISTEME_BOOTSTRAPPED"}
    env["EPISTEME_VENV"] = str(Path(sys.prefix))
    proc = subprocess.run(
        [str(bare_python), str(SCRIPTS / "graph_query.py"), "--wiki", str(REPO / "wiki"), "--mode", "stats"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["pages"] == 0


def test_usage_names_what_the_user_typed(tmp_path: Path) -> None:
    """`episteme graph` errors say `episteme graph`; the skill's script says its own name."""
    episteme = Path(sys.prefix) / "bin" / "episteme"
    via_cli = subprocess.run([str(episteme), "graph", "--mode", "nope"], capture_output=True, text=True, timeout=60)
    via_script = subprocess.run([sys.executable, str(SCRIPTS / "wiki_lint.py"), "--format", "nope"],
                                capture_output=True, text=True, timeout=60)
    assert via_cli.returncode == 2 and "episteme graph" in via_cli.stderr
    assert via_script.returncode == 2 and "wiki_lint.py" in via_script.stderr
