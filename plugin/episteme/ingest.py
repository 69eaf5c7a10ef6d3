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
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import EpistemeError, NotFoundError, UsageError
from .fsutil import sanitize_filename, wiki_lock

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
        from .vectors import _chromadb

        _chromadb()


@dataclass
class _Prepared:
    """A split + embedded paper, ready to be written."""

    paper: object  # store.PaperRow
    sections: list  # list[store.SectionRow]
    ids: list[str]
    embeddings: object  # np.ndarray
    metadatas: list[dict]
    documents: list[str]
    split_warnings: list[str]


def paper_id_for(name: str) -> str:
    """The stored file name (= paper id) for an uploaded name: base name only, safe characters,
    always ending in ``.pdf`` so ``raw/`` stays a folder of PDFs."""
    pid = sanitize_filename(name)
    if not pid.lower().endswith(".pdf"):
        pid = f"{pid}.pdf"
    return pid


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def _read_pdf(pdf_path: str | os.PathLike, max_bytes: int) -> bytes:
    from .pdfsplit import PdfError, check_pdf_bytes

    path = Path(pdf_path)
    if not path.exists():
        raise NotFoundError(f"no such file: {pdf_path}")
    if path.is_dir():
        raise UsageError(f"{pdf_path} is a folder, not a PDF")
    size = path.stat().st_size
    if max_bytes and size > max_bytes:
        # refuse before reading a huge file into memory
        raise PdfError("too_large", f"the file is {size} bytes, over the limit of {max_bytes} "
                       "bytes (EPISTEME_MAX_PDF_BYTES)")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise EpistemeError(f"cannot read {pdf_path}: {e.strerror or e}") from e
    check_pdf_bytes(data, max_bytes)
    return data


def _tmp_dir(settings) -> Path:
    d = settings.data_dir / "tmp"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _prepare(settings, paper_id: str, tmp_pdf: Path, sha: str, embedder, *, use_outline: bool,
             progress: bool, on_split=None) -> _Prepared:
    """Split + chunk + embed (no store touched)."""
    from .passages import make_passages
    from .pdfsplit import split_pdf
    from .store import PaperRow, PassageRow, SectionRow, section_id_for

    res = split_pdf(tmp_pdf, use_outline=use_outline, max_pages=settings.max_pages,
                    max_bytes=settings.max_pdf_bytes)
    taken: set[str] = set()
    sections: list[SectionRow] = []
    for i, s in enumerate(res.sections):
        title = s.title or ("Front matter" if s.kind == "front" else "Untitled")
        sid = section_id_for(paper_id, s.number or None, title, taken)
        row = SectionRow(sid, i, s.number or None, title, int(s.level), s.kind,
                         int(s.page_start), int(s.page_end), s.text)
        if s.kind not in NOT_EMBEDDED_KINDS and s.text.strip():
            for j, p in enumerate(make_passages(s, embedder.count_tokens,
                                                max_tokens=PASSAGE_MAX_TOKENS)):
                row.passages.append(PassageRow(f"{sid}~{j}", j, p.text, int(p.page),
                                               int(p.char_start), int(p.char_end)))
        sections.append(row)
    objects = _object_sections(paper_id, res, sections, taken, embedder)
    ids, docs, metas = [], [], []
    for s in sections:
        for p in s.passages:
            ids.append(p.id)
            docs.append(p.text)
            metas.append({"paper": paper_id, "section_id": s.section_id, "page": p.page,
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
    embeddings = embedder.encode(docs, batch_size=32, progress=progress)
    paper = PaperRow(id=paper_id, file=f"raw/{paper_id}", sha256=sha, title=res.title or None,
                     authors=list(res.authors or []), pages=int(res.pages), ingested_at=_now(),
                     used_outline=bool(res.used_outline), warnings=list(res.warnings),
                     embedding_model=embedder.name, meta=dict(getattr(res, "meta", {}) or {}),
                     objects=objects)
    return _Prepared(paper, sections, ids, embeddings, metas, docs, list(res.warnings))


def _object_sections(paper_id: str, res, sections: list, taken: set[str], embedder) -> list:
    """Tables, figures, algorithms and footnotes become sections of their own kind (after the
    paper's sections), so their passages are embedded and a claim about a table value traces
    to "Table 4, p. 8" rather than to whatever prose the caption interrupted."""
    from .passages import make_passages
    from .pdfsplit import PaperSection
    from .store import PassageRow, SectionRow, section_id_for

    out = []
    for obj in res.objects:
        text = obj.caption if obj.kind == "footnote" else "\n".join(
            t for t in (obj.caption, obj.text) if t)
        if not text.strip():
            continue
        sid = section_id_for(paper_id, None, obj.label, taken)
        sec = PaperSection("", obj.label, 9, obj.kind, obj.page, obj.page, text, [(0, obj.page)])
        row = SectionRow(sid, len(sections), None, obj.label, 9, obj.kind, obj.page, obj.page,
                         text)
        for j, p in enumerate(make_passages(sec, embedder.count_tokens,
                                            max_tokens=PASSAGE_MAX_TOKENS)):
            row.passages.append(PassageRow(f"{sid}~{j}", j, p.text, int(p.page),
                                           int(p.char_start), int(p.char_end)))
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
        from .store import open_store

        try:
            with open_store(settings, readonly=True) as st:
                row = st.paper(paper_id)
        except EpistemeError:
            return False
    else:
        row = store.paper(paper_id)
    return bool(row and row["sha256"] == sha)


def ingest_paper(settings, pdf_path: str | os.PathLike, *, force: bool = False,
                 use_outline: bool = True, progress: bool = True, name: str | None = None,
                 embedder=None, on_split=None) -> dict:
    """Ingest one PDF (see module docstring).  ``name`` overrides the stored file name (HTTP
    uploads).  Returns the JSON printed by ``episteme ingest``; ``status`` is ``ingested``,
    ``replaced`` (same name, new bytes or ``force``) or ``unchanged`` (nothing done).
    ``on_split(passages_per_section)`` is called once the paper is split, before embedding (the
    HTTP server turns it into "sections done / total" job progress)."""
    from .embedding import get_embedder
    from .store import open_store
    from .vectors import open_vectors

    started = time.monotonic()
    data = _read_pdf(pdf_path, settings.max_pdf_bytes)
    paper_id = paper_id_for(name or Path(pdf_path).name)
    sha = sha256_bytes(data)
    if not force and _is_unchanged(settings, paper_id, sha):
        with _locked(settings), open_store(settings) as store:
            if _is_unchanged(settings, paper_id, sha, store=store):
                out = paper_json(store, paper_id, "unchanged")
                out["message"] = f"{paper_id} is already ingested with the same content (sha256); use --force to redo it"
                return out

    embedder = embedder or get_embedder(settings)
    # Everything this thread imports from here on is imported now, so the side thread's
    # imports cannot race ours (a half-imported numpy/pypdf seen from two threads breaks).
    from . import passages, pdfsplit  # noqa: F401

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
        prepared = _prepare(settings, paper_id, tmp, sha, embedder, use_outline=use_outline,
                            progress=progress, on_split=on_split)
        with _locked(settings), open_store(settings) as store:
            if not force and _is_unchanged(settings, paper_id, sha, store=store):
                out = paper_json(store, paper_id, "unchanged")
                out["message"] = f"{paper_id} was ingested meanwhile with the same content"
                return out
            existed = store.paper(paper_id) is not None or (settings.raw_dir / paper_id).exists()
            vectors = open_vectors(settings, embedder)
            _commit(settings, store, vectors, prepared, tmp)
            out = paper_json(store, paper_id, "replaced" if existed else "ingested")
    finally:
        if fd_tmp is not None:
            os.close(fd_tmp)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    out["seconds"] = round(time.monotonic() - started, 2)
    return out


def _commit(settings, store, vectors, prepared: _Prepared, tmp: Path) -> None:
    """Steps 1-4 of the module docstring, with full undo on failure.  Caller holds the lock."""
    paper_id = prepared.paper.id
    raw_dir = settings.raw_dir
    target = raw_dir / paper_id
    backup = raw_dir / f".{paper_id}.{os.getpid()}.bak"
    saved = vectors.paper_vectors(paper_id)
    moved_old = placed_new = chroma_touched = False
    store.begin()
    try:
        store.write_paper(prepared.paper, prepared.sections)
        chroma_touched = True
        vectors.delete_paper(paper_id)
        vectors.add(prepared.ids, prepared.embeddings, prepared.metadatas, prepared.documents)
        raw_dir.mkdir(parents=True, exist_ok=True)
        if target.exists():
            os.replace(target, backup)
            moved_old = True
        os.replace(tmp, target)
        placed_new = True
        store.commit()
    except BaseException as exc:
        store.rollback()
        errors = []
        if chroma_touched:
            try:
                vectors.delete(ids=prepared.ids)
                vectors.delete_paper(paper_id)
                vectors.restore(saved)
            except Exception as e:  # report, but re-raise the original failure
                errors.append(f"restoring Chroma failed: {e}")
        try:
            if placed_new:
                os.replace(target, tmp)
            if moved_old:
                os.replace(backup, target)
        except OSError as e:
            errors.append(f"restoring raw/{paper_id} failed: {e}")
        for msg in errors:
            print(f"warning: {msg}", file=sys.stderr)
        if isinstance(exc, Exception) and not isinstance(exc, EpistemeError):
            # a store failure (Chroma server gone, disk full...): one clear line, not a traceback
            raise EpistemeError(
                f"ingest of {paper_id} failed and was undone: {type(exc).__name__}: {exc}"
            ) from exc
        raise
    if moved_old:
        with contextlib.suppress(FileNotFoundError):
            backup.unlink()


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
    from .wikiindex import read_index_json

    try:
        mapping = read_index_json(wiki)
    except EpistemeError as e:
        print(f"warning: cannot read index.json ({e.message})", file=sys.stderr)
        return []
    return sorted(sid for sid, sources in mapping.items() if paper_id in sources)


def remove_paper(settings, paper: str, *, embedder_name: str | None = None) -> dict:
    """Un-ingest ``paper``: SQLite rows, Chroma vectors and the raw file, all or nothing.
    Wiki pages are left alone; the JSON lists the sections that cite the paper."""
    from .store import open_store
    from .vectors import PASSAGES, make_client, mark_written

    with _locked(settings), open_store(settings) as store:
        paper_id = _resolve_paper(settings, store, paper)
        row = store.paper(paper_id)
        n_sections = len(store.sections(paper_id)) if row else 0
        n_passages = len(store.passages(paper_id=paper_id)) if row else 0
        # Vectors: the collection may be bound to another model; removal must work regardless.
        col = _raw_collection(make_client(settings), PASSAGES)
        saved = col.get(where={"paper": paper_id}, include=["embeddings", "metadatas", "documents"]) if col else None
        target = settings.raw_dir / paper_id
        backup = settings.raw_dir / f".{paper_id}.{os.getpid()}.bak"
        moved = False
        store.begin()
        try:
            store.delete_paper(paper_id)
            if col is not None and saved and saved["ids"]:
                col.delete(ids=list(saved["ids"]))
                mark_written(settings)
            if target.exists():
                os.replace(target, backup)
                moved = True
            store.commit()
        except BaseException:
            store.rollback()
            if col is not None and saved and saved["ids"]:
                with contextlib.suppress(Exception):
                    col.add(ids=list(saved["ids"]),
                            embeddings=[list(map(float, v)) for v in saved["embeddings"]],
                            metadatas=saved["metadatas"], documents=saved["documents"])
            if moved:
                os.replace(backup, target)
            raise
        if moved:
            backup.unlink()
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


def rebuild(settings, *, progress: bool = True, use_outline: bool = True, embedder=None) -> dict:
    """Recreate SQLite and the passage collection from ``raw/`` alone (e.g. after an embedding
    model change or a lost database).  The new SQLite file is built beside the old one and
    swapped in at the end; a paper that fails to split is reported and skipped."""
    from .embedding import get_embedder
    from .store import Store
    from .vectors import PASSAGES, WIKI_SECTIONS, make_client, open_vectors

    started = time.monotonic()
    embedder = embedder or get_embedder(settings)
    papers = list_raw(settings)
    done, failed = [], []
    with _locked(settings):
        new_db = settings.sqlite_path.with_name(settings.sqlite_path.name + ".rebuild")
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(new_db) + suffix).unlink()
        client = make_client(settings)
        vectors = open_vectors(settings, embedder)
        vectors.drop(PASSAGES)
        dropped_wiki = False
        col = _raw_collection(client, WIKI_SECTIONS)
        if col is not None and (col.metadata or {}).get("embedding_model") != embedder.name:
            vectors.drop(WIKI_SECTIONS)  # other model: useless, re-embedded by the wiki indexer
            dropped_wiki = True
        bar = None
        if progress and papers:
            from tqdm import tqdm

            bar = tqdm(total=len(papers), desc="rebuild", unit="paper", file=sys.stderr)
        with Store(new_db) as store:
            for path in papers:
                try:
                    data = path.read_bytes()
                    prepared = _prepare(settings, path.name, path, sha256_bytes(data), embedder,
                                        use_outline=use_outline, progress=False)
                    with store.transaction():
                        store.write_paper(prepared.paper, prepared.sections)
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
        "seconds": round(time.monotonic() - started, 2),
    }
