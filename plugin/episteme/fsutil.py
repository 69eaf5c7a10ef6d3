"""File-system primitives every writer uses: atomic replacement, a per-wiki lock, and path
containment.  Standard library only (lint and graph import this module).

Why: the wiki files are the source of truth, so a crash must never leave a half-written file,
two writers must never interleave, and no name coming from a user, an HTTP request or an LLM
may resolve outside the wiki folder.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
import threading
import time
import unicodedata
from collections.abc import Iterator, Mapping
from pathlib import Path

from .errors import EpistemeError, UsageError, WriteError
from .wiki.files import DATA_DIR


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either the old or the new file, never a
    mix: write a temp file in the same folder, fsync it, then ``os.replace``.  On any error the
    temp file is removed (a full disk must not stay full of our temp files) and the
    ``OSError`` names ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        _set_mode(fd, tmp, path)
        with os.fdopen(fd, "wb") as f:
            write_fault(path)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename in (None, tmp):
            e.filename = str(path)
        raise


def write_new_file(path: str | os.PathLike, data: bytes, *, mode_of: str | os.PathLike) -> None:
    """Write ``data`` to the temp file ``path`` (replacing a leftover of that name), fsynced,
    with the mode of ``mode_of`` -- the file it will be renamed over (a new file: the umask
    default), so a 0600 page stays 0600.  On any error the partial file is removed."""
    path = Path(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        _set_mode(fd, str(path), Path(mode_of))
        with os.fdopen(fd, "wb") as f:
            write_fault(mode_of)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def write_error(e: OSError, what: str, outcome: str = "") -> WriteError:
    """The one-line error for a failed write of ``what``: ``cannot write index.md: no space
    left on device; <outcome>`` (``outcome`` says what the failure left: "nothing was
    written", or what was)."""
    reason = (e.strerror or str(e)).lower() if isinstance(e, OSError) else str(e)
    code = getattr(e, "errno", None)
    hint = (" (this command needs write access to the wiki; read-only commands work without it)"
            if code in (errno.EROFS, errno.EACCES, errno.EPERM) else "")
    return WriteError(f"cannot write {what}: {reason}" + (f"; {outcome}" if outcome else "") + hint,
                      errno=code)


_UMASK: int | None = None


def _default_mode() -> int:
    """What ``open(path, "w")`` would give a new file (0o666 less the umask), read once."""
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return 0o666 & ~_UMASK


def _set_mode(fd: int, tmp: str, path: Path) -> None:
    """Give the temp file the mode of the file it replaces (a new file: the umask default, as
    ``log.md`` gets), not ``mkstemp``'s private 0600."""
    import stat

    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = _default_mode()
    with contextlib.suppress(OSError, NotImplementedError):
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        else:  # Windows: only the read-only bit means anything
            os.chmod(tmp, mode)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """UTF-8 text version of :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def append_text(path: str | os.PathLike, text: str) -> None:
    """Append to an append-only file (``log.md``) with one ``write`` call and fsync."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_fault(path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


_THREAD_LOCKS: dict[str, threading.RLock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def wiki_lock(wiki: str | os.PathLike, timeout: float = 600.0) -> Iterator[None]:
    """Hold the wiki's exclusive writer lock: the one lock every writer of a wiki takes (pages,
    indexes, ``log.md``, ``raw/``, the stores), between processes *and* between threads.

    Two layers: a per-wiki ``RLock`` (threads of one process: the file lock below is held per
    process, so two server threads would otherwise both pass it), then
    ``<wiki>/.episteme/write.lock`` (``flock``, or ``msvcrt.locking`` on Windows) between
    processes.  Re-entrant within one thread (nested writers in one pipeline do not deadlock).
    Waits up to ``timeout`` seconds, then raises a clear error.
    """
    lock_dir = Path(wiki) / DATA_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    key = str(lock_dir.resolve())
    with _THREAD_LOCKS_GUARD:
        rlock = _THREAD_LOCKS.setdefault(key, threading.RLock())
    if not rlock.acquire(timeout=timeout):
        raise EpistemeError(f"another writer in this process holds the write lock of {wiki}")
    try:
        with _process_lock(lock_dir, key, wiki, timeout):
            yield
    finally:
        rlock.release()


@contextlib.contextmanager
def _process_lock(lock_dir: Path, key: str, wiki: str | os.PathLike, timeout: float) -> Iterator[None]:
    """The file half of :func:`wiki_lock` (re-entrant per process: a depth count per wiki)."""
    depth = _HELD.get(key, 0)
    if depth:
        _HELD[key] = depth + 1
        try:
            yield
        finally:
            _HELD[key] -= 1
        return
    fd = os.open(lock_dir / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while not _try_lock(fd):
            if time.monotonic() > deadline:
                raise EpistemeError(
                    f"another episteme process holds the write lock of {wiki} "
                    f"(waited {timeout:.0f} s)"
                ) from None
            time.sleep(0.05)
        _HELD[key] = 1
        try:
            yield
        finally:
            _HELD.pop(key, None)
            _unlock(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, timeout: float = 600.0) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created if missing) between processes, with
    the same portable primitives as :func:`wiki_lock` (``flock`` or ``msvcrt.locking``).  Not
    re-entrant: for short critical sections such as one index refresh."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while not _try_lock(fd):
            if time.monotonic() > deadline:
                raise EpistemeError(f"another episteme process holds {path} (waited {timeout:.0f} s)")
            time.sleep(0.05)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def read_only_reason(path: str | os.PathLike) -> str | None:
    """Why ``path`` (a folder, or the nearest existing parent) cannot be written -- "read-only
    file system" or "permission denied" -- or ``None`` when it can.  Why: some libraries
    (Chroma, SQLite in WAL mode) fail on a read-only wiki with messages that do not say so;
    callers check first and say it plainly, or take a read-only path."""
    p = Path(path)
    while not p.exists() and p.parent != p:
        p = p.parent
    try:
        st = os.statvfs(p) if hasattr(os, "statvfs") else None
    except OSError:
        st = None
    if st is not None and st.f_flag & getattr(os, "ST_RDONLY", 1):
        return "read-only file system"
    if not os.access(p, os.W_OK):
        return "permission denied"
    return None


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock on the open file ``fd`` without waiting; ``False`` when another
    process holds it.  ``fcntl.flock`` where it exists (Linux, macOS, BSD), else
    ``msvcrt.locking`` on the file's first byte (Windows).  The platform module is imported
    here, not at the top, so that importing this module works everywhere."""
    try:
        import fcntl
    except ImportError:
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EDEADLK, errno.EAGAIN):
                return False
            raise
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _unlock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    fcntl.flock(fd, fcntl.LOCK_UN)


_HELD: dict[str, int] = {}


def safe_join(root: str | os.PathLike, relative: str) -> Path:
    """Resolve ``relative`` under ``root`` and refuse anything that would leave it.

    Rejects absolute paths, ``..`` segments, NUL bytes and symlinks that point outside.
    """
    if not relative or "\x00" in relative:
        raise UsageError(f"invalid path: {relative!r}")
    rel = Path(relative)
    if rel.is_absolute() or any(part == ".." for part in rel.parts):
        raise UsageError(f"path escapes the wiki folder: {relative!r}")
    root_resolved = Path(root).resolve()
    target = (root_resolved / rel).resolve()
    if target != root_resolved and root_resolved not in target.parents:
        raise UsageError(f"path escapes the wiki folder: {relative!r}")
    return target


_SLUG_BAD = re.compile(r"[^a-z0-9]+")


def slugify(text: str, max_len: int = 80) -> str:
    """Lowercase ASCII slug (``Multi-Head Attention`` → ``multi-head-attention``)."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_BAD.sub("-", text.lower()).strip("-")
    return slug[:max_len].rstrip("-") or "untitled"


_FILENAME_BAD = re.compile(r"[^A-Za-z0-9._-]+")


def sanitize_filename(name: str, default: str = "paper.pdf") -> str:
    """A safe file name for ``raw/``: base name only, NFKC, unsafe runs → ``_``, no leading dot."""
    name = unicodedata.normalize("NFKC", name.replace("\\", "/")).split("/")[-1]
    name = _FILENAME_BAD.sub("_", name).strip("._")
    if not name:
        return default
    return name[:180]


_CRASH_HITS: dict[str, int] = {}


def crash_point(name: str) -> None:
    """Fault injection for the crash tests: when ``EPISTEME_CRASH_AT`` is ``name`` (or
    ``name#N``: the N-th time this point is reached), the process kills itself on the spot
    (SIGKILL: no cleanup, no ``finally``), as a power cut or ``kill -9`` would.  A no-op
    otherwise (one dictionary lookup)."""
    want = os.environ.get("EPISTEME_CRASH_AT")
    if not want or not want.startswith(name):
        return
    point, _, nth = want.partition("#")
    if point != name:
        return
    _CRASH_HITS[name] = _CRASH_HITS.get(name, 0) + 1
    if _CRASH_HITS[name] == int(nth or 1):
        import signal

        kill = getattr(signal, "SIGKILL", None)
        if kill is not None:
            os.kill(os.getpid(), kill)
        os._exit(137)



# ------------------------------------------------------------------------------- journals
#
# Every writer that changes more than one file makes the change recoverable the same way: a
# small JSON record, written atomically under ``.episteme/`` *before* the first file changes,
# says what is in progress; the writer deletes it when done.  A crash leaves it behind, and the
# next writer to take :func:`wiki_lock` replays it (finishes or undoes the change).  The three
# journals and who replays them are listed in docs/architecture.md ("Writers").


def write_journal(folder: str | os.PathLike, name: str, record: Mapping[str, object]) -> None:
    """Write the journal ``folder/name`` (one JSON object and a newline, atomically): the
    change it describes is now in progress.  Call under :func:`wiki_lock`."""
    atomic_write_text(Path(folder) / name, json.dumps(dict(record)) + "\n")


def read_journal(folder: str | os.PathLike, name: str) -> dict | str | None:
    """The journal ``folder/name``: ``None`` when there is none (the last change finished), the
    JSON object it holds, or its raw text when that is not a JSON object (the caller decides
    what an unreadable journal means: it cannot be torn, the write is atomic)."""
    try:
        with open(Path(folder) / name, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return data if isinstance(data, dict) else text


def clear_journal(folder: str | os.PathLike, name: str) -> None:
    """Delete the journal ``folder/name`` (the change is complete); no error when absent."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(Path(folder) / name)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (on Windows always assumed: ``os.kill`` would end it).
    Why: temp files carry their writer's pid, and only a dead writer's are anyone's to delete."""
    if pid == os.getpid() or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


_FAULT = {"spec": None, "writes": 0}


def write_fault(path: str | os.PathLike) -> None:
    """Fault injection for the full-disk tests: with ``EPISTEME_FAIL_WRITES=enospc:N`` (or
    ``eacces:N``) every file write of this process after the first ``N`` fails as on a full
    disk (or without permission), inside the write primitives above, so the cleanup paths run
    as they would.  A no-op otherwise (one environment lookup)."""
    spec = os.environ.get("EPISTEME_FAIL_WRITES")
    if spec != _FAULT["spec"]:
        _FAULT["spec"], _FAULT["writes"] = spec, 0
    if not spec:
        return
    kind, _, after = spec.partition(":")
    _FAULT["writes"] += 1
    if _FAULT["writes"] > int(after or 0):
        code = errno.EACCES if kind == "eacces" else errno.ENOSPC
        raise OSError(code, os.strerror(code), str(path))
