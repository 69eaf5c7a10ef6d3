"""Make ``plugin/scripts/*.py`` run straight from a checkout (or an installed plugin).

Puts ``plugin/`` on ``sys.path`` and, when a command needs packages the current interpreter
lacks, re-executes under the episteme virtualenv made by ``setup_env.py`` (looked up in
``$EPISTEME_VENV``, ``$CLAUDE_PLUGIN_DATA/venv``, then ``<repo>/.venv``).  When there is none, it
prints the exact command to run instead of a bare ImportError.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

PLUGIN_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = PLUGIN_DIR.parent
if str(PLUGIN_DIR) not in sys.path:
    sys.path.insert(0, str(PLUGIN_DIR))


def candidate_venvs() -> list[Path]:
    out = []
    if os.environ.get("EPISTEME_VENV"):
        out.append(Path(os.environ["EPISTEME_VENV"]))
    if os.environ.get("CLAUDE_PLUGIN_DATA"):
        out.append(Path(os.environ["CLAUDE_PLUGIN_DATA"]) / "venv")
    out.append(REPO_DIR / ".venv")
    return out


def require(*modules: str) -> None:
    """Ensure ``modules`` import; otherwise re-exec in the episteme venv or explain the fix."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    if not os.environ.get("EPISTEME_BOOTSTRAPPED"):
        for venv in candidate_venvs():
            py = venv / "bin" / "python"
            if py.exists() and Path(sys.prefix).resolve() != venv.resolve():
                os.environ["EPISTEME_BOOTSTRAPPED"] = "1"
                os.execv(str(py), [str(py), *sys.argv])
    setup = PLUGIN_DIR / "scripts" / "setup_env.py"
    sys.stderr.write(
        f"error: missing Python packages: {', '.join(missing)}\n"
        f"  run once: python3 {setup}\n"
        f"  (it builds a virtualenv with everything episteme needs; the scripts then use it)\n"
    )
    sys.exit(3)
