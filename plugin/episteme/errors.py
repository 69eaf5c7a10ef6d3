"""Errors that carry an exit code and a one-line message for the CLI and the HTTP API.

Every user-facing failure is an :class:`EpistemeError` so that scripts can print one line on
stderr (and ``{"error": ...}`` on stdout in JSON mode) instead of a traceback.
"""

from __future__ import annotations


class EpistemeError(Exception):
    """A failure the user can act on.  ``exit_code`` follows the CLI convention:
    1 = the request could not be satisfied (unknown page, bad PDF, ...), 2 = usage error."""

    exit_code = 1

    def __init__(self, message: str, *, exit_code: int | None = None, details: dict | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
        self.details = details or {}

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class UsageError(EpistemeError):
    """Malformed arguments or query syntax (exit 2)."""

    exit_code = 2


class NotFoundError(EpistemeError):
    """A named page, section or paper does not exist (exit 1)."""


class MissingDependencyError(EpistemeError):
    """An optional dependency is not installed; the message says exactly what to run."""

    exit_code = 3


class WriteError(EpistemeError):
    """A file could not be written (a full disk, permissions, a read-only file system): the
    message names the file and says what state the write left (``errno`` keeps the cause)."""

    def __init__(self, message: str, *, errno: int | None = None, details: dict | None = None):
        super().__init__(message, details=details)
        self.errno = errno
