"""The deterministic half of ingest: a PDF into ``raw/``, its sections and passages into SQLite,
passage vectors into Chroma -- all or nothing.  Also ``rebuild``.

Why the order below: every slow or fallible step that writes nothing (read, validate, split,
embed: :mod:`episteme.ingest.prepare`) runs first, outside the wiki lock, on a private temp
copy.  Only then, under :func:`episteme.fsutil.wiki_lock`, the three stores change together,
through the journalled commit a batch uses too (:func:`episteme.ingest.commit.commit_paper`;
``remove`` and the crash recovery live beside it).  The wiki writer (a later step) hooks in
after :func:`ingest_paper` returns, using the JSON it returns.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from pathlib import Path

from ..errors import EpistemeError
from ..fsutil import wiki_lock
from ..wiki.upkeep import remove_stale_temp_files
from .commit import (
    JOURNAL,
    citing_sections,
    clean_temps,
    clear_ingest_journal,
    commit_paper,
    ensure_free_space,
    is_unchanged,
    paper_json,
    pending_journal,
    raw_collection,
    reconcile,
    remove_paper,
    stale_temps,
)
from .ids import base_name, choose_id, legacy_paper_id, paper_id_for, read_pdf, sha256_bytes
from .prepare import (
    NOT_EMBEDDED_KINDS,
    OBJECT_KINDS,
    PASSAGE_MAX_TOKENS,
    Prepared,
    prepare_split,
    split_paper,
    write_temp_copy,
)
from .workers import prepare_job, split_job, worker_init, worker_model

# What callers of the ingest API import from here (the parts live in ids, prepare, commit).
__all__ = [
    "JOURNAL", "NOT_EMBEDDED_KINDS", "OBJECT_KINDS", "PASSAGE_MAX_TOKENS", "Prepared", "base_name",
    "citing_sections", "ingest_paper", "legacy_paper_id", "list_raw", "paper_id_for", "paper_json",
    "pending_journal", "prepare_split", "rebuild", "reconcile", "remove_paper", "sha256_bytes",
    "split_paper",
]


def _warm_chroma() -> None:
    """Import chromadb (~1-3 s of Python) on a side thread while the PDF is split and embedded;
    onnxruntime releases the GIL, so the two overlap."""
    with contextlib.suppress(Exception):
        from ..stores.vectors import preload_chromadb

        preload_chromadb()


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
    data = read_pdf(pdf_path, settings.max_pdf_bytes)
    sha = sha256_bytes(data)
    if pending_journal(settings) is not None or stale_temps(settings):
        with wiki_lock(settings.wiki):
            reconcile(settings)
    store_ro = None
    if settings.sqlite_path.exists():
        with contextlib.suppress(EpistemeError):
            store_ro = open_store(settings, readonly=True)
    try:
        paper_id = choose_id(settings, given, store_ro)
        legacy = legacy_paper_id(given)
        if not force and legacy != paper_id and store_ro is not None:
            row = store_ro.paper(legacy)  # an older version's name for the same bytes
            if row and row["sha256"] == sha and (settings.raw_dir / legacy).is_file():
                return _unchanged_json(store_ro, legacy, f"{legacy} is already ingested with the "
                                       "same content (sha256); use --force to redo it", given)
    finally:
        if store_ro is not None:
            store_ro.close()
    if not force and is_unchanged(settings, paper_id, sha):
        with wiki_lock(settings.wiki), open_store(settings) as store:
            if is_unchanged(settings, paper_id, sha, store=store):
                return _unchanged_json(store, paper_id, f"{paper_id} is already ingested with the "
                                       "same content (sha256); use --force to redo it", given)

    embedder = embedder or get_embedder(settings)
    # Everything this thread imports from here on is imported now, so the side thread's
    # imports cannot race ours (a half-imported numpy/pypdf seen from two threads breaks).
    from ..pdf import passages  # noqa: F401

    if "chromadb" not in sys.modules:
        threading.Thread(target=_warm_chroma, name="warm-chroma", daemon=True).start()
    ensure_free_space(settings, len(data))  # before minutes of embedding, not after
    tmp = write_temp_copy(settings, paper_id, data)
    try:
        if check is not None:
            check()
        prepared = _prepare(settings, paper_id, tmp, sha, embedder, use_outline=use_outline,
                            progress=progress, on_split=on_split, check=check)
        if check is not None:
            check()
        with wiki_lock(settings.wiki), open_store(settings) as store:
            reconcile(settings, store=store)
            if choose_id(settings, given, store) != paper_id:
                raise EpistemeError(f"another paper named like {given!r} was ingested meanwhile; "
                                    "run the ingest again")
            if not force and is_unchanged(settings, paper_id, sha, store=store):
                return _unchanged_json(store, paper_id,
                                       f"{paper_id} was ingested meanwhile with the same content", given)
            existed = store.paper(paper_id) is not None or (settings.raw_dir / paper_id).exists()
            vectors = open_vectors(settings, embedder)
            commit_paper(settings, store, vectors, prepared, tmp)
            out = paper_json(store, paper_id, "replaced" if existed else "ingested")
            if existed:
                out["message"] = (f"re-ingested {paper_id} (--force)" if force else
                                  f"replaced the earlier {paper_id}: the same file name "
                                  f"({given!r}) with new content")
            if paper_id != given:
                out["given_name"] = given
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    out["seconds"] = round(time.monotonic() - started, 2)
    return out


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
        clean_temps(settings, set())
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
    clear_ingest_journal(settings)
    clean_temps(settings, set())


def _split_each(settings, papers: list[Path], *, jobs: int, use_outline: bool, embedder=None):
    """``(path, ("ok", SplitResult | Prepared, seconds) | ("error", message, kind))`` for each
    of ``papers`` in order; with ``jobs`` > 1 the splitting runs in spawned worker processes
    (the batch's), at most ``jobs + 2`` papers ahead of the caller.  With an ``embedder`` the
    workers can copy (:func:`episteme.ingest.batch.worker_model`), they also chunk and embed
    each paper (its id is its raw/ name): the outcome is then a ready ``Prepared``."""
    args = (use_outline, settings.max_pages, settings.max_pdf_bytes)
    in_workers = worker_model(embedder, jobs) if embedder is not None else None
    if jobs <= 1 or len(papers) <= 1:
        for path in papers:
            yield path, split_job(str(path), *args)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=min(jobs, len(papers)), initializer=worker_init,
                               mp_context=multiprocessing.get_context("spawn"))
    try:
        ahead: list = []
        queue = list(papers)
        while queue or ahead:
            while queue and len(ahead) < jobs + 2:
                path = queue.pop(0)
                ahead.append((path, pool.submit(prepare_job, str(path), path.name, None,
                                                *args, *in_workers) if in_workers else
                              pool.submit(split_job, str(path), *args)))
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
        col = raw_collection(client, physical_name(settings, WIKI_SECTIONS, client))
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
    with wiki_lock(settings.wiki):
        _recover_raw_for_rebuild(settings)
        temps = remove_stale_temp_files(settings.wiki)  # a killed batch's pages, and the like
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
            store.checkpoint()
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
        **({"temp_files_removed": temps} if temps else {}),
        "seconds": round(time.monotonic() - started, 2),
    }
