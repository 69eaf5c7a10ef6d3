"""One paper's change to the three stores (``raw/``, SQLite, Chroma), all or nothing: the
ingest commit shared by a single ingest and a batch, the removal, the journal that makes both
recoverable, and the recovery that replays it.

The order of an ingest commit, under :func:`episteme.fsutil.wiki_lock`:

1. SQLite: one transaction replaces the paper's rows (not yet committed);
2. Chroma: the paper's old vectors are saved, deleted, and the new ones added;
3. raw/: the old file (if any) is moved aside, the temp copy renamed into place;
4. SQLite commit.

Any exception in 1-4 rolls SQLite back, puts the saved vectors back and restores ``raw/``, so
``raw/``, SQLite and Chroma are exactly as before.

Why one module: commit, remove and the crash recovery (journal replay, temp clean-up) must all
follow that one write order; split apart, a step could be added to one path and not to its
recovery.  The preparation before it (read, split, embed) is elsewhere
(:mod:`episteme.ingest.prepare`), and so is what calls it (:mod:`episteme.ingest.pipeline`,
:mod:`episteme.ingest.batch`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from ..errors import EpistemeError, NotFoundError, WriteError
from ..fsutil import (
    clear_journal,
    crash_point,
    pid_alive,
    read_journal,
    wiki_lock,
    write_error,
    write_journal,
)
from .ids import paper_id_for
from .prepare import OBJECT_KINDS, Prepared, tmp_dir


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
    counts = store.passage_counts(paper_id)
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


def is_unchanged(settings, paper_id: str, sha: str, *, store=None) -> bool:
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
    try:
        data = read_journal(settings.data_dir, JOURNAL)
    except OSError:
        return {"op": "unreadable"}
    return {"op": "unreadable"} if isinstance(data, str) else data


def record_journal(settings, journal: dict) -> None:
    """Write the ingest journal: the change it describes is now in progress."""
    write_journal(settings.data_dir, JOURNAL, journal)


def clear_ingest_journal(settings) -> None:
    """The change finished (or was undone): delete the journal."""
    clear_journal(settings.data_dir, JOURNAL)


def stage_vectors(path: Path, saved: dict) -> None:
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


def stale_temps(settings) -> bool:
    """Temp copies or backups a killed ingest left behind (cleaned by :func:`reconcile`)."""
    tmp = settings.data_dir / "tmp"
    with contextlib.suppress(OSError):
        if any(tmp.iterdir()):
            return True
    with contextlib.suppress(OSError):
        return any(f.startswith(".") and f.endswith(".bak") for f in os.listdir(settings.raw_dir))
    return False


def clean_temps(settings, keep: set[str]) -> list[str]:
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
            if old or pid is None or not pid_alive(pid) or backups_only:
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(str(path.relative_to(settings.wiki))
                                   if settings.wiki in path.parents else str(path))
    return removed


def raw_passages(settings):
    """The passage collection without binding it to a model (recovery must work whatever the
    configured embedder is); ``None`` when it does not exist."""
    from ..stores.vectors import PASSAGES, make_client, physical_name

    client = make_client(settings)
    return raw_collection(client, physical_name(settings, PASSAGES, client))


def set_paper_vectors(settings, paper_id: str, staged: dict | None, model: str | None, *,
                      drop_ids: Iterable[str] = ()) -> None:
    """Make the passage collection hold exactly ``staged`` for ``paper_id``.  ``drop_ids``: ids
    to delete by id as well (the vectors an undone ingest added).  Why by id: after a failed
    write (a full disk: "Error in compaction") Chroma keeps the add in its log without its
    metadata, so a delete by ``paper`` finds nothing, and the log, applied at the next open,
    brings the vectors back; a delete by id is logged after the add and wins."""
    from ..stores.vectors import PASSAGES, add_in_batches, make_client, mark_written, physical_name

    col = raw_passages(settings)
    ids = list((staged or {}).get("ids") or [])
    if col is None:
        if not ids:
            return
        dim = int(staged["embeddings"].shape[1])
        col = make_client(settings).get_or_create_collection(
            physical_name(settings, PASSAGES), configuration={"hnsw": {"space": "cosine"}},
            metadata={"embedding_model": model, "dim": dim}, embedding_function=None)
    col.delete(where={"paper": paper_id})
    drop = list(dict.fromkeys(drop_ids))  # also ids re-added below: the log then ends with the old vector
    for start in range(0, len(drop), 5000):
        col.delete(ids=drop[start:start + 5000])
    if ids:
        add_in_batches(col, ids, staged["embeddings"], staged["metadatas"], staged["documents"])
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
            clear_ingest_journal(settings)  # unreadable: the stores are checked by lint --stores
            return {"journal": "unreadable, removed (run `episteme lint --stores`)"}
        own = store is None
        if own:
            from ..stores.sqlite import open_store

            store = open_store(settings)
        try:
            done = replay(settings, store, journal)
        finally:
            if own:
                store.close()
        clear_ingest_journal(settings)
        print(f"episteme: recovered an interrupted {journal['op']} of {journal['paper']} "
              f"({done['action']})", file=sys.stderr)
    removed = clean_temps(settings, keep)
    if removed:
        done = {**(done or {}), "temp_files_removed": removed}
    return done


def replay(settings, store, j: dict, *, committed: bool | None = None) -> dict:
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
    want: set[str] | None = set()  # the paper's vector ids Chroma must hold afterwards
    if committed:
        if j["op"] == "ingest":
            tmp = Path(j["tmp"])
            if not target.exists() and tmp.exists():
                os.replace(tmp, target)
            want = None  # vectors already in place when nothing is staged
            if staged_new is not None and staged_new.exists():
                new = _load_staged(staged_new)
                set_paper_vectors(settings, paper_id, new, j.get("model"))
                want = set(new.get("ids") or [])
        else:
            set_paper_vectors(settings, paper_id, None, None)
        with contextlib.suppress(FileNotFoundError):
            backup.unlink()
        action = "rolled forward"
    else:
        if backup.exists():
            os.replace(backup, target)
        elif j["op"] == "ingest" and not j.get("had_raw") and target.exists():
            target.unlink()  # the new file was placed; no old one existed
        old = _load_staged(staged_old) if staged_old and staged_old.exists() else None
        added = _load_staged(staged_new)["ids"] if staged_new and staged_new.exists() else []
        set_paper_vectors(settings, paper_id, old, j.get("model"), drop_ids=added)
        want = set((old or {}).get("ids") or [])
        action = "rolled back"
    if want is not None:
        _check_vectors(settings, paper_id, want)
    for f in (staged_old, staged_new):
        if f is not None:
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
    return {"op": j["op"], "paper": paper_id, "action": action}


def _check_vectors(settings, paper_id: str, want: set[str]) -> None:
    """After a replay: Chroma holds exactly ``want`` for ``paper_id``, or an error (so the
    journal stays and the next run replays it again).  Why: a Chroma that failed mid-write
    (a full disk: "Error in compaction") can report an undo done and still hold the vectors,
    leaving a paper in Chroma that SQLite does not have."""
    col = raw_passages(settings)
    have = set(col.get(where={"paper": paper_id}, include=[])["ids"]) if col is not None else set()
    if have != want:
        raise EpistemeError(f"Chroma holds {len(have)} vectors of {paper_id} after the "
                            f"recovery, not the {len(want)} expected; the next ingest, remove "
                            "or `episteme rebuild` tries again")


# Free space an ingest commit asks for before it changes anything (issue 36: on a full disk
# Chroma fails mid-write -- "Error in compaction" -- or waits forever; measured with
# benchmarks/full_disk.py on a 64 MB tmpfs: with 0.9 MB free Chroma hung, with 1.2 MB it failed,
# with 2.5 MB a 0.6 MB paper went in).  A floor, plus a multiple of what the paper adds (its PDF,
# the staged old and new vectors, Chroma's and SQLite's copies of its passages).
MIN_FREE_BYTES = 16 * 1024 * 1024
FREE_PER_PAYLOAD_BYTE = 4


def ensure_free_space(settings, payload_bytes: int) -> None:
    """Refuse (nothing changed, one clear line) when the wiki's disk has less free space than an
    ingest of ``payload_bytes`` needs (:data:`MIN_FREE_BYTES` + :data:`FREE_PER_PAYLOAD_BYTE`
    per byte): better than a store failing half-way, or Chroma hanging, on a full disk."""
    import shutil

    need = MIN_FREE_BYTES + FREE_PER_PAYLOAD_BYTE * max(0, int(payload_bytes))
    try:
        free = shutil.disk_usage(settings.data_dir if settings.data_dir.exists() else settings.wiki).free
    except OSError:
        return  # cannot tell: let the write itself say
    if free < need:
        raise WriteError(f"not enough free space on the wiki's disk for this ingest "
                         f"({free // 1024} KB free, about {need // 1024} KB needed); nothing "
                         "was stored: free some space and run it again",
                         errno=errno.ENOSPC)


def payload_size(prepared: Prepared, tmp: Path | None) -> int:
    """What one paper adds to the stores, roughly: its PDF, its vectors and passage texts."""
    emb = getattr(prepared.embeddings, "nbytes", 0) or 0
    pdf = tmp.stat().st_size if tmp is not None and tmp.exists() else 0
    return int(pdf + emb + sum(len(d) for d in prepared.documents))


def commit_paper(settings, store, vectors, prepared: Prepared, tmp: Path) -> None:
    """Change raw/, Chroma and SQLite for one paper, journalled (see above); any exception undoes
    every change (and a crash is undone or finished by the next :func:`reconcile`).  Caller
    holds the lock."""
    paper_id = prepared.paper.id
    raw_dir = settings.raw_dir
    target = raw_dir / paper_id
    nonce = f"{os.getpid()}.{time.time_ns()}"
    backup = raw_dir / f".{paper_id}.{nonce}.bak"
    tmpdir = tmp_dir(settings)
    old_file, new_file = tmpdir / f"old.{nonce}.npz", tmpdir / f"new.{nonce}.npz"
    ensure_free_space(settings, payload_size(prepared, tmp))
    saved = vectors.paper_vectors(paper_id)
    journal = {"op": "ingest", "paper": paper_id, "sha256": prepared.paper.sha256,
               "ingested_at": prepared.paper.ingested_at, "tmp": str(tmp),
               "backup": str(backup), "had_raw": target.exists(), "model": vectors.model_name,
               "old_vectors": str(old_file), "new_vectors": str(new_file)}
    try:  # nothing is changed yet: a full disk here leaves no file behind
        stage_vectors(old_file, saved)
        stage_vectors(new_file, {"ids": prepared.ids, "embeddings": prepared.embeddings,
                                  "metadatas": prepared.metadatas, "documents": prepared.documents})
        record_journal(settings, journal)
    except OSError as e:
        for f in (old_file, new_file):
            with contextlib.suppress(OSError):
                f.unlink()
        raise write_error(e, Path(e.filename).name if e.filename else "the ingest journal",
                          f"nothing of {paper_id} was stored") from e
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
                replay(settings, store, journal, committed=False)
                clear_ingest_journal(settings)
            except Exception as e:  # the journal stays: the next run finishes the undo
                errors.append(f"undoing the ingest failed ({type(e).__name__}: {e}); the next "
                              "ingest, remove or `episteme rebuild` finishes the undo")
        if isinstance(exc, Exception) and not isinstance(exc, EpistemeError):
            # a store failure (Chroma server gone, disk full...): one clear line, not a traceback
            if errors:
                raise EpistemeError(f"ingest of {paper_id} failed ({type(exc).__name__}: {exc}); "
                                    f"{errors[0]}") from exc
            raise EpistemeError(
                f"ingest of {paper_id} failed and was undone: {type(exc).__name__}: {exc}"
            ) from exc
        for msg in errors:
            print(f"warning: {msg}", file=sys.stderr)
        raise
    clear_ingest_journal(settings)
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

    with wiki_lock(settings.wiki), open_store(settings) as store:
        reconcile(settings, store=store)
        paper_id = _resolve_paper(settings, store, paper)
        row = store.paper(paper_id)
        n_sections = len(store.sections(paper_id)) if row else 0
        n_passages = len(store.passages(paper_id=paper_id)) if row else 0
        # Vectors: the collection may be bound to another model; removal must work regardless.
        col = raw_passages(settings)
        saved = col.get(where={"paper": paper_id}, include=["embeddings", "metadatas", "documents"]) if col else None
        target = settings.raw_dir / paper_id
        nonce = f"{os.getpid()}.{time.time_ns()}"
        backup = settings.raw_dir / f".{paper_id}.{nonce}.bak"
        old_file = tmp_dir(settings) / f"old.{nonce}.npz"
        stage_vectors(old_file, saved or {})
        journal = {"op": "remove", "paper": paper_id, "backup": str(backup),
                   "old_vectors": str(old_file),
                   "model": (col.metadata or {}).get("embedding_model") if col else None}
        record_journal(settings, journal)
        moved = False
        store.begin()
        try:
            store.delete_paper(paper_id)
            if saved and saved["ids"]:
                set_paper_vectors(settings, paper_id, None, None)
                crash_point("remove:chroma-deleted")
            if target.exists():
                os.replace(target, backup)
                moved = True
            store.commit()
            crash_point("remove:sqlite-committed")
        except BaseException:
            store.rollback()
            replay(settings, store, journal, committed=False)
            clear_ingest_journal(settings)
            raise
        clear_ingest_journal(settings)
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


def raw_collection(client, name: str):
    """Chroma collection ``name`` as stored, not bound to an embedding model (``None`` when it
    does not exist): recovery and rebuild must work whatever the configured model is."""
    try:
        return client.get_collection(name, embedding_function=None)
    except Exception:
        return None
