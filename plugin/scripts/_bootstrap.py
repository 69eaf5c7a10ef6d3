"""Make ``plugin/scripts/*.py`` run straight from a checkout (or an installed plugin).

Puts ``plugin/`` on ``sys.path`` and, when a command needs packages the current interpreter
lacks, re-executes under the episteme virtualenv made by ``setup_env.py`` (looked up by
:func:`candidate_venvs`: ``$EPISTEME_VENV``, the plugin data folder -- ``$CLAUDE_PLUGIN_DATA`` or
derived from this file's install path -- the per-user data folder, then ``<repo>/.venv``).  When there is none, it
prints the exact command to run instead of a bare ImportError.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

# os.path, not pathlib, on the way in: importing pathlib costs every script ~5 ms of start-up
# (graph_query.py is measured against a bare file scan); PLUGIN_DIR / REPO_DIR stay Paths.
_PLUGIN = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if _PLUGIN not in sys.path:
    sys.path.insert(0, _PLUGIN)


def __getattr__(name: str):
    if name in ("PLUGIN_DIR", "REPO_DIR"):
        from pathlib import Path

        return Path(_PLUGIN) if name == "PLUGIN_DIR" else Path(_PLUGIN).parent
    raise AttributeError(name)


def _plugin_id_dir(name: str) -> str:
    """Claude Code's directory name for a plugin id: every character other than a letter, a
    digit, ``_`` or ``-`` becomes ``-`` (``episteme@local`` -> ``episteme-local``)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "-" for c in name)


def plugin_data_dir() -> str | None:
    """The plugin's persistent data folder, which survives plugin updates.

    ``$CLAUDE_PLUGIN_DATA`` when Claude Code set it; else derived from where this file is
    installed: a marketplace install lives at ``<home>/.claude/plugins/cache/<marketplace>/
    <plugin>/<version>/`` and its data folder is ``<home>/.claude/plugins/data/
    <plugin>-<marketplace>/`` -- so a script run from a shell Claude Code did not prepare
    still finds the venv setup built.  None when neither applies (a checkout)."""
    env = os.environ.get("CLAUDE_PLUGIN_DATA")
    if env:
        return env
    parts = os.path.realpath(_PLUGIN).replace("\\", "/").split("/")
    for i in range(len(parts) - 4, 0, -1):
        if parts[i] == "cache" and parts[i - 1] == "plugins" and i + 2 < len(parts):
            market, plugin = parts[i + 1], parts[i + 2]
            root = "/".join(parts[:i])
            return os.path.join(root, "data", _plugin_id_dir(f"{plugin}@{market}"))
    return None


def user_data_dir() -> str:
    """The per-user data folder (what ``platformdirs.user_data_dir("episteme")`` gives),
    written with the standard library because this runs before any venv exists."""
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(home, "Library", "Application Support")
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(base, "episteme")


def default_venv() -> Path:
    """Where setup builds the venv when not told: ``$EPISTEME_VENV``, else the plugin data
    folder's ``venv`` (see :func:`plugin_data_dir`), else the per-user data folder's.  Never
    inside the checkout: a local marketplace install copies the checkout, and a venv there
    would be copied (and its symlinks broken) with it."""
    from pathlib import Path

    if os.environ.get("EPISTEME_VENV"):
        return Path(os.environ["EPISTEME_VENV"])
    data = plugin_data_dir()
    return Path(data or user_data_dir()) / "venv"


def venv_python(venv: Path) -> Path:
    """The interpreter inside a venv, on every platform."""
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def candidate_venvs() -> list[Path]:
    """Every place a venv may be, in order: ``$EPISTEME_VENV``, the plugin data folder (set or
    derived), the per-user data folder, and ``<repo>/.venv`` (a developer's checkout)."""
    from pathlib import Path

    out = []
    if os.environ.get("EPISTEME_VENV"):
        out.append(Path(os.environ["EPISTEME_VENV"]))
    if os.environ.get("CLAUDE_PLUGIN_DATA"):
        out.append(Path(os.environ["CLAUDE_PLUGIN_DATA"]) / "venv")
    saved = os.environ.pop("CLAUDE_PLUGIN_DATA", None)
    try:
        derived = plugin_data_dir()
    finally:
        if saved is not None:
            os.environ["CLAUDE_PLUGIN_DATA"] = saved
    if derived:
        out.append(Path(derived) / "venv")
    out.append(Path(user_data_dir()) / "venv")
    out.append(Path(_PLUGIN).parent / ".venv")
    seen: set[str] = set()
    return [v for v in out if not (str(v) in seen or seen.add(str(v)))]


def _findable(name: str) -> bool:
    """``importlib.util.find_spec(name) is not None`` for a top-level module name, asked of
    the import system's finders directly: ``importlib.util`` (with ``contextlib``, ``functools``
    and ``collections``...) costs every script a few milliseconds of start-up, and
    graph_query.py is measured against a bare file scan."""
    if "." in name:  # a submodule: its parent package's path matters; ask importlib
        import importlib.util

        return importlib.util.find_spec(name) is not None
    if name in sys.modules:
        return sys.modules[name] is not None
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is not None and find(name, None) is not None:
            return True
    return False


def require(*modules: str) -> None:
    """Ensure ``modules`` import; otherwise re-exec in the episteme venv or explain the fix."""
    missing = [m for m in modules if not _findable(m)]
    if not missing:
        return
    from pathlib import Path

    if not os.environ.get("EPISTEME_BOOTSTRAPPED"):
        for venv in candidate_venvs():
            py = venv_python(venv)
            if py.exists() and Path(sys.prefix).resolve() != venv.resolve():
                os.environ["EPISTEME_BOOTSTRAPPED"] = "1"
                os.execv(str(py), [str(py), *sys.argv])
    setup = Path(_PLUGIN) / "scripts" / "setup_env.py"
    sys.stderr.write(
        f"error: missing Python packages: {', '.join(missing)}\n"
        f"  run once: python3 {setup}\n"
        f"  (it builds a virtualenv with everything episteme needs; the scripts then use it)\n"
    )
    sys.exit(3)


def run_once(main) -> None:
    """Run a one-shot command ``main()`` and end the process with its status.

    A one-shot process, so two things a library must not do are safe here: no cyclic garbage
    collection (a scan allocates hundreds of thousands of small containers and no cycles; on a
    10k-page generated wiki ``graph --mode stats`` spends ~40 ms of ~560 ms CPU (7 %) in ~140
    collections that free almost nothing: measured 2026-12, Python 3.11), and ``os._exit`` after
    flushing, so the command's objects are never freed one by one at interpreter exit (tens of
    milliseconds on a large wiki; the OS takes the memory back at once)."""
    import gc

    gc.disable()
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
