"""Make ``plugin/scripts/*.py`` run straight from a checkout (or an installed plugin).

Puts ``plugin/`` on ``sys.path`` and, when a command needs packages the current interpreter
lacks, re-executes under the episteme virtualenv made by ``setup_env.py`` (looked up in
``$EPISTEME_VENV``, ``$CLAUDE_PLUGIN_DATA/venv``, then ``<repo>/.venv``).  When there is none, it
prints the exact command to run instead of a bare ImportError.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
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


def candidate_venvs() -> list[Path]:
    from pathlib import Path

    out = []
    if os.environ.get("EPISTEME_VENV"):
        out.append(Path(os.environ["EPISTEME_VENV"]))
    if os.environ.get("CLAUDE_PLUGIN_DATA"):
        out.append(Path(os.environ["CLAUDE_PLUGIN_DATA"]) / "venv")
    out.append(Path(_PLUGIN).parent / ".venv")
    return out


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
            py = venv / "bin" / "python"
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
    collection (a scan allocates hundreds of thousands of small containers and no cycles;
    the collector's passes over them cost ~10 % of a 10k-page run), and ``os._exit`` after
    flushing, so the command's objects are never freed one by one at interpreter exit (tens of
    milliseconds on a large wiki; the OS takes the memory back at once)."""
    import gc

    gc.disable()
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
