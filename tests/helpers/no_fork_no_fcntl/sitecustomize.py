"""A stand-in for Windows on Linux: ``fcntl`` cannot be imported and ``os.fork`` is gone.

Put this folder first on ``PYTHONPATH``.  ``msvcrt.locking`` (what episteme's lock uses where
there is no ``fcntl``) is provided with the same byte-range semantics, built on the real
``fcntl.lockf`` taken before it is hidden, so the Windows code path of the lock really runs
and really excludes other processes.
"""

import errno
import fcntl as _real_fcntl
import os
import subprocess  # noqa: F401 - decides it is not on Windows before msvcrt appears below
import sys
import types

for _name in ("fork", "forkpty", "register_at_fork"):
    if hasattr(os, _name):
        delattr(os, _name)
sys.modules["fcntl"] = None  # "import fcntl" now raises ImportError

msvcrt = types.ModuleType("msvcrt")
msvcrt.LK_UNLCK, msvcrt.LK_LOCK, msvcrt.LK_NBLCK, msvcrt.LK_RLCK, msvcrt.LK_NBRLCK = 0, 1, 2, 3, 4


def _locking(fd: int, mode: int, nbytes: int) -> None:
    pos = os.lseek(fd, 0, os.SEEK_CUR)
    if mode == msvcrt.LK_UNLCK:
        _real_fcntl.lockf(fd, _real_fcntl.LOCK_UN, nbytes, pos)
        return
    try:
        _real_fcntl.lockf(fd, _real_fcntl.LOCK_EX | _real_fcntl.LOCK_NB, nbytes, pos)
    except OSError:
        raise OSError(errno.EACCES, "Permission denied") from None  # what msvcrt raises


msvcrt.locking = _locking
sys.modules["msvcrt"] = msvcrt
os.environ["EPISTEME_NO_FORK_NO_FCNTL"] = "1"
