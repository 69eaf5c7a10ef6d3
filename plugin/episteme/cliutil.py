"""Shared CLI plumbing: JSON output, one-line errors, exit codes.  Standard library only."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from .errors import EpistemeError


def json_default(obj: Any) -> Any:
    """Serialise dates, paths and sets the way a reader expects (ISO dates, strings, lists)."""
    import datetime as _dt
    from pathlib import PurePath

    if isinstance(obj, (_dt.date, _dt.datetime, _dt.time)):
        return obj.isoformat()
    if isinstance(obj, PurePath):
        return obj.as_posix()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


def print_json(data: Any, stream=None, *, records: bool = False) -> None:
    """``data`` as indented JSON.  ``records``: a top-level object whose lists of objects are
    written one object per line (long reports: as readable and greppable, and ~5x faster,
    since only unindented JSON is encoded in C)."""
    stream = stream or sys.stdout
    stream.write(dumps_records(data) if records and isinstance(data, dict) else
                 json.dumps(data, ensure_ascii=False, indent=2, default=json_default))
    stream.write("\n")
    stream.flush()


def write_text(text: str, stream=None) -> None:
    """The one way commands print human-readable text: through :func:`sanitize_terminal`, so
    paper text, page text and file names (all untrusted) never reach a terminal as control
    sequences.  (JSON output needs nothing: ``json.dumps`` escapes every control character.)"""
    stream = stream or sys.stdout
    stream.write(sanitize_terminal(text))
    stream.flush()


def dumps_records(data: dict[str, Any]) -> str:
    """``json.dumps(data, indent=2)`` except that a top-level value that is a list of objects
    has one compact object per line.  Same data, valid JSON.  A list item may also be any
    object with a ``to_json(encode)`` method that writes itself (one compact object)."""
    def dump(v: Any, indent: int | None = None) -> str:
        return json.dumps(v, ensure_ascii=False, indent=indent, default=json_default)

    one = json.JSONEncoder(ensure_ascii=False, default=json_default).encode  # (one encoder for every record)

    def record(x: Any) -> str:
        return one(x) if isinstance(x, dict) else x.to_json(one)

    parts = []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(x, dict) or hasattr(x, "to_json") for x in value):
            body = "[\n    " + ",\n    ".join(map(record, value)) + "\n  ]"
        else:
            body = dump(value, 2).replace("\n", "\n  ")
        parts.append(f"  {dump(key)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}" if parts else "{}"


def format_is_json(argv: list[str], *, default: bool) -> bool:
    """Whether ``argv`` asks for ``--format json`` (``default`` when it names no format): read
    from the raw arguments, so that even an error in parsing them is reported in the format
    the caller asked for."""
    for i, a in enumerate(argv):
        if a == "--format" and i + 1 < len(argv):
            return argv[i + 1] == "json"
        if a.startswith("--format="):
            return a.split("=", 1)[1] == "json"
    return default


def date_arg(value: str | None, flag: str):
    """``--today``-style ``YYYY-MM-DD`` option as a ``datetime.date`` (``None`` when not
    given); anything else is a usage error naming ``flag``."""
    if not value:
        return None
    import datetime

    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        from .errors import UsageError

        raise UsageError(f"{flag} must be YYYY-MM-DD, got {value!r}") from None


def prog_name(command: str, script: str) -> str:
    """``episteme <command>`` when run through the console command, else the script's name, so
    usage lines and errors name what the user actually typed."""
    import os

    return f"episteme {command}" if os.path.basename(sys.argv[0]) == "episteme" else script


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises a usage error (exit 2) instead of printing usage and exiting, so the
    error goes through the same one-line / JSON reporting as every other failure."""

    def error(self, message: str):  # type: ignore[override]
        from .errors import UsageError

        raise UsageError(f"{self.prog}: {message}")


def run_main(body: Callable[[], int | None], *, json_errors: Callable[[], bool] = lambda: True) -> int:
    """Run a command body; turn :class:`EpistemeError` into one stderr line (+ JSON on stdout
    when ``json_errors()``) and the error's exit code.  Ctrl-C exits 130 without a traceback."""
    try:
        rc = body()
        return 0 if rc is None else rc
    except EpistemeError as e:
        return _report(e.message, json_errors, e.exit_code, details=e.details)
    except BrokenPipeError:  # (an OSError: caught before the clause below re-raises it)
        return 0
    except PermissionError as e:  # a read-only wiki (or store): one line, not a traceback
        return _report(f"cannot write {e.filename or 'a file'}: permission denied (this command "
                       "needs write access to the wiki; read-only commands work without it)",
                       json_errors)
    except OSError as e:
        import errno

        if e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):  # a full disk
            return _report(f"cannot write {e.filename or 'a file'}: {(e.strerror or str(e)).lower()} "
                           "(free some space and run the command again)", json_errors)
        if e.errno != errno.EROFS:
            raise
        return _report(f"cannot write {e.filename or 'a file'}: read-only file system (this "
                       "command needs write access to the wiki; read-only commands work without "
                       "it)", json_errors)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _report(message: str, json_errors: Callable[[], bool], code: int = 1, *, details: Any = None) -> int:
    """One stderr line, made safe for a terminal (+ ``{"error", "details"}`` on stdout when
    JSON is wanted: JSON escapes control characters itself); returns ``code``."""
    print(f"error: {sanitize_terminal(message)}", file=sys.stderr)
    try:
        want_json = json_errors()
    except Exception:
        want_json = False
    if want_json:
        print_json({"error": message, **({"details": details} if details else {})})
    return code


_TERMINAL_BAD = None
_CONTROL_CHAR = None


def sanitize_terminal(text: str) -> str:
    """``text`` without terminal control sequences: ESC (and the CSI/OSC sequence it starts),
    BEL and the other C0/C1 controls except tab and newline.  Why: PDF text is untrusted and
    must never move the cursor, retitle the window or ring the bell of whoever prints it."""
    global _TERMINAL_BAD, _CONTROL_CHAR
    if _TERMINAL_BAD is None:
        import re

        _TERMINAL_BAD = re.compile(
            r"\x1b\[[0-?]*[ -/]*[@-~]"          # CSI ... final byte
            r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL / ST
            r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # any other control (ESC, BEL, C1...)
        # every match above starts with one of these characters (ESC is among them); a
        # one-character class is searched several times faster than the alternation, and
        # most text (a lint report of thousands of lines) holds none
        _CONTROL_CHAR = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
    if _CONTROL_CHAR.search(text) is None:
        return text
    return _TERMINAL_BAD.sub("", text)
