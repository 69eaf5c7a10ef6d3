"""The light layers (graph, lint, --fix, wiki writes) without ``fcntl`` and ``os.fork``, as on
Windows: the same answers, byte for byte, as on Linux, and the lock still excludes.

The stand-in (``tests/helpers/no_fork_no_fcntl/sitecustomize.py``) hides ``fcntl`` and removes
``os.fork`` in a fresh interpreter; ``make test-portable`` runs the light test files under it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lint_fixture import build_broken_wiki

REPO = Path(__file__).resolve().parent.parent
HELPERS = Path(__file__).resolve().parent / "helpers"
STANDIN = HELPERS / "no_fork_no_fcntl"


def _env(windows_like: bool) -> dict[str, str]:
    path = [str(REPO / "plugin"), str(HELPERS.parent)]
    if windows_like:
        path.insert(0, str(STANDIN))
    env = {k: v for k, v in os.environ.items() if k not in ("WIKI_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def _digest(wiki: Path, work: Path, windows_like: bool) -> dict:
    work.mkdir()
    r = subprocess.run([sys.executable, str(HELPERS / "light_digest.py"), str(wiki), str(work)],
                       capture_output=True, text=True, env=_env(windows_like), timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_light_layers_answer_the_same_without_fork_and_fcntl(tmp_path: Path):
    wiki = tmp_path / "src"
    build_broken_wiki(wiki)
    linux = _digest(wiki, tmp_path / "a", windows_like=False)
    windows = _digest(wiki, tmp_path / "b", windows_like=True)
    assert linux.pop("platform") == {"fcntl_hidden": False, "fork": True}
    assert windows.pop("platform") == {"fcntl_hidden": True, "fork": False}
    assert linux["lint"] and linux["fixes"] and linux["write"]["section"]  # everything ran
    assert windows == linux


def test_the_lock_excludes_another_process_without_fcntl(tmp_path: Path):
    """Two processes on the msvcrt path: the second waits, then gives up with the clear error;
    once the first is done the lock is free."""
    try_lock = (
        "import sys\n"
        "from episteme.errors import EpistemeError\n"
        "from episteme.fsutil import wiki_lock\n"
        "try:\n"
        "    with wiki_lock(sys.argv[1], timeout=0.3):\n"
        "        print('locked')\n"
        "except EpistemeError as e:\n"
        "    print('refused' if 'holds the write lock' in str(e) else e)\n"
    )
    hold = (
        "import sys, time\n"
        "from episteme.fsutil import wiki_lock\n"
        "with wiki_lock(sys.argv[1]):\n"
        "    print('held', flush=True)\n"
        "    sys.stdin.readline()\n"
    )
    wiki = tmp_path / "w"
    wiki.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", hold, str(wiki)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=_env(True))
    try:
        assert holder.stdout.readline().strip() == "held"
        r = subprocess.run([sys.executable, "-c", try_lock, str(wiki)], capture_output=True, text=True,
                           env=_env(True), timeout=60)
        assert r.stdout.strip() == "refused", r.stderr
    finally:
        holder.communicate("done\n", timeout=60)
    r = subprocess.run([sys.executable, "-c", try_lock, str(wiki)], capture_output=True, text=True, env=_env(True),
                       timeout=60)
    assert r.stdout.strip() == "locked", r.stderr
