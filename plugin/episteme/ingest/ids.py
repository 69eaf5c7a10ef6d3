"""Paper ids and the bytes they are made from: the stored file name (= paper id) for a name a
user gave, the PDF read with its size limit, its hash.

Why its own module: a single ingest, a batch and the server all name papers and read PDFs the
same way; distinct names must never share an id and the same name must always give the same
one, so the rule lives once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from pathlib import Path

from ..errors import EpistemeError, NotFoundError, UsageError
from ..fsutil import sanitize_filename

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.pdf$", re.IGNORECASE)
_HASHED_NAME = re.compile(r"-[0-9a-f]{10}\.pdf$", re.IGNORECASE)
_NAME_MAX = 180


def _transliterate(text: str) -> str:
    """A readable ASCII form of ``text`` (``注意力`` → ``ZhuYiLi``, ``Résumé`` → ``Resume``):
    ``anyascii`` when installed, else NFKD with the accents dropped."""
    try:
        from anyascii import anyascii
    except ImportError:  # the stem then loses what NFKD cannot fold; the hash keeps it unique
        import unicodedata

        return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return anyascii(text)


def base_name(name: str) -> str:
    """The file name part of what the user gave (``/`` and ``\\`` both separate), NFC."""
    import unicodedata

    return unicodedata.normalize("NFC", str(name).replace("\\", "/")).split("/")[-1]


def paper_id_for(name: str) -> str:
    """The stored file name (= paper id) for the name a user gave (a path or an upload name).

    Why this shape: distinct names must never share an id (the second ingest would silently
    replace the first paper, and its wiki sections would trace to the wrong PDF), and the same
    name must always give the same id (so re-ingesting a file is ``unchanged`` / ``replaced``).

    - A name that is already safe (``[A-Za-z0-9._-]``, ends in ``.pdf``, not too long) is kept
      as it is: ``attention_1706.03762v5.pdf``.
    - Any other name is transliterated to a readable ASCII stem and gets ``-`` + the first 10
      hex digits of the SHA-256 of the name as given: ``注意力.pdf`` → ``ZhuYiLi-<hash>.pdf``,
      ``../evil name.pdf`` → ``evil_name-<hash>.pdf``.  Kept names never end in such a suffix
      (a safe name that does is hashed too), so the two forms cannot meet.
    """
    given = base_name(name)
    if (_SAFE_NAME.match(given) and len(given) <= _NAME_MAX
            and not _HASHED_NAME.search(given) and ".." not in given):
        return given
    digest = hashlib.sha256(given.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    stem = given[:-4] if given.lower().endswith(".pdf") else given
    stem = sanitize_filename(_transliterate(stem), default="")
    stem = stem[:100].rstrip("._-") or "paper"
    return f"{stem}-{digest}.pdf"


def legacy_paper_id(name: str) -> str:
    """The id earlier versions gave ``name`` (lossy; distinct names could meet): looked up only
    so that re-ingesting an old wiki's paper with the same bytes stays ``unchanged``."""
    pid = sanitize_filename(name)
    return pid if pid.lower().endswith(".pdf") else f"{pid}.pdf"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()



def _too_large(size: int, max_bytes: int):
    from ..pdf.split import PdfError

    return PdfError("too_large", f"the file is {size} bytes, over the limit of {max_bytes} "
                    "bytes (EPISTEME_MAX_PDF_BYTES)")


def _read_limited(f, max_bytes: int) -> bytes:
    """Read a stream in chunks, stopping as soon as it passes ``max_bytes``."""
    chunks, size = [], 0
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if max_bytes and size > max_bytes:
            raise _too_large(size, max_bytes)
        chunks.append(chunk)


def read_pdf(pdf_path: str | os.PathLike, max_bytes: int) -> bytes:
    """The PDF's bytes: ``-`` streams standard input (the limit applies while reading); any
    other path must be a regular file (a device such as ``/dev/zero``, a FIFO or a socket is
    refused before a byte is read: reading one never ends or never returns)."""
    import stat

    from ..pdf.split import check_pdf_bytes

    if str(pdf_path) == "-":
        data = _read_limited(sys.stdin.buffer, max_bytes)
        check_pdf_bytes(data, max_bytes)
        return data
    path = Path(pdf_path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise NotFoundError(f"no such file: {pdf_path}") from None
    except OSError as e:
        raise EpistemeError(f"cannot read {pdf_path}: {e.strerror or e}") from e
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{pdf_path} is a folder, not a PDF")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{pdf_path} is not a regular file (a device, FIFO or socket); "
                         "give a PDF file, or `-` to read one from standard input")
    if max_bytes and st.st_size > max_bytes:
        raise _too_large(st.st_size, max_bytes)  # refuse before reading a huge file
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # swapped since the stat
                raise UsageError(f"{pdf_path} is not a regular file")
            data = _read_limited(f, max_bytes)
    except OSError as e:
        raise EpistemeError(f"cannot read {pdf_path}: {e.strerror or e}") from e
    check_pdf_bytes(data, max_bytes)
    return data



def _taken_ids(settings, store) -> dict[str, str]:
    """Ids in use, keyed by their lower-case form: the papers in SQLite and the files in raw/
    (macOS and Windows file systems do not tell ``Paper.pdf`` from ``paper.pdf``)."""
    out: dict[str, str] = {}
    if store is not None:
        for pid in store.paper_ids():
            out[pid.lower()] = pid
    with contextlib.suppress(OSError):
        for f in os.listdir(settings.raw_dir):
            if not f.startswith("."):
                out.setdefault(f.lower(), f)
    return out


def choose_id(settings, given: str, store) -> str:
    """:func:`paper_id_for`, except that an id differing only in letter case from one in use
    takes the hashed form (two names must not share one file on a case-insensitive disk)."""
    pid = paper_id_for(given)
    other = _taken_ids(settings, store).get(pid.lower())
    if other is not None and other != pid:
        digest = hashlib.sha256(base_name(given).encode("utf-8", "surrogatepass")).hexdigest()[:10]
        pid = f"{pid[:-4][:100]}-{digest}.pdf"
    return pid
