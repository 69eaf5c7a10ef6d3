"""What the app keeps warm and the work behind the routes that is not a library call:
:class:`Services` (settings, embedder, query engine, the writer queue; an upload's ingest and
wiki write as one job) and :func:`with_boxes` (highlight boxes for an answer's sources).
"""

import contextlib
import os
import sys
import threading
import time
from pathlib import Path

from ..errors import EpistemeError, MissingDependencyError
from .jobs import Job, JobQueue, ProgressEmbedder


class Services:
    """What the app keeps warm: settings, embedder, query engine, the writer queue."""

    def __init__(self, settings, *, token: str | None = None, write_mode: str | None = None):
        self.settings = settings
        self.token = (token or "").strip() or None  # a blank token is no token
        self.write_mode = write_mode
        timeout = float(os.environ.get("EPISTEME_JOB_TIMEOUT") or 900)
        self.jobs = JobQueue(timeout_s=timeout if timeout > 0 else None)
        self._engine = None
        self._engine_lock = threading.Lock()
        self.started = time.time()

    # warm-up ---------------------------------------------------------------------------
    def warm(self) -> None:
        """Load the embedder, the Chroma client and the query engine now, not on the first
        request (a failure here is reported by /health, not fatal: the wiki is still browsable)."""
        from ..stores.embedding import get_embedder
        from ..stores.vectors import make_client

        self.settings.wiki.mkdir(parents=True, exist_ok=True)
        get_embedder(self.settings)
        make_client(self.settings)
        with contextlib.suppress(EpistemeError, ImportError):
            engine = self.engine()
            engine.retriever.refresh()  # the wiki-section index, embedded now
            # one offline question (never an LLM call) runs every step once: the first user
            # question then meets warm caches instead of paying seconds for them
            engine.chat("What does this wiki cover?", mode="offline")

    @property
    def engine_loaded(self) -> bool:
        """Whether the query engine has been created (``/health`` reports it)."""
        return self._engine is not None

    def embedder(self):
        from ..stores.embedding import get_embedder

        return get_embedder(self.settings)

    def engine(self):
        """The process-wide query engine (created once, thread-safe per its docstring)."""
        with self._engine_lock:
            if self._engine is None:
                try:
                    from ..query.chat import QueryEngine
                except ImportError as e:
                    raise MissingDependencyError(
                        f"the query pipeline is not available ({e})"
                    ) from e
                self._engine = QueryEngine(self.settings)
            return self._engine

    # ingest ------------------------------------------------------------------------------
    def run_ingest(self, job: Job, upload: Path, name: str, *, force: bool,
                   write: bool, force_write: bool = False) -> dict:
        from ..ingest.pipeline import ingest_paper

        try:
            embedder = ProgressEmbedder(self.embedder(), job)
            job.progress("splitting")
            result = ingest_paper(self.settings, upload, force=force, progress=False, name=name,
                                  embedder=embedder, on_split=job.split_done, check=job.check)
        finally:
            with contextlib.suppress(FileNotFoundError):
                upload.unlink()
        job.paper = result["paper"]
        job.sections_total = result.get("sections_indexed")
        out = {"status": "ok", "ingest_status": result.get("status"), **without(result, "status")}
        out.setdefault("wiki_pages_updated", [])
        out.setdefault("new_sections", [])
        if write:
            out.update(self.write_wiki(job, result, force_write=force_write or force))
        self.after_write(job)
        return out

    def after_write(self, job: Job) -> None:
        """Bring the query side up to date inside the writer job, so the first chat after an
        ingest does not pay for it: the tracer sees the new passages, and the wiki-section
        index embeds the new sections now (a chat's own refresh then finds nothing to do)."""
        with self._engine_lock:
            engine = self._engine
        if engine is None:
            return
        job.progress("indexing")
        try:
            engine.reload()
            engine.retriever.refresh()
        except EpistemeError as e:  # not fatal: the next chat refreshes by itself
            print(f"episteme serve: refreshing the query index failed: {e.message}", file=sys.stderr)

    def write_wiki(self, job: Job, ingest_result: dict, *, force_write: bool = False) -> dict:
        """Run the wiki writer exactly as ``episteme ingest --write`` does
        (:func:`episteme.compile.writer.write_paper`: plan every section, then one locked batch)."""
        try:
            from ..compile.writer import write_paper
        except ImportError:
            return {"wiki": {"skipped": "the wiki writer is not installed in this build"}}
        n = int(ingest_result.get("sections_indexed") or 0)
        job.progress("writing", 0, n, "sections")
        try:
            out = write_paper(self.settings, ingest_result["paper"],
                              writer=self.write_mode or "auto", embedder=self.embedder(),
                              force=force_write)
        except EpistemeError as e:  # as the CLI says it: the stores have the paper, the wiki not
            e.args = (f"{ingest_result['paper']} is stored, but nothing was written to the wiki: "
                      f"{e.message}", *e.args[1:])
            raise
        job.progress("writing", n, n, "sections")
        return out


def with_boxes(settings, result: dict) -> dict:
    """Every source (and claim passage) of an answer gains ``boxes`` for its quote
    (:func:`episteme.pdf.highlight.attach_boxes`; [] when pypdfium2 or the PDF is missing)."""
    try:
        from ..pdf.highlight import attach_boxes
    except ImportError:
        return result
    import functools

    from ..stores.sqlite import passage_boxes

    return attach_boxes(settings.wiki, result, stored=functools.partial(passage_boxes, settings))


def without(d: dict, *keys: str) -> dict:
    """``d`` without ``keys`` (a copy)."""
    return {k: v for k, v in d.items() if k not in keys}
