"""Batch ingest: a folder (or list) of PDFs into one wiki, using both cores, one paper at a time
committed.

Why it is shaped like this:

- **The same commit as a single ingest.**  Every paper goes through
  :func:`episteme.ingest.commit.commit_paper` -- its own journal, its own SQLite transaction --
  so a batch killed at any point leaves every paper either fully in or fully out, and the
  next run (any ingest, remove or rebuild) rolls the interrupted one forward or back.  Re-run
  the same command to finish: what is in already is skipped by content hash (``unchanged``).
- **Both cores.**  The slow, store-free part of each paper runs in worker processes
  (``concurrent.futures.ProcessPoolExecutor`` with the ``spawn`` start method: macOS and
  Windows have no usable ``fork``): splitting the PDF and, with the packaged ONNX model,
  chunking and embedding its passages and its sentences on a thread of the worker's own
  (:func:`prepare_job`; embedding is most of an ingest's CPU).  The parent alone writes the
  stores, under the wiki lock.  With another embedder (or ``--jobs 1``) the workers only
  split, and the parent embeds the passages of every paper that finished splitting in one
  call.
- **A bad file is one failed entry, not a failed batch.**  Errors are collected per file
  with the reason; the caller exits 1 at the end if any failed.
- **Bounded.**  At most ``jobs + 2`` papers are in flight (temp copies, split results), so a
  library of thousands needs no more memory or disk than a handful.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EpistemeError
from ..fsutil import wiki_lock
from .commit import commit_paper, is_unchanged, paper_json, pending_journal, reconcile, stale_temps
from .ids import choose_id, read_pdf, sha256_bytes
from .prepare import Prepared, prepare_split, write_temp_copy
from .workers import InlinePool, default_jobs, prepare_job, split_job, worker_init, worker_model

EMBED_GROUP_PASSAGES = 2048  # embed at most this many passages in one call (memory bound)


@dataclass
class BatchItem:
    """One file of the batch and what became of it."""

    path: Path
    given: str  # the name its paper id derives from
    paper_id: str = ""
    sha: str = ""
    status: str = "pending"  # ingested | replaced | unchanged | duplicate | failed | interrupted
    error: str | None = None
    kind: str | None = None  # PdfError kind, when there is one
    meta: dict | None = None  # metadata that overrides what the PDF says (Zotero)
    tmp: Path | None = None
    result: dict = field(default_factory=dict)
    started: float = 0.0
    split_seconds: float = 0.0


def find_pdfs(paths: Iterable[str | os.PathLike], *, exclude: Path | None = None
              ) -> tuple[list[Path], list[dict]]:
    """The PDFs under ``paths`` (folders recursively, ``*.pdf`` in any letter case; files as
    given, whatever their name), each once, in a stable order; and one error entry per path that
    does not exist.  Hidden folders and anything under ``exclude`` (the wiki itself, whose
    ``raw/`` holds the stored copies) are skipped."""
    out: list[Path] = []
    errors: list[dict] = []
    seen: set[str] = set()
    ex = exclude.resolve() if exclude is not None else None

    def add(p: Path) -> None:
        key = os.path.normcase(str(p.resolve()))
        if key not in seen and not (ex is not None and (p.resolve() == ex or ex in p.resolve().parents)):
            seen.add(key)
            out.append(p)

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [Path(root) / f for f in files
                          if f.lower().endswith(".pdf") and not f.startswith(".")]
            for f in sorted(found, key=lambda q: q.as_posix()):
                add(f)
        elif p.exists():
            add(p)
        else:
            errors.append({"file": str(raw), "error": f"no such file or folder: {raw}",
                           "kind": "not_found"})
    return out, errors


# ----------------------------------------------------------------------------------- batch


def ingest_batch(settings, paths: Iterable[str | os.PathLike], *, jobs: int | None = None,
                 force: bool = False, use_outline: bool = True, progress: bool = True,
                 embedder=None, metadata: dict[str, dict] | None = None,
                 names: dict[str, str] | None = None,
                 after_commit: Callable[[dict], dict | None] | None = None,
                 files: list[Path] | None = None) -> dict:
    """Ingest every PDF under ``paths`` (see the module docstring); returns the summary JSON.

    ``metadata`` maps a file's path (``str(path)``) to ``{"title", "authors", "meta"}`` that
    replace what the splitter read from the PDF (Zotero's record is better than a guess);
    ``names`` maps a path to the name its paper id derives from (else the file name).
    ``after_commit(row)`` runs on each stored paper, outside the lock (``--write``), in the
    batch's input order whatever order the workers finish in (:class:`OrderedWrites`); what
    it returns is merged into that paper's row.  ``files`` skips the folder walk."""
    started = time.monotonic()
    metadata = metadata or {}
    names = names or {}
    if files is None:
        files, missing = find_pdfs(paths, exclude=settings.wiki)
    else:
        missing = []
    if pending_journal(settings) is not None or stale_temps(settings):
        with wiki_lock(settings.wiki):
            reconcile(settings)
    items = _plan(settings, files, names, metadata, force, sha256_bytes)
    todo = [it for it in items if it.status == "pending"]
    counters = {"sections": 0}
    bar = None

    def report(it: BatchItem) -> None:
        """One status line per file on stderr (above the bar), then the bar moves on."""
        from ..cliutil import sanitize_terminal

        line = {"failed": f"FAILED     {it.path}: {it.error}",
                "unchanged": f"unchanged  {it.path}",
                "duplicate": f"duplicate  {it.path} (same bytes as {it.result.get('same_as')})"
                }.get(it.status)
        if line is None:
            line = (f"{it.status:<10} {it.path} -> {it.paper_id} "
                    f"({it.result.get('sections_indexed', 0)} sections, "
                    f"{it.result.get('passages', 0)} passages)")
        if bar is None:
            print(sanitize_terminal(line), file=sys.stderr, flush=True)
            return
        bar.write(sanitize_terminal(line), file=sys.stderr)
        bar.set_postfix(sections=counters["sections"], refresh=False)
        bar.update(1)

    writes = OrderedWrites(items, after_commit)
    for it in items:  # known before any work: listed first, and not in the bar's rate (ETA)
        if it.status != "pending":  # (an unchanged paper a killed batch never wrote: written now)
            writes.final_item(it)
            report(it)
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(items), initial=len(items) - len(todo), desc="ingest", unit="file",
                   file=sys.stderr, dynamic_ncols=True)
        bar.set_postfix(sections=0)
    interrupted = False
    try:
        if todo:
            _run(settings, todo, jobs=jobs or default_jobs(), use_outline=use_outline,
                 embedder=embedder, force=force, report=report, counters=counters,
                 writes=writes)
    except KeyboardInterrupt:
        interrupted = True
        for it in todo:
            if it.status == "pending":
                it.status = "interrupted"
    finally:
        for it in todo:
            if it.tmp is not None:
                with contextlib.suppress(OSError):
                    it.tmp.unlink()
        if bar is not None:
            bar.close()
    return _summary(items, missing, started, interrupted)


def _plan(settings, files: list[Path], names: dict, metadata: dict, force: bool,
          sha256_bytes) -> list[BatchItem]:
    """Hash every file and choose its paper id; mark what is already in (``unchanged``), a
    second copy of bytes seen before (``duplicate``) and what cannot be read (``failed``).

    Ids: as :func:`episteme.ingest.pipeline.paper_id_for` gives a single ingest, except that two
    different files of one batch that would share an id (``a/paper.pdf``, ``b/paper.pdf``) do
    not: the later one (in path order, so a re-run agrees) is named ``<folder>-<name>``."""
    from ..stores.sqlite import open_store
    store = None
    if settings.sqlite_path.exists():
        with contextlib.suppress(EpistemeError):
            store = open_store(settings, readonly=True)
    try:
        stored_sha: dict[str, str] = {}
        if store is not None:
            for pid, sha in store.paper_hashes().items():
                stored_sha.setdefault(sha, pid)
        claimed: dict[str, Path] = {}
        seen_sha: dict[str, str] = {}
        items = []
        for path in files:
            it = BatchItem(path=path, given=names.get(str(path)) or path.name,
                           meta=metadata.get(str(path)))
            items.append(it)
            try:
                it.sha = sha256_bytes(read_pdf(path, settings.max_pdf_bytes))
            except EpistemeError as e:
                it.status, it.error, it.kind = "failed", e.message, getattr(e, "kind", None)
                continue
            pid = choose_id(settings, it.given, store)
            if pid.lower() in claimed and claimed[pid.lower()] != path:
                it.given = f"{path.parent.name}-{it.given}"
                pid = choose_id(settings, it.given, store)
            claimed[pid.lower()] = path
            it.paper_id = pid
            row = store.paper(pid) if store is not None else None
            same = bool(row and row["sha256"] == it.sha and (settings.raw_dir / pid).is_file())
            if same and not force:
                it.status = "unchanged"
                it.result = paper_json(store, pid, "unchanged")
                if it.meta and _meta_differs(row, it.meta):
                    it.status = "pending"  # same bytes, new Zotero record: update the rows
                    it.result = {}
            elif it.sha in seen_sha or (stored_sha.get(it.sha) not in (None, pid)):
                it.status = "duplicate"
                it.result = {"same_as": seen_sha.get(it.sha) or stored_sha[it.sha]}
            seen_sha.setdefault(it.sha, pid)
        return items
    finally:
        if store is not None:
            store.close()


def _meta_differs(row: dict, meta: dict) -> bool:
    want = apply_metadata_dict(row, meta)
    return (want["title"], want["authors"], want["meta"]) != (
        row.get("title"), list(row.get("authors") or []), dict(row.get("meta") or {}))


def apply_metadata_dict(row: dict, meta: dict) -> dict:
    """``title``/``authors``/``meta`` of a stored or split paper with ``meta`` laid over them
    (a field ``meta`` leaves out or empty keeps the PDF's value)."""
    return {"title": meta.get("title") or row.get("title"),
            "authors": list(meta.get("authors") or row.get("authors") or []),
            "meta": {**dict(row.get("meta") or {}),
                     **{k: v for k, v in (meta.get("meta") or {}).items() if v}}}


def _run(settings, todo: list[BatchItem], *, jobs: int, use_outline: bool, embedder, force: bool,
         report, counters: dict, writes: OrderedWrites) -> None:
    """Split in the pool, embed and commit here, keeping ``jobs + 2`` papers in flight."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from ..stores.embedding import get_embedder

    embedder = embedder or get_embedder(settings)
    in_workers = worker_model(embedder, jobs) if len(todo) > 1 else None
    if jobs > 1 and len(todo) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(max_workers=min(jobs, len(todo)), initializer=worker_init,
                                   mp_context=multiprocessing.get_context("spawn"))
    else:
        pool = InlinePool()
    queue = list(todo)
    inflight: dict = {}
    window = jobs + 2
    try:
        while queue or inflight:
            while queue and len(inflight) < window:
                it = queue.pop(0)
                if _stage(settings, it):
                    it.started = time.monotonic()
                    args = (use_outline, settings.max_pages, settings.max_pdf_bytes)
                    fut = (pool.submit(prepare_job, str(it.tmp), it.paper_id, it.sha, *args,
                                       *in_workers) if in_workers else
                           pool.submit(split_job, str(it.tmp), *args))
                    inflight[fut] = it
                else:
                    writes.final_item(it)
                    report(it)
            done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
            ready = []
            for fut in [f for f in inflight if f in done]:  # submission order
                it = inflight.pop(fut)
                try:
                    outcome = fut.result()
                except Exception as e:  # noqa: BLE001 - a worker died (killed, out of memory)
                    outcome = ("error", f"the splitter process failed: {type(e).__name__}: {e}",
                               None)
                if outcome[0] == "error":
                    it.status, it.error, it.kind = "failed", outcome[1], outcome[2]
                    writes.final_item(it)
                    report(it)
                    continue
                it.split_seconds = outcome[2]
                ready.append((it, outcome[1]))
            if ready:
                _embed_and_commit(settings, ready, embedder, force=force, report=report,
                                  counters=counters, writes=writes)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _stage(settings, it: BatchItem) -> bool:
    """Copy the file to a private temp file (what is split and then renamed into raw/), checking
    it still has the bytes that were planned; False (and the item failed) when it cannot."""
    try:
        data = read_pdf(it.path, settings.max_pdf_bytes)
    except EpistemeError as e:
        it.status, it.error, it.kind = "failed", e.message, getattr(e, "kind", None)
        return False
    it.sha = sha256_bytes(data)  # what is stored is what was read now
    try:
        it.tmp = write_temp_copy(settings, it.paper_id, data)
    except EpistemeError as e:
        it.status, it.error = "failed", e.message
        return False
    return True


def _embed_and_commit(settings, ready: list, embedder, *, force: bool, report, counters: dict,
                      writes: OrderedWrites) -> None:
    """Commit the papers of ``ready`` one by one: each either prepared and embedded by a worker
    (:func:`prepare_job`), or split only, then chunked here and the passages of all of them
    embedded in one call."""
    import numpy as np

    prepared = []
    for it, res in ready:
        try:
            p = res if isinstance(res, Prepared) else prepare_split(it.paper_id, res, it.sha,
                                                                    embedder)
        except EpistemeError as e:
            it.status, it.error = "failed", e.message
            writes.final_item(it)
            report(it)
            continue
        if it.meta:
            over = apply_metadata_dict({"title": p.paper.title, "authors": p.paper.authors,
                                        "meta": p.paper.meta}, it.meta)
            p.paper.title, p.paper.authors, p.paper.meta = (over["title"], over["authors"],
                                                           over["meta"])
        prepared.append((it, p))
    groups: list[list] = [[]]
    n = 0
    for pair in prepared:
        if groups[-1] and n + len(pair[1].documents) > EMBED_GROUP_PASSAGES:
            groups.append([])
            n = 0
        groups[-1].append(pair)
        n += len(pair[1].documents)
    for group in groups:
        if not group:
            continue
        todo = [p for _, p in group if p.embeddings is None]
        if todo:
            docs = [d for p in todo for d in p.documents]
            vecs = embedder.encode(docs, batch_size=32, progress=False)
            at = 0
            for p in todo:
                p.embeddings = np.asarray(vecs[at:at + len(p.documents)])
                at += len(p.documents)
        _commit_group(settings, group, embedder, force=force)
        for it, _p in group:
            if it.status in ("ingested", "replaced"):
                counters["sections"] += int(it.result.get("sections_indexed", 0))
            writes.final_item(it)  # written now if every paper before it is done
            report(it)


class OrderedWrites:
    """Runs the wiki writer on the batch's papers in the batch's own order (its input order),
    whatever order the workers finish them in.

    Why: the writer numbers sections and links each paper to the pages already written, so
    writing in completion order made two runs of one batch (``--jobs 2``, or a killed run
    resumed) write different section ids and different "Related" links.  Each item is marked
    final once (stored, failed, unchanged ...); the items before it that are final are written
    first, and an item whose predecessor never became final (the batch was interrupted) is left
    for the re-run, which writes it in the same order."""

    def __init__(self, items: list[BatchItem], after_commit) -> None:
        self.items = items
        self.after_commit = after_commit
        self.final: set[int] = set()
        self.next = 0

    def final_item(self, it: BatchItem) -> None:
        """``it`` will not change any more: write what is now in order."""
        self.final.add(id(it))
        while self.next < len(self.items) and id(self.items[self.next]) in self.final:
            cur = self.items[self.next]
            self.next += 1
            if self.after_commit is not None and cur.status in ("ingested", "replaced", "unchanged"):
                _after(cur, self.after_commit)


def _after(it: BatchItem, after_commit) -> None:
    """Run ``after_commit`` (the wiki writer) on a stored paper; its error fails the item (the
    stores keep the paper: the summary says ``stored``)."""
    try:
        extra = after_commit({"paper": it.paper_id, **it.result})
    except EpistemeError as e:
        it.result["write_error"] = e.message
        it.status, it.error = "failed", e.message
    else:
        it.result.update({k: v for k, v in (extra or {}).items() if k not in ("status", "paper")})


def _commit_group(settings, group: list, embedder, *, force: bool) -> None:
    """Commit each paper of ``group`` (one journal each) under one taking of the wiki lock."""
    from ..stores.sqlite import open_store
    from ..stores.vectors import open_vectors
    with wiki_lock(settings.wiki), open_store(settings) as store:
        reconcile(settings, store=store)
        vectors = open_vectors(settings, embedder)
        for it, p in group:
            if not force and not it.meta and is_unchanged(settings, it.paper_id, it.sha,
                                                           store=store):
                it.status = "unchanged"  # another process stored the same bytes meanwhile
                it.result = paper_json(store, it.paper_id, "unchanged")
                continue
            existed = store.paper(it.paper_id) is not None or (
                settings.raw_dir / it.paper_id).exists()
            try:
                commit_paper(settings, store, vectors, p, it.tmp)
            except EpistemeError as e:
                it.status, it.error = "failed", e.message
                continue
            it.tmp = None
            it.result = paper_json(store, it.paper_id, "replaced" if existed else "ingested")
            it.status = it.result["status"]
            if it.paper_id != it.given:
                it.result["given_name"] = it.given
            it.result["seconds"] = round(time.monotonic() - it.started, 2)


def _summary(items: list[BatchItem], missing: list[dict], started: float,
             interrupted: bool) -> dict:
    """The batch's JSON: per-paper rows (what a single ingest prints, plus ``file``), the
    failures with their reasons, and counts.  ``failed`` has the same shape as ``rebuild``'s."""
    rows, failed = [], list(missing)
    counts = dict.fromkeys(("ingested", "replaced", "unchanged", "duplicate", "failed"), 0)
    for it in items:
        counts[it.status] = counts.get(it.status, 0) + 1
        if it.status == "failed":
            failed.append({"file": str(it.path), "error": it.error,
                           **({"kind": it.kind} if it.kind else {}),
                           **({"paper": it.paper_id, "stored": True}
                              if it.result.get("write_error") else {})})
            continue
        if it.status == "interrupted":
            continue
        rows.append({"status": it.status, "paper": it.paper_id, "file_given": str(it.path),
                     **{k: v for k, v in it.result.items() if k not in ("status", "paper")}})
    counts["failed"] = len(failed)
    return {
        "status": "interrupted" if interrupted else ("failed" if failed else "ok"),
        "files": len(items) + len(missing),
        "counts": counts,
        "sections": sum(int(r.get("sections_indexed") or 0) for r in rows
                        if r["status"] in ("ingested", "replaced")),
        "seconds": round(time.monotonic() - started, 2),
        "papers": rows,
        "failed": failed,
    }
