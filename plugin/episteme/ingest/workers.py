"""The worker processes of a batch ingest (and of ``rebuild --jobs``): the slow, store-free part
of a paper -- split, and with the packaged ONNX model also chunk and embed -- run in spawned
processes (``spawn``: macOS and Windows have no usable ``fork``), returning picklable outcomes.

Why its own module: what runs in a worker must import nothing that writes, and the parent's
two users (:mod:`episteme.ingest.batch`, :func:`episteme.ingest.pipeline.rebuild`) share it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from ..errors import EpistemeError
from .ids import sha256_bytes
from .prepare import prepare_split, split_paper


def worker_init() -> None:
    """Set a worker up: Ctrl-C is the parent's to handle (it stops the batch and cleans up);
    anything a worker prints goes to stderr (stdout is the parent's JSON); and the worker exits
    as soon as the parent is gone (killed, crashed): its queues never tell it, so an orphan
    would otherwise wait forever, holding the terminal's pipes open."""
    import multiprocessing
    import signal
    import threading

    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    parent = multiprocessing.parent_process()
    if parent is not None:
        def watch() -> None:
            parent.join()  # returns when the parent process ends (a portable sentinel wait)
            os._exit(1)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _outcome(work) -> tuple:
    """``("ok", work(), seconds)``, or ``("error", message, kind)`` when it raises.  Errors
    travel as strings: an exception class with a custom ``__init__`` does not unpickle."""
    started = time.monotonic()
    try:
        result = work()
    except EpistemeError as e:
        return ("error", e.message, getattr(e, "kind", None))
    except Exception as e:  # noqa: BLE001 - a pypdf crash on one file must not end the batch
        return ("error", f"{type(e).__name__}: {e}", "corrupt")
    return ("ok", result, time.monotonic() - started)


def split_job(pdf: str, use_outline: bool, max_pages, max_bytes) -> tuple:
    """Runs in a worker: ``("ok", SplitResult, seconds)`` or ``("error", message, kind)``."""
    return _outcome(lambda: split_paper(Path(pdf), use_outline=use_outline, max_pages=max_pages,
                                        max_bytes=max_bytes))


_WORKER_EMBEDDERS: dict = {}  # a worker process's embedder, loaded by its first paper


def prepare_job(pdf: str, paper_id: str, sha: str | None, use_outline: bool, max_pages,
                 max_bytes, model: str, threads: int) -> tuple:
    """Runs in a worker: the whole slow part of one paper's ingest -- split, chunk, and embed
    its passages and its sentences (:mod:`episteme.ingest.sentences`) with the worker's own
    ``threads``-thread copy of the model -- so the parent only commits.  ``("ok", Prepared,
    seconds)`` or ``("error", message, kind)``; ``sha`` None: hashed here from ``pdf``.

    Why here and not in the parent: embedding is ~85% of a batch's CPU (sentences alone ~40%
    of it).  In the parent it ran serially beside the splitters on 2 onnxruntime threads;
    here every core embeds a paper on one thread of its own, with no per-operator hand-off
    between threads, and a core is never idle while the parent waits for a split."""
    def work():
        res = split_paper(Path(pdf), use_outline=use_outline, max_pages=max_pages,
                          max_bytes=max_bytes)
        emb = _WORKER_EMBEDDERS.get(model)
        if emb is None:
            from ..stores.embedding import OnnxEmbedder

            emb = _WORKER_EMBEDDERS[model] = OnnxEmbedder(name=model, threads=threads)
        digest = sha if sha is not None else sha256_bytes(Path(pdf).read_bytes())
        prepared = prepare_split(paper_id, res, digest, emb)
        prepared.embeddings = emb.encode(prepared.documents, batch_size=32, progress=False)
        return prepared

    return _outcome(work)


def worker_model(embedder, jobs: int) -> tuple[str, int] | None:
    """``(model name, threads per worker)`` when ``jobs`` worker processes can embed for the
    parent: its embedder is the packaged ONNX model (a worker loads its own copy in ~0.3 s;
    any other embedder -- sentence-transformers, a test's wrapper, the server's progress
    counter -- stays in the parent, which then embeds as before).  None otherwise."""
    from ..stores.embedding import OnnxEmbedder, usable_cores

    if jobs <= 1 or type(embedder) is not OnnxEmbedder:
        return None
    return embedder.name, max(1, usable_cores() // jobs)


class InlinePool:
    """``--jobs 1``: the same interface as the process pool, splitting in this process."""

    def submit(self, fn, *args):
        from concurrent.futures import Future

        f: Future = Future()
        f.set_result(fn(*args))
        return f

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def default_jobs() -> int:
    """Worker processes for splitting: one per core (the parent's embedding overlaps them)."""
    return max(1, min(os.cpu_count() or 1, 8))
