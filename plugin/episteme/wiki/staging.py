"""Several wiki files replaced as one: temp files beside their targets, a journal listing them
(the commit point), then the renames.  What ``write_section --batch`` commits through.

Why: a batch that changes five pages and both indexes must be seen whole or not at all.  A
crash before the journal leaves only temp files (removed by the next write); a crash during
the renames leaves the journal, and the next writer to open the wiki
(:class:`~episteme.wiki.edit.WikiWriter`, through :func:`recover`) finishes them.  The journal
is one of the writers' journals (:func:`episteme.fsutil.write_journal`), written and replayed
under :func:`episteme.fsutil.wiki_lock`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..fsutil import (
    clear_journal,
    crash_point,
    read_journal,
    write_error,
    write_journal,
    write_new_file,
)
from .files import DATA_DIR

JOURNAL = "batch-journal.json"


def commit_files(wiki: str | os.PathLike, files: Mapping[str, str]) -> None:
    """Replace every ``files`` entry (path relative to ``wiki`` -> new text) as one change:
    each text to a synced temp file beside its target (with the target's mode), the journal,
    then the renames.  Caller holds the wiki lock.

    Anything failing before the journal (a full disk, a read-only page) removes the temp files
    written so far and raises a :class:`~episteme.errors.WriteError` naming the file: nothing
    changed."""
    wiki = Path(wiki)
    for rel in files:
        target = wiki / rel
        if target.exists() and not os.access(target, os.W_OK):
            raise write_error(PermissionError(13, "the file is read-only (permission denied)"), rel,
                              "nothing was written")
    moves: list[dict[str, str]] = []
    try:
        for i, (rel, text) in enumerate(files.items()):
            target = wiki / rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".{target.name}.batch{os.getpid()}-{i}.tmp")
                write_new_file(tmp, text.encode("utf-8"), mode_of=target)
            except OSError as e:
                raise write_error(e, rel, "nothing was written") from e
            moves.append({"target": rel, "temp": tmp.relative_to(wiki).as_posix()})
        crash_point("batch:temps-written")
        try:
            write_journal(wiki / DATA_DIR, JOURNAL, {"moves": moves})
        except OSError as e:
            raise write_error(e, f"{DATA_DIR}/{JOURNAL}", "nothing was written") from e
    except BaseException:
        for m in moves:
            with contextlib.suppress(OSError):
                os.unlink(wiki / m["temp"])
        raise
    _apply_moves(wiki, moves)


def _apply_moves(wiki: Path, moves: Iterable[dict[str, str]]) -> None:
    for m in moves:
        tmp = wiki / m["temp"]
        if tmp.exists():
            os.replace(tmp, wiki / m["target"])
    clear_journal(wiki / DATA_DIR, JOURNAL)


def recover(wiki: str | os.PathLike) -> bool:
    """Finish a batch a crash interrupted after its commit point (call under the write lock).
    Returns True when there was one.  Temp files of a batch that never reached its journal are
    left to the writer's stale-temp cleanup (they match ``.<name>.*.tmp``)."""
    wiki = Path(wiki)
    data = read_journal(wiki / DATA_DIR, JOURNAL)
    if data is None:
        return False
    if not isinstance(data, dict):  # a torn journal cannot exist (atomic write); be safe anyway
        clear_journal(wiki / DATA_DIR, JOURNAL)
        return False
    moves = [m for m in data.get("moves", [])
             if isinstance(m, dict) and _inside(wiki, m.get("target")) and _inside(wiki, m.get("temp"))]
    _apply_moves(wiki, moves)
    return True


def _inside(wiki: Path, rel: Any) -> bool:
    return not (not isinstance(rel, str) or not rel or rel.startswith(("/", "\\")) or ".." in Path(rel).parts)
