"""The deterministic half of ingest: a PDF into ``raw/``, its sections and passages into SQLite,
passage vectors into Chroma -- all or nothing.  Also ``remove`` and ``rebuild``.

Why the order below: every slow or fallible step that writes nothing (read, validate, split,
embed) runs first, outside the wiki lock, on a private temp copy.  Only then, under
:func:`episteme.fsutil.wiki_lock`, the three stores change together:

1. SQLite: one transaction replaces the paper's rows (not yet committed);
2. Chroma: the paper's old vectors are saved, deleted, and the new ones added;
3. raw/: the old file (if any) is moved aside, the temp copy renamed into place;
4. SQLite commit.

Any exception in 1-4 rolls SQLite back, puts the saved vectors back and restores ``raw/``, so
``raw/``, SQLite and Chroma are exactly as before.  The wiki writer (a later step) hooks in
after :func:`ingest_paper` returns, using the JSON it returns.

Why one module: ingest, remove, rebuild and the crash recovery (journal replay, temp clean-up)
must all follow the one write order above; split apart, a step could be added to one path and
not to its recovery.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import EpistemeError, NotFoundError, UsageError
from ..fsutil import crash_point, sanitize_filename, wiki_lock
from ..paper import PaperSection

PASSAGE_MAX_TOKENS = 200  # well under the model's 256-word-piece window (specials included)
NOT_EMBEDDED_KINDS = frozenset({"references"})  # kept in SQLite, never traced to
# sections holding one table/figure/algorithm/footnote each (store.OBJECT_KINDS)
OBJECT_KINDS = frozenset({"table", "figure", "algorithm", "footnote"})


_THREAD_LOCKS: dict[str, threading.RLock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _locked(settings):
    """The wiki's writer lock for this process *and* its threads.

    ``fsutil.wiki_lock`` is re-entrant per process (so nested writers do not deadlock), which
    means two threads of one server would both get it; a per-wiki RLock serialises them."""
    key = str(Path(settings.wiki).resolve())
    with _THREAD_LOCKS_GUARD:
        lock = _THREAD_LOCKS.setdefault(key, threading.RLock())
    with lock, wiki_lock(settings.wiki):
        yield


def _warm_chroma() -> None:
    """Import chromadb (~1-3 s of Python) on a side thread while the PDF is split and embedded;
    onnxruntime releases the GIL, so the two overlap."""
    with contextlib.suppress(Exception):
        from ..stores.vectors import _chromadb

        _chromadb()


@dataclass
class Prepared:
    """A split + embedded paper, ready to be written."""

    paper: object  # store.PaperRow
    sections: list  # list[paper.PaperSection], with ids and passages
    ids: list[str]
    embeddings: object  # np.ndarray
    metadatas: list[dict]
    documents: list[str]
    split_warnings: list[str]
    # sentence-vector rows (episteme.ingest.sentences), embedded with the split, outside the
    # lock; None = none stored (the answerer embeds such a paper's sentences when it needs them)
    sentence_rows: list | None = None


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


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


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


def _read_pdf(pdf_path: str | os.PathLike, max_bytes: int) -> bytes:
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


def _tmp_dir(settings) -> Path:
    d = settings.data_dir / "tmp"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _prepare(settings, paper_id: str, tmp_pdf: Path, sha: str, embedder, *, use_outline: bool,
             progress: bool, on_split=None, check=None) -> Prepared:
    """Split + chunk + embed (no store touched)."""
    res = split_paper(tmp_pdf, use_outline=use_outline, max_pages=settings.max_pages,
                      max_bytes=settings.max_pdf_bytes)
    prepared = prepare_split(paper_id, res, sha, embedder, on_split=on_split)
    if check is not None:
        check()
    prepared.embeddings = embedder.encode(prepared.documents, batch_size=32, progress=progress)
    return prepared


def split_paper(pdf: Path, *, use_outline: bool, max_pages, max_bytes):
    """The PDF work of an ingest (:func:`episteme.pdf.split.split_pdf`), the part a batch runs in
    worker processes: it needs no store and no model, and its result pickles."""
    from ..pdf.split import split_pdf

    return split_pdf(pdf, use_outline=use_outline, max_pages=max_pages, max_bytes=max_bytes)


def prepare_split(paper_id: str, res, sha: str, embedder, *, on_split=None) -> Prepared:
    """A split paper as store rows and passages, the passages not yet embedded (``embeddings`` is
    ``None``; its sentence vectors are, see :mod:`episteme.ingest.sentences`):
    a batch embeds the passages of several papers in one call, then commits each paper."""
    from ..pdf.passages import make_passages
    from ..stores.sqlite import PaperRow, PassageRow, section_id_for

    taken: set[str] = set()
    sections: list[PaperSection] = []
    for i, s in enumerate(res.sections):
        # the splitter's section, given its store identity (id, ord; unnumbered = None)
        s.title = s.title or ("Front matter" if s.kind == "front" else "Untitled")
        s.number = s.number or None
        s.id, s.ord = section_id_for(paper_id, s.number, s.title, taken), i
        s.level, s.page_start, s.page_end = int(s.level), int(s.page_start), int(s.page_end)
        if s.kind not in NOT_EMBEDDED_KINDS and s.text.strip():
            for j, p in enumerate(make_passages(s, embedder.count_tokens,
                                                max_tokens=PASSAGE_MAX_TOKENS)):
                s.passages.append(PassageRow(f"{s.id}~{j}", j, p.text, int(p.page),
                                             int(p.char_start), int(p.char_end),
                                             s.boxes_for(p.char_start, p.char_end)))
        sections.append(s)
    objects = _object_sections(paper_id, res, sections, taken, embedder)
    ids, docs, metas = [], [], []
    for s in sections:
        for p in s.passages:
            ids.append(p.id)
            docs.append(p.text)
            metas.append({"paper": paper_id, "section_id": s.id, "page": p.page,
                          "ord": p.ord, "kind": s.kind, "char_start": p.char_start,
                          "char_end": p.char_end})
    if not ids:
        raise EpistemeError(f"{paper_id}: no passages to embed (the text layer is empty?)")
    if on_split is not None:  # passages per section, in the order they are embedded (progress)
        # one entry per section the JSON lists; the objects' passages (embedded last) count
        # with the last section, so sections_total == sections_indexed and the sum is exact
        counts = [len(s.passages) for s in sections if s.kind not in OBJECT_KINDS]
        extra = sum(len(s.passages) for s in sections if s.kind in OBJECT_KINDS)
        if counts:
            counts[-1] += extra
        on_split(counts)
    paper = PaperRow(id=paper_id, file=f"raw/{paper_id}", sha256=sha, title=res.title or None,
                     authors=list(res.authors or []), pages=int(res.pages), ingested_at=_now(),
                     used_outline=bool(res.used_outline), warnings=list(res.warnings),
                     embedding_model=embedder.name, meta=dict(getattr(res, "meta", {}) or {}),
                     objects=objects)
    from .sentences import sentence_rows

    return Prepared(paper, sections, ids, None, metas, docs, list(res.warnings),
                     sentence_rows(paper_id, sections, embedder))


def _object_sections(paper_id: str, res, sections: list, taken: set[str], embedder) -> list:
    """Tables, figures, algorithms and footnotes become sections of their own kind (after the
    paper's sections), so their passages are embedded and a claim about a table value traces
    to "Table 4, p. 8" rather than to whatever prose the caption interrupted."""
    from ..pdf.passages import make_passages
    from ..stores.sqlite import PassageRow, section_id_for

    out = []
    for obj in res.objects:
        text = obj.caption if obj.kind == "footnote" else "\n".join(
            t for t in (obj.caption, obj.text) if t)
        if not text.strip():
            continue
        sid = section_id_for(paper_id, None, obj.label, taken)
        row = PaperSection(None, obj.label, 9, obj.kind, obj.page, obj.page, text,
                           [(0, obj.page)], id=sid, ord=len(sections))
        for j, p in enumerate(make_passages(row, embedder.count_tokens,
                                            max_tokens=PASSAGE_MAX_TOKENS)):
            box = [round(v, 1) for v in obj.bbox]  # the object's own box: caption and body
            row.passages.append(PassageRow(f"{sid}~{j}", j, p.text, int(p.page),
                                           int(p.char_start), int(p.char_end),
                                           [{"page": obj.page, "bbox": box, "start": 0,
                                             "end": len(p.text)}] if box[2] > box[0] else []))
        sections.append(row)
        out.append({**obj.as_dict(), "id": sid})
    return out


def _section_json(sections: list[dict], passage_counts: dict[str, int]) -> list[dict]:
    return [
        {
            "section_id": s["section_id"],
            "number": s["number"],
            "title": s["title"],
            "level": s["level"],
            "kind": s["kind"],
            "page_start": s["page_start"],
            "page_end": s["page_end"],
            "chars": len(s["section_text"]),
            "passages": passage_counts.get(s["section_id"], 0),
        }
        for s in sections
        if s["kind"] not in OBJECT_KINDS
    ]


def paper_json(store, paper_id: str, status: str) -> dict:
    """The JSON ingest prints, read back from SQLite (so unchanged == freshly ingested)."""
    paper = store.paper(paper_id)
    if paper is None:
        raise NotFoundError(f"paper {paper_id!r} is not ingested")
    counts: dict[str, int] = {}
    for (sid, n) in store.conn.execute(
        "SELECT section_id, count(*) FROM passages WHERE paper_id = ? GROUP BY section_id",
        (paper_id,),
    ):
        counts[sid] = int(n)
    sections = _section_json(store.sections(paper_id), counts)
    return {
        "status": status,
        "paper": paper_id,
        "file": paper["file"],
        "sha256": paper["sha256"],
        "title": paper["title"],
        "authors": paper["authors"],
        "pages": paper["pages"],
        "used_outline": paper["used_outline"],
        "ingested_at": paper["ingested_at"],
        "embedding_model": paper["embedding_model"],
        "sections_indexed": len(sections),
        "passages": sum(counts.values()),
        "sections": sections,
        "objects": [{**{k: o[k] for k in ("id", "kind", "label", "page", "section")},
                     "passages": counts.get(o["id"], 0)} for o in store.objects(paper_id)],
        **({"meta": paper["meta"]} if paper.get("meta") else {}),
        **({"warnings": paper["warnings"]} if paper["warnings"] else {}),
    }


def _is_unchanged(settings, paper_id: str, sha: str, *, store=None) -> bool:
    """Same bytes already ingested, raw file present."""
    raw = settings.raw_dir / paper_id
    if not raw.is_file():
        return False
    if store is None:
        if not settings.sqlite_path.exists():
            return False
        from ..stores.sqlite import open_store

        try:
            with open_store(settings, readonly=True) as st:
                row = st.paper(paper_id)
        except EpistemeError:
            return False
    else:
        row = store.paper(paper_id)
    return bool(row and row["sha256"] == sha)


def _taken_ids(settings, store) -> dict[str, str]:
    """Ids in use, keyed by their lower-case form: the papers in SQLite and the files in raw/
    (macOS and Windows file systems do not tell ``Paper.pdf`` from ``paper.pdf``)."""
    out: dict[str, str] = {}
    if store is not None:
        for row in store.conn.execute("SELECT id FROM papers"):
            out[str(row[0]).lower()] = str(row[0])
    with contextlib.suppress(OSError):
        for f in os.listdir(settings.raw_dir):
            if not f.startswith("."):
                out.setdefault(f.lower(), f)
    return out


def _choose_id(settings, given: str, store) -> str:
    """:func:`paper_id_for`, except that an id differing only in letter case from one in use
    takes the hashed form (two names must not share one file on a case-insensitive disk)."""
    pid = paper_id_for(given)
    other = _taken_ids(settings, store).get(pid.lower())
    if other is not None and other != pid:
        digest = hashlib.sha256(base_name(given).encode("utf-8", "surrogatepass")).hexdigest()[:10]
        pid = f"{pid[:-4][:100]}-{digest}.pdf"
    return pid


def _open_rw(settings):
    from ..stores.sqlite import open_store

    return open_store(settings)


def _unchanged_json(store, paper_id: str, message: str, given: str) -> dict:
    out = paper_json(store, paper_id, "unchanged")
    out["message"] = message
    if paper_id != given:
        out["given_name"] = given
    return out


def ingest_paper(settings, pdf_path: str | os.PathLike, *, force: bool = False,
                 use_outline: bool = True, progress: bool = True, name: str | None = None,
                 embedder=None, on_split=None, check=None) -> dict:
    """Ingest one PDF (see module docstring).  ``name`` overrides the stored file name (HTTP
    uploads).  Returns the JSON printed by ``episteme ingest``; ``status`` is ``ingested``,
    ``replaced`` (same name, new bytes or ``force``) or ``unchanged`` (nothing done).
    ``on_split(passages_per_section)`` is called once the paper is split, before embedding (the
    HTTP server turns it into "sections done / total" job progress); ``check()`` is called
    between the slow steps and may raise to stop the ingest (the server's cancel and timeout)."""
    from ..stores.embedding import get_embedder
    from ..stores.sqlite import open_store
    from ..stores.vectors import open_vectors

    started = time.monotonic()
    given = base_name(name or ("stdin.pdf" if str(pdf_path) == "-" else Path(pdf_path).name))
    data = _read_pdf(pdf_path, settings.max_pdf_bytes)
    sha = sha256_bytes(data)
    if pending_journal(settings) is not None or _stale_temps(settings):
        with _locked(settings):
            reconcile(settings)
    store_ro = None
    if settings.sqlite_path.exists():
        with contextlib.suppress(EpistemeError):
            store_ro = open_store(settings, readonly=True)
    try:
        paper_id = _choose_id(settings, given, store_ro)
        legacy = legacy_paper_id(given)
        if not force and legacy != paper_id and store_ro is not None:
            row = store_ro.paper(legacy)  # an older version's name for the same bytes
            if row and row["sha256"] == sha and (settings.raw_dir / legacy).is_file():
                return _unchanged_json(store_ro, legacy, f"{legacy} is already ingested with the "
                                       "same content (sha256); use --force to redo it", given)
    finally:
        if store_ro is not None:
            store_ro.close()
    if not force and _is_unchanged(settings, paper_id, sha):
        with _locked(settings), open_store(settings) as store:
            if _is_unchanged(settings, paper_id, sha, store=store):
                return _unchanged_json(store, paper_id, f"{paper_id} is already ingested with the "
                                       "same content (sha256); use --force to redo it", given)

    embedder = embedder or get_embedder(settings)
    # Everything this thread imports from here on is imported now, so the side thread's
    # imports cannot race ours (a half-imported numpy/pypdf seen from two threads breaks).
    from ..pdf import passages  # noqa: F401

    if "chromadb" not in sys.modules:
        threading.Thread(target=_warm_chroma, name="warm-chroma", daemon=True).start()
    fd_tmp = None
    tmp = _tmp_dir(settings) / f"{paper_id}.{os.getpid()}.{time.time_ns()}.tmp"
    try:
        fd_tmp = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd_tmp, "wb") as f:
            fd_tmp = None
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if check is not None:
            check()
        prepared = _prepare(settings, paper_id, tmp, sha, embedder, use_outline=use_outline,
                            progress=progress, on_split=on_split, check=check)
        if check is not None:
            check()
        with _locked(settings), open_store(settings) as store:
            reconcile(settings, store=store)
            if _choose_id(settings, given, store) != paper_id:
                raise EpistemeError(f"another paper named like {given!r} was ingested meanwhile; "
                                    "run the ingest again")
            if not force and _is_unchanged(settings, paper_id, sha, store=store):
                return _unchanged_json(store, paper_id,
                                       f"{paper_id} was ingested meanwhile with the same content", given)
            existed = store.paper(paper_id) is not None or (settings.raw_dir / paper_id).exists()
            vectors = open_vectors(settings, embedder)
            _commit(settings, store, vectors, prepared, tmp)
            out = paper_json(store, paper_id, "replaced" if existed else "ingested")
            if existed:
                out["message"] = (f"re-ingested {paper_id} (--force)" if force else
                                  f"replaced the earlier {paper_id}: the same file name "
                                  f"({given!r}) with new content")
            if paper_id != given:
                out["given_name"] = given
    finally:
        if fd_tmp is not None:
            os.close(fd_tmp)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    out["seconds"] = round(time.monotonic() - started, 2)
    return out


# ------------------------------------------------------------------ the journal and recovery
#
# The three stores cannot change in one transaction, so a change is made recoverable instead:
# before the first store is touched, ``<wiki>/.episteme/ingest-journal.json`` records what is
# about to happen, with the paper's old and new vectors staged beside it (``tmp/*.npz``).
# SQLite's commit is the point of no return.  After a crash anywhere, the next run that takes
# the writer lock (ingest, remove, rebuild) finds the journal and finishes the change (SQLite
# committed: roll forward) or undoes it (not committed: roll back), then deletes the journal.

JOURNAL = "ingest-journal.json"


def pending_journal(settings) -> dict | None:
    """The journal of an interrupted ingest/remove (``None`` when the last one finished)."""
    import json

    path = settings.data_dir / JOURNAL
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"op": "unreadable"}


def _write_journal(settings, journal: dict) -> None:
    import json

    from ..fsutil import atomic_write_text

    atomic_write_text(settings.data_dir / JOURNAL, json.dumps(journal))


def _clear_journal(settings) -> None:
    with contextlib.suppress(FileNotFoundError):
        (settings.data_dir / JOURNAL).unlink()


def _stage_vectors(path: Path, saved: dict) -> None:
    """Write ids, embeddings, metadatas and documents to ``path`` (npz, no pickles), fsynced."""
    import io
    import json

    import numpy as np

    ids = list(saved.get("ids") or [])
    embs = saved.get("embeddings")
    arr = np.asarray(embs if embs is not None and len(ids) else np.zeros((0, 0)), dtype=np.float32)
    buf = io.BytesIO()
    np.savez(buf, embeddings=arr,
             meta=np.frombuffer(json.dumps({"ids": ids, "metadatas": list(saved.get("metadatas") or []),
                                            "documents": list(saved.get("documents") or [])}
                                           ).encode("utf-8"), dtype=np.uint8))
    from ..fsutil import atomic_write_bytes

    atomic_write_bytes(path, buf.getvalue())


def _load_staged(path: Path) -> dict:
    import json

    import numpy as np

    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(bytes(z["meta"]).decode("utf-8"))
        meta["embeddings"] = z["embeddings"]
    return meta


def _stale_temps(settings) -> bool:
    """Temp copies or backups a killed ingest left behind (cleaned by :func:`reconcile`)."""
    tmp = settings.data_dir / "tmp"
    with contextlib.suppress(OSError):
        if any(tmp.iterdir()):
            return True
    with contextlib.suppress(OSError):
        return any(f.startswith(".") and f.endswith(".bak") for f in os.listdir(settings.raw_dir))
    return False


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (on Windows always assumed: ``os.kill`` would end it)."""
    if pid == os.getpid() or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _clean_temps(settings, keep: set[str]) -> list[str]:
    """Delete temp copies of killed ingests (``tmp/*.tmp``, staged vectors) and ``raw/`` backups
    of finished ones.  Only files whose process is gone, or over a day old: a concurrent
    ingest in another process is writing its own temp copy outside the lock."""
    removed = []
    now = time.time()
    folders = [(settings.data_dir / "tmp", False), (settings.raw_dir, True)]
    for folder, backups_only in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for f in names:
            if backups_only and not (f.startswith(".") and f.endswith(".bak")):
                continue
            path = folder / f
            if str(path) in keep:
                continue
            parts = f.split(".")
            pid = next((int(x) for x in reversed(parts) if x.isdigit() and len(x) < 8), None)
            try:
                old = now - path.stat().st_mtime > 86400
            except OSError:
                continue
            if old or pid is None or not _pid_alive(pid) or backups_only:
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(str(path.relative_to(settings.wiki))
                                   if settings.wiki in path.parents else str(path))
    return removed


def _raw_passages(settings):
    """The passage collection without binding it to a model (recovery must work whatever the
    configured embedder is); ``None`` when it does not exist."""
    from ..stores.vectors import PASSAGES, make_client, physical_name

    client = make_client(settings)
    return _raw_collection(client, physical_name(settings, PASSAGES, client))


def _set_paper_vectors(settings, paper_id: str, staged: dict | None, model: str | None) -> None:
    """Make the passage collection hold exactly ``staged`` for ``paper_id``."""
    from ..stores.vectors import PASSAGES, _add_batches, make_client, mark_written, physical_name

    col = _raw_passages(settings)
    ids = list((staged or {}).get("ids") or [])
    if col is None:
        if not ids:
            return
        dim = int(staged["embeddings"].shape[1])
        col = make_client(settings).get_or_create_collection(
            physical_name(settings, PASSAGES), configuration={"hnsw": {"space": "cosine"}},
            metadata={"embedding_model": model, "dim": dim}, embedding_function=None)
    col.delete(where={"paper": paper_id})
    if ids:
        _add_batches(col, ids, staged["embeddings"], staged["metadatas"], staged["documents"])
    mark_written(settings)


def reconcile(settings, *, store=None) -> dict | None:
    """Finish or undo an interrupted ingest/remove (see the journal notes above), and delete
    the temp files killed runs left.  Caller holds the writer lock.  Returns what was done
    (``None`` when there was nothing to do)."""
    journal = pending_journal(settings)
    keep: set[str] = set()
    done: dict | None = None
    if journal is not None:
        if journal.get("op") not in ("ingest", "remove"):
            _clear_journal(settings)  # unreadable: the stores are checked by lint --stores
            return {"journal": "unreadable, removed (run `episteme lint --stores`)"}
        own = store is None
        if own:
            store = _open_rw(settings)
        try:
            done = _replay(settings, store, journal)
        finally:
            if own:
                store.close()
        _clear_journal(settings)
        print(f"episteme: recovered an interrupted {journal['op']} of {journal['paper']} "
              f"({done['action']})", file=sys.stderr)
    removed = _clean_temps(settings, keep)
    if removed:
        done = {**(done or {}), "temp_files_removed": removed}
    return done


def _replay(settings, store, j: dict, *, committed: bool | None = None) -> dict:
    """Roll the journalled change forward (SQLite has it) or back (it does not).  ``committed``
    given: the caller knows (an exception before the commit)."""
    paper_id = j["paper"]
    target = settings.raw_dir / paper_id
    backup = Path(j["backup"])
    if committed is None:
        row = store.paper(paper_id)
        if j["op"] == "ingest":
            committed = bool(row and row["sha256"] == j["sha256"]
                             and row["ingested_at"] == j["ingested_at"])
        else:
            committed = row is None
    staged_old = Path(j["old_vectors"]) if j.get("old_vectors") else None
    staged_new = Path(j["new_vectors"]) if j.get("new_vectors") else None
    if committed:
        if j["op"] == "ingest":
            tmp = Path(j["tmp"])
            if not target.exists() and tmp.exists():
                os.replace(tmp, target)
            if staged_new is not None and staged_new.exists():
                _set_paper_vectors(settings, paper_id, _load_staged(staged_new), j.get("model"))
        else:
            _set_paper_vectors(settings, paper_id, None, None)
        with contextlib.suppress(FileNotFoundError):
            backup.unlink()
        action = "rolled forward"
    else:
        if backup.exists():
            os.replace(backup, target)
        elif j["op"] == "ingest" and not j.get("had_raw") and target.exists():
            target.unlink()  # the new file was placed; no old one existed
        old = _load_staged(staged_old) if staged_old and staged_old.exists() else None
        _set_paper_vectors(settings, paper_id, old, j.get("model"))
        action = "rolled back"
    for f in (staged_old, staged_new):
        if f is not None:
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
    return {"op": j["op"], "paper": paper_id, "action": action}


def _commit(settings, store, vectors, prepared: Prepared, tmp: Path) -> None:
    """Change raw/, Chroma and SQLite for one paper, journalled (see above); any exception undoes
    every change (and a crash is undone or finished by the next :func:`reconcile`).  Caller
    holds the lock."""
    paper_id = prepared.paper.id
    raw_dir = settings.raw_dir
    target = raw_dir / paper_id
    nonce = f"{os.getpid()}.{time.time_ns()}"
    backup = raw_dir / f".{paper_id}.{nonce}.bak"
    tmpdir = _tmp_dir(settings)
    old_file, new_file = tmpdir / f"old.{nonce}.npz", tmpdir / f"new.{nonce}.npz"
    saved = vectors.paper_vectors(paper_id)
    _stage_vectors(old_file, saved)
    _stage_vectors(new_file, {"ids": prepared.ids, "embeddings": prepared.embeddings,
                              "metadatas": prepared.metadatas, "documents": prepared.documents})
    journal = {"op": "ingest", "paper": paper_id, "sha256": prepared.paper.sha256,
               "ingested_at": prepared.paper.ingested_at, "tmp": str(tmp),
               "backup": str(backup), "had_raw": target.exists(), "model": vectors.model_name,
               "old_vectors": str(old_file), "new_vectors": str(new_file)}
    _write_journal(settings, journal)
    crash_point("ingest:journal")
    committed = False
    store.begin()
    try:
        store.write_paper(prepared.paper, prepared.sections)
        if prepared.sentence_rows is not None:
            store.write_sentence_vectors(prepared.sentence_rows)
        crash_point("ingest:sqlite-written")
        vectors.delete_paper(paper_id)
        crash_point("ingest:chroma-deleted")
        vectors.add(prepared.ids, prepared.embeddings, prepared.metadatas, prepared.documents)
        crash_point("ingest:chroma-added")
        raw_dir.mkdir(parents=True, exist_ok=True)
        if target.exists():
            os.replace(target, backup)
            crash_point("ingest:raw-moved-aside")
        os.replace(tmp, target)
        crash_point("ingest:raw-placed")
        store.commit()
        committed = True
        crash_point("ingest:sqlite-committed")
    except BaseException as exc:
        errors = []
        if not committed:
            store.rollback()
            try:
                _replay(settings, store, journal, committed=False)
                _clear_journal(settings)
            except Exception as e:  # the journal stays: the next run finishes the undo
                errors.append(f"undoing the ingest failed ({e}); the next ingest or "
                              "`episteme rebuild` repairs it")
        for msg in errors:
            print(f"warning: {msg}", file=sys.stderr)
        if isinstance(exc, Exception) and not isinstance(exc, EpistemeError):
            # a store failure (Chroma server gone, disk full...): one clear line, not a traceback
            raise EpistemeError(
                f"ingest of {paper_id} failed and was undone: {type(exc).__name__}: {exc}"
            ) from exc
        raise
    _clear_journal(settings)
    crash_point("ingest:journal-cleared")
    for f in (backup, old_file, new_file):  # left over by a crash: removed by the next run
        with contextlib.suppress(FileNotFoundError):
            f.unlink()


# ------------------------------------------------------------------------------------ remove


def _resolve_paper(settings, store, paper: str) -> str:
    """Accept a paper id, a file name or a path; return the stored id."""
    for cand in (paper, Path(paper).name, paper_id_for(Path(paper).name)):
        if store is not None and store.paper(cand):
            return cand
        if cand and "/" not in cand and (settings.raw_dir / cand).is_file():
            return cand
    raise NotFoundError(f"paper {paper!r} is not ingested (see raw/ for stored names)")


def citing_sections(wiki: Path, paper_id: str) -> list[str]:
    """Wiki section ids whose ``index.json`` sources include ``paper_id``."""
    from ..wiki.index import read_index_json

    try:
        mapping = read_index_json(wiki)
    except EpistemeError as e:
        print(f"warning: cannot read index.json ({e.message})", file=sys.stderr)
        return []
    return sorted(sid for sid, sources in mapping.items() if paper_id in sources)


def remove_paper(settings, paper: str, *, embedder_name: str | None = None) -> dict:
    """Un-ingest ``paper``: SQLite rows, Chroma vectors and the raw file, all or nothing
    (journalled like an ingest, so a crash is undone or finished by the next run).
    Wiki pages are left alone; the JSON lists the sections that cite the paper."""
    from ..stores.sqlite import open_store

    with _locked(settings), open_store(settings) as store:
        reconcile(settings, store=store)
        paper_id = _resolve_paper(settings, store, paper)
        row = store.paper(paper_id)
        n_sections = len(store.sections(paper_id)) if row else 0
        n_passages = len(store.passages(paper_id=paper_id)) if row else 0
        # Vectors: the collection may be bound to another model; removal must work regardless.
        col = _raw_passages(settings)
        saved = col.get(where={"paper": paper_id}, include=["embeddings", "metadatas", "documents"]) if col else None
        target = settings.raw_dir / paper_id
        nonce = f"{os.getpid()}.{time.time_ns()}"
        backup = settings.raw_dir / f".{paper_id}.{nonce}.bak"
        old_file = _tmp_dir(settings) / f"old.{nonce}.npz"
        _stage_vectors(old_file, saved or {})
        journal = {"op": "remove", "paper": paper_id, "backup": str(backup),
                   "old_vectors": str(old_file),
                   "model": (col.metadata or {}).get("embedding_model") if col else None}
        _write_journal(settings, journal)
        moved = False
        store.begin()
        try:
            store.delete_paper(paper_id)
            if saved and saved["ids"]:
                _set_paper_vectors(settings, paper_id, None, None)
                crash_point("remove:chroma-deleted")
            if target.exists():
                os.replace(target, backup)
                moved = True
            store.commit()
            crash_point("remove:sqlite-committed")
        except BaseException:
            store.rollback()
            _replay(settings, store, journal, committed=False)
            _clear_journal(settings)
            raise
        _clear_journal(settings)
        for f in (backup, old_file):
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
    return {
        "status": "removed",
        "paper": paper_id,
        "sections_removed": n_sections,
        "passages_removed": n_passages,
        "vectors_removed": len(saved["ids"]) if saved else 0,
        "raw_removed": moved,
        "cited_by": citing_sections(settings.wiki, paper_id),
    }


def _raw_collection(client, name: str):
    try:
        return client.get_collection(name, embedding_function=None)
    except Exception:
        return None


# ----------------------------------------------------------------------------------- rebuild


def list_raw(settings) -> list[Path]:
    d = settings.raw_dir
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.is_file() and p.suffix.lower() == ".pdf"
                  and not p.name.startswith("."))


def _recover_raw_for_rebuild(settings) -> None:
    """Before a rebuild: finish an interrupted ingest/remove as far as raw/ goes.  The journal
    replay needs the stores, which a rebuild may be repairing; when it cannot run, raw/ keeps
    whichever file is in place (a moved-aside old copy returns only if nothing replaced it)."""
    journal = pending_journal(settings)
    if journal is None:
        _clean_temps(settings, set())
        return
    try:
        reconcile(settings)
        return
    except Exception as e:  # noqa: BLE001 - damaged stores: fall back to raw/ alone
        print(f"episteme: the stores cannot replay the interrupted {journal.get('op')} ({e}); "
              "keeping raw/ as it is", file=sys.stderr)
    paper = journal.get("paper")
    backup = Path(journal["backup"]) if journal.get("backup") else None
    if paper and backup is not None and backup.exists():
        target = settings.raw_dir / paper
        if journal.get("op") == "remove" or target.exists():
            backup.unlink()
        else:
            os.replace(backup, target)
    _clear_journal(settings)
    _clean_temps(settings, set())


def _split_each(settings, papers: list[Path], *, jobs: int, use_outline: bool, embedder=None):
    """``(path, ("ok", SplitResult | Prepared, seconds) | ("error", message, kind))`` for each
    of ``papers`` in order; with ``jobs`` > 1 the splitting runs in spawned worker processes
    (the batch's), at most ``jobs + 2`` papers ahead of the caller.  With an ``embedder`` the
    workers can copy (:func:`episteme.ingest.batch.worker_model`), they also chunk and embed
    each paper (its id is its raw/ name): the outcome is then a ready ``Prepared``."""
    from .batch import _prepare_job, _split_job, _worker_init, worker_model

    args = (use_outline, settings.max_pages, settings.max_pdf_bytes)
    in_workers = worker_model(embedder, jobs) if embedder is not None else None
    if jobs <= 1 or len(papers) <= 1:
        for path in papers:
            yield path, _split_job(str(path), *args)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=min(jobs, len(papers)), initializer=_worker_init,
                               mp_context=multiprocessing.get_context("spawn"))
    try:
        ahead: list = []
        queue = list(papers)
        while queue or ahead:
            while queue and len(ahead) < jobs + 2:
                path = queue.pop(0)
                ahead.append((path, pool.submit(_prepare_job, str(path), path.name, None,
                                                *args, *in_workers) if in_workers else
                              pool.submit(_split_job, str(path), *args)))
            path, fut = ahead.pop(0)
            try:
                outcome = fut.result()
            except Exception as e:  # noqa: BLE001 - a worker died (killed, out of memory)
                outcome = ("error", f"the splitter process failed: {type(e).__name__}: {e}", None)
            yield path, outcome
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _fresh_vectors(settings, embedder) -> tuple[object, bool, str | None]:
    """An open vector store with an empty passage collection.  When Chroma cannot be opened or
    emptied (a truncated or corrupt ``chroma.sqlite3``), the embedded store folder is moved
    aside (``chroma.broken-<time>``) and a new one created.  Returns (vectors, wiki sections
    dropped, where the broken store went)."""
    from ..stores.vectors import (
        PASSAGES,
        WIKI_SECTIONS,
        forget_clients,
        make_client,
        open_vectors,
        physical_name,
    )

    def attempt():
        client = make_client(settings)
        vectors = open_vectors(settings, embedder)
        vectors.drop(PASSAGES)
        vectors.count(PASSAGES)  # reads the store: fails here if it is damaged
        dropped = False
        col = _raw_collection(client, physical_name(settings, WIKI_SECTIONS, client))
        if col is not None and (col.metadata or {}).get("embedding_model") != embedder.name:
            vectors.drop(WIKI_SECTIONS)  # other model: useless, re-embedded by the wiki indexer
            dropped = True
        return vectors, dropped

    try:
        vectors, dropped = attempt()
        return vectors, dropped, None
    except Exception as e:  # noqa: BLE001 - any failure of a damaged store
        if settings.chroma_host or not settings.chroma_path.exists():
            raise EpistemeError(f"cannot reset the Chroma passage collection: {e}") from e
        forget_clients()
        with contextlib.suppress(Exception):  # chromadb caches the half-opened system per path
            from chromadb.api.client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
        aside = settings.chroma_path.with_name(
            f"{settings.chroma_path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        os.replace(settings.chroma_path, aside)
        print(f"episteme: Chroma at {settings.chroma_path} could not be opened ({e}); moved it "
              f"aside to {aside} and created a new one", file=sys.stderr)
    vectors, _ = attempt()
    return vectors, True, str(aside)


def rebuild(settings, *, progress: bool = True, use_outline: bool = True, embedder=None,
            jobs: int = 1) -> dict:
    """Recreate SQLite and the passage collection from ``raw/`` alone (e.g. after an embedding
    model change, a lost or damaged database).  The new SQLite file is built beside the old one
    and swapped in at the end (the old one, even if unreadable, is never opened); a Chroma store
    that cannot be opened is moved aside and recreated; a paper that fails to split is reported
    and skipped.  ``jobs`` > 1 splits the PDFs in that many worker processes (as a batch ingest
    does) while this process embeds and writes, in raw/'s order."""
    from ..stores.embedding import get_embedder
    from ..stores.sqlite import Store
    from ..stores.vectors import PASSAGES

    started = time.monotonic()
    embedder = embedder or get_embedder(settings)
    done, failed = [], []
    with _locked(settings):
        _recover_raw_for_rebuild(settings)
        papers = list_raw(settings)
        new_db = settings.sqlite_path.with_name(settings.sqlite_path.name + ".rebuild")
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(new_db) + suffix).unlink()
        vectors, dropped_wiki, chroma_aside = _fresh_vectors(settings, embedder)
        bar = None
        if progress and papers:
            from tqdm import tqdm

            bar = tqdm(total=len(papers), desc="rebuild", unit="paper", file=sys.stderr)
        with Store(new_db) as store:
            for path, outcome in _split_each(settings, papers, jobs=jobs,
                                             use_outline=use_outline, embedder=embedder):
                try:
                    if outcome[0] == "error":
                        raise EpistemeError(outcome[1])
                    if isinstance(outcome[1], Prepared):  # embedded by the worker
                        prepared = outcome[1]
                    else:
                        data = path.read_bytes()
                        prepared = prepare_split(path.name, outcome[1], sha256_bytes(data),
                                                 embedder)
                        prepared.embeddings = embedder.encode(prepared.documents, batch_size=32,
                                                              progress=False)
                    with store.transaction():
                        store.write_paper(prepared.paper, prepared.sections)
                        if prepared.sentence_rows is not None:  # computed: keep them
                            store.write_sentence_vectors(prepared.sentence_rows)
                    vectors.add(prepared.ids, prepared.embeddings, prepared.metadatas,
                                prepared.documents)
                    done.append({"paper": path.name, "sections": len(prepared.sections),
                                 "passages": len(prepared.ids)})
                except EpistemeError as e:
                    failed.append({"paper": path.name, "error": e.message})
                finally:
                    if bar is not None:
                        bar.update(1)
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if bar is not None:
            bar.close()
        settings.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(settings.sqlite_path) + suffix).unlink()
        os.replace(new_db, settings.sqlite_path)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(new_db) + suffix).unlink()
        n_vectors = vectors.count(PASSAGES)
    return {
        "status": "rebuilt",
        "papers": done,
        "failed": failed,
        "passages": n_vectors,
        "embedding_model": embedder.name,
        "wiki_sections_dropped": dropped_wiki,
        **({"chroma_moved_aside": chroma_aside} if chroma_aside else {}),
        "seconds": round(time.monotonic() - started, 2),
    }
