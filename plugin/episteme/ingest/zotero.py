"""A Zotero library as a batch: the PDFs of ``storage/*/`` with title, authors, year, DOI, venue
and citation key from ``zotero.sqlite``.

Why a copy: Zotero holds an exclusive lock on ``zotero.sqlite`` while it runs, and a reader must
never risk changing a user's library.  The file (with its ``-wal``/``-journal`` if present) is
copied to a private temp folder and only the copy is opened; the library is never written.

The tables read are Zotero's own (schema of Zotero 5-7): ``items`` (``key`` names the
``storage/<KEY>/`` folder of an attachment), ``itemAttachments`` (``parentItemID``, ``path`` =
``storage:<file name>``), ``itemData`` → ``itemDataValues`` by ``fields`` (or the
``fieldsCombined`` view of newer versions), ``itemCreators`` → ``creators`` ordered by
``orderIndex``, ``deletedItems`` (the trash, skipped).  The citation key is Zotero's
``citationKey`` field when set, else a ``Citation Key: ...`` line of ``extra`` (Better BibTeX
writes one), else the one ``episteme cite`` would make.  A PDF in ``storage/`` that the database
does not know is still ingested, with what the PDF itself says.

**Linked files.**  An attachment can also be a *linked file* (``itemAttachments.linkMode`` 2):
the PDF stays where the user keeps it, and ``path`` is absolute, or ``attachments:<relative>``
against the "Linked Attachment Base Directory" of Zotero's settings
(``extensions.zotero.baseAttachmentPath`` in the profile's ``prefs.js``).  Those are ingested
too, with the same metadata.  The base directory is ``--zotero-base DIR`` when given, else read
from a ``prefs.js`` (the data folder's own, then the Zotero profiles of this user whose
``extensions.zotero.dataDir`` is this data folder -- or, for the default ``~/Zotero``, the
profile that sets none).  A linked file that is not there (a disconnected drive, a base
directory not found) is listed in the summary with its reason; the rest of the batch goes on.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import tempfile
from pathlib import Path

from ..errors import NotFoundError, UsageError

LINK_MODE_LINKED_FILE = 2  # Zotero.Attachments.LINK_MODE_LINKED_FILE
_PREF = re.compile(r'user_pref\(\s*"(extensions\.zotero\.(?:baseAttachmentPath|dataDir))"\s*,'
                   r'\s*("(?:[^"\\]|\\.)*")\s*\)')

VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "conferenceName", "bookTitle",
                "websiteTitle", "university", "publisher")
_CITEKEY_LINE = re.compile(r"^\s*Citation Key:\s*(\S+)\s*$", re.I | re.M)
_SAFE_KEY = re.compile(r"[^A-Za-z0-9._-]+")
#: Zotero item types with a BibTeX entry type of their own (the rest: guessed from the venue)
BIBTEX_TYPES = {"conferencePaper": "inproceedings", "journalArticle": "article"}


def _copy_db(src: Path, dst_dir: Path) -> Path:
    """Copy the database (and a write-ahead log or rollback journal beside it) into ``dst_dir``."""
    dst = dst_dir / "zotero.sqlite"
    shutil.copyfile(src, dst)
    for suffix in ("-wal", "-journal"):
        side = src.with_name(src.name + suffix)
        if side.is_file():
            with contextlib.suppress(OSError):
                shutil.copyfile(side, dst.with_name(dst.name + suffix))
    return dst


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN "
                                       "('table', 'view')")}


def read_zotero_db(db: Path) -> dict[tuple[str, str], dict]:
    """``(attachment key, file name) -> {"title", "authors", "meta"}`` for every stored PDF
    attachment of a (non-deleted) item in the Zotero database at ``db`` (a copy: opened
    read-only all the same)."""
    conn = sqlite3.connect(f"file:{db.as_posix()}?mode=ro", uri=True)
    try:
        tables = _tables(conn)
        missing = {"items", "itemAttachments", "itemData", "itemDataValues"} - tables
        if missing or not ({"fields", "fieldsCombined"} & tables):
            raise UsageError(f"{db.name} is not a Zotero database (no {', '.join(sorted(missing)) or 'fields'} table)")
        fields = "fieldsCombined" if "fieldsCombined" in tables else "fields"
        deleted = "SELECT itemID FROM deletedItems" if "deletedItems" in tables else "SELECT -1"
        rows = conn.execute(
            f"SELECT a.itemID, a.parentItemID, a.path, a.contentType, i.key FROM itemAttachments a "
            f"JOIN items i ON i.itemID = a.itemID WHERE a.path LIKE 'storage:%' "
            f"AND a.itemID NOT IN ({deleted}) "
            f"AND (a.parentItemID IS NULL OR a.parentItemID NOT IN ({deleted}))").fetchall()
        out: dict[tuple[str, str], dict] = {}
        for item_id, parent_id, path, ctype, key in rows:
            name = path.split(":", 1)[1]
            if not (name.lower().endswith(".pdf") or (ctype or "") == "application/pdf"):
                continue
            record = _item_record(conn, fields, tables, parent_id if parent_id else item_id)
            record["meta"]["zotero_key"] = key
            out[(key, name)] = record
        return out
    finally:
        conn.close()


def read_linked_files(db: Path) -> list[dict]:
    """Every linked-file PDF attachment of a (non-deleted) item: ``{"key", "path" (as Zotero
    stored it), "record"}``."""
    conn = sqlite3.connect(f"file:{db.as_posix()}?mode=ro", uri=True)
    try:
        tables = _tables(conn)
        fields = "fieldsCombined" if "fieldsCombined" in tables else "fields"
        deleted = "SELECT itemID FROM deletedItems" if "deletedItems" in tables else "SELECT -1"
        cols = {r[1] for r in conn.execute("PRAGMA table_info(itemAttachments)")}
        if "linkMode" not in cols:
            return []
        rows = conn.execute(
            f"SELECT a.itemID, a.parentItemID, a.path, a.contentType, i.key FROM itemAttachments a "
            f"JOIN items i ON i.itemID = a.itemID WHERE a.linkMode = ? AND a.path IS NOT NULL "
            f"AND a.itemID NOT IN ({deleted}) "
            f"AND (a.parentItemID IS NULL OR a.parentItemID NOT IN ({deleted})) "
            f"ORDER BY a.itemID", (LINK_MODE_LINKED_FILE,)).fetchall()
        out = []
        for item_id, parent_id, path, ctype, key in rows:
            if not (path.lower().endswith(".pdf") or (ctype or "") == "application/pdf"):
                continue
            record = _item_record(conn, fields, tables, parent_id if parent_id else item_id)
            record["meta"]["zotero_key"] = key
            out.append({"key": key, "path": path, "record": record})
        return out
    finally:
        conn.close()


def _read_prefs(path: Path) -> dict[str, str]:
    """The Zotero preferences we use from one ``prefs.js`` (JavaScript string literals, which
    for these values are JSON strings)."""
    import json

    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    out = {}
    for name, literal in _PREF.findall(text):
        with contextlib.suppress(ValueError):
            out[name.rsplit(".", 1)[1]] = json.loads(literal)
    return out


def _profile_prefs() -> list[Path]:
    """``prefs.js`` of this user's Zotero profiles (Linux, macOS, Windows locations)."""
    home = Path.home()
    roots = [home / ".zotero" / "zotero", home / "Library" / "Application Support" / "Zotero"
             / "Profiles"]
    if os.environ.get("APPDATA"):
        roots.append(Path(os.environ["APPDATA"]) / "Zotero" / "Zotero" / "Profiles")
    found = []
    for root in roots:
        with contextlib.suppress(OSError):
            found += sorted(root.glob("*/prefs.js"))
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.normcase(str(a.resolve())) == os.path.normcase(str(b.resolve()))
    except OSError:
        return False


def find_base_dir(zotero_dir: Path) -> tuple[Path | None, str | None]:
    """(the linked attachment base directory, the ``prefs.js`` it came from), or (None, None).
    The data folder's own ``prefs.js`` first, then a profile that points at this data folder
    (``dataDir``; a profile without one uses ``~/Zotero``)."""
    own = zotero_dir / "prefs.js"
    candidates = [own] if own.is_file() else []
    for prefs in _profile_prefs():
        data = _read_prefs(prefs).get("dataDir")
        if _same(Path(data).expanduser(), zotero_dir) if data else _same(Path.home() / "Zotero",
                                                                         zotero_dir):
            candidates.append(prefs)
    for prefs in candidates:
        base = _read_prefs(prefs).get("baseAttachmentPath")
        if base:
            return Path(base).expanduser(), str(prefs)
    return None, None


def resolve_linked(path: str, base: Path | None) -> tuple[Path | None, str | None]:
    """(where a linked file is, or None; why not).  ``attachments:`` paths join ``base`` (their
    separators may be either slash: Zotero stores them portably)."""
    if path.startswith("attachments:"):
        rel = path.split(":", 1)[1]
        if base is None:
            return None, ("relative to Zotero's linked attachment base directory, which is not "
                          "known (give --zotero-base DIR)")
        return base.joinpath(*[p for p in re.split(r"[\\/]", rel) if p]), None
    return Path(path).expanduser(), None


def _item_record(conn: sqlite3.Connection, fields: str, tables: set[str], item_id: int) -> dict:
    kind = None
    if "itemTypes" in tables:
        row = conn.execute("SELECT t.typeName FROM items i JOIN itemTypes t ON t.itemTypeID = "
                           "i.itemTypeID WHERE i.itemID = ?", (item_id,)).fetchone()
        kind = BIBTEX_TYPES.get(row[0]) if row else None
    values = dict(conn.execute(
        f"SELECT f.fieldName, v.value FROM itemData d JOIN {fields} f ON f.fieldID = d.fieldID "
        f"JOIN itemDataValues v ON v.valueID = d.valueID WHERE d.itemID = ?", (item_id,)))
    authors: list[str] = []
    if {"itemCreators", "creators"} <= tables:
        typed = "creatorTypes" in tables
        sql = ("SELECT c.firstName, c.lastName, c.fieldMode"
               + (", t.creatorType" if typed else ", 'author'")
               + " FROM itemCreators ic JOIN creators c ON c.creatorID = ic.creatorID "
               + ("LEFT JOIN creatorTypes t ON t.creatorTypeID = ic.creatorTypeID " if typed else "")
               + "WHERE ic.itemID = ? ORDER BY ic.orderIndex")
        people = conn.execute(sql, (item_id,)).fetchall()
        # authors first; an edited volume with no author is cited by its editors
        chosen = [p for p in people if (p[3] or "author") == "author"] or people
        for first, last, mode, _ in chosen:
            name = (last or "").strip() if mode == 1 else " ".join(
                x.strip() for x in (first, last) if x and x.strip())
            if name:
                authors.append(name)
    meta: dict = {}
    m = re.match(r"\s*(\d{4})", values.get("date") or "")
    if m and m.group(1) != "0000":
        meta["year"] = int(m.group(1))
    if values.get("DOI"):
        meta["doi"] = values["DOI"].strip()
    venue = next((values[f] for f in VENUE_FIELDS if values.get(f)), None)
    if venue:
        meta["venue"] = venue.strip()[:200]
    key = (values.get("citationKey") or "").strip()
    if not key:
        m = _CITEKEY_LINE.search(values.get("extra") or "")
        key = m.group(1) if m else ""
    if not key:
        from ..pdf.meta import cite_key

        key = cite_key({"authors": authors, "title": values.get("title") or "",
                        "meta": {"year": meta.get("year")}})
    meta["citation_key"] = key
    if kind:
        meta["bibtex_type"] = kind
    return {"title": (values.get("title") or "").strip() or None, "authors": authors,
            "meta": meta}


def zotero_library(zotero_dir: str | os.PathLike, base_dir: str | os.PathLike | None = None
                   ) -> dict:
    """What a batch needs to ingest a Zotero data folder: ``files`` (every PDF of
    ``storage/*/`` and every linked-file PDF found), ``metadata`` and ``names`` by ``str(path)``
    (see :func:`episteme.ingest.batch.ingest_batch`), counts for the summary, and
    ``linked_missing``: one ``{"file", "zotero_key", "title", "error"}`` per linked file that is
    not there.  ``base_dir``: the linked attachment base directory (else from ``prefs.js``).

    Stored names: ``<citation key>.pdf`` (``vaswani2017attention.pdf``), so the paper id says
    which paper it is and stays the same across re-runs; a PDF the database does not know keeps
    its file name."""
    root = Path(zotero_dir).expanduser()
    db = root / "zotero.sqlite"
    storage = root / "storage"
    if not db.is_file():
        raise NotFoundError(f"no zotero.sqlite in {root} (give the Zotero data folder: the one "
                            "holding zotero.sqlite and storage/)")
    with tempfile.TemporaryDirectory(prefix="episteme-zotero-") as tmp:
        try:
            copy = _copy_db(db, Path(tmp))
            records = read_zotero_db(copy)
            linked = read_linked_files(copy)
        except sqlite3.DatabaseError as e:
            raise UsageError(f"cannot read {db}: {e}") from e
    files: list[Path] = []
    metadata: dict[str, dict] = {}
    names: dict[str, str] = {}
    unknown = 0
    if storage.is_dir():
        for folder in sorted(p for p in storage.iterdir() if p.is_dir()):
            for pdf in sorted(folder.iterdir()):
                if not (pdf.is_file() and pdf.suffix.lower() == ".pdf"):
                    continue
                files.append(pdf)
                rec = records.get((folder.name, pdf.name))
                if rec is None:
                    unknown += 1
                    continue
                _name(pdf, rec, metadata, names)
    in_storage = len(files)
    if base_dir is not None:
        base, base_from = Path(base_dir).expanduser(), "--zotero-base"
        if not base.is_dir():
            raise NotFoundError(f"--zotero-base {base_dir}: no such folder")
    else:
        base, base_from = find_base_dir(root) if linked else (None, None)
    missing: list[dict] = []
    seen = {os.path.normcase(str(f)) for f in files}
    for att in linked:
        where, why = resolve_linked(att["path"], base)
        if where is not None and not where.is_file():
            why = "linked file not found" + (" (is its drive connected?)" if where.is_absolute()
                                             else "")
        if why:
            missing.append({"file": str(where) if where is not None else att["path"],
                            "zotero_key": att["key"], "title": att["record"]["title"],
                            "error": why})
            continue
        if os.path.normcase(str(where)) in seen:
            continue
        seen.add(os.path.normcase(str(where)))
        files.append(where)
        _name(where, att["record"], metadata, names)
    return {"files": files, "metadata": metadata, "names": names, "folder": str(root),
            "attachments_in_db": len(records) + len(linked), "pdfs_in_storage": in_storage,
            "pdfs_without_record": unknown, "linked_files": len(linked),
            "linked_found": len(linked) - len(missing),
            "linked_base": str(base) if base is not None else None,
            **({"linked_base_from": base_from} if base is not None else {}),
            "linked_missing": missing}


def _name(pdf: Path, rec: dict, metadata: dict, names: dict) -> None:
    metadata[str(pdf)] = rec
    key = _SAFE_KEY.sub("_", rec["meta"]["citation_key"]).strip("._-")
    if key:
        names[str(pdf)] = f"{key}.pdf"
