"""Background ingests: :class:`Job` (progress in the running phase's unit), :class:`JobQueue`
(one writer thread per app, so ingests of one wiki never overlap) and :class:`ProgressEmbedder`
(the warm embedder, reporting passages embedded as it goes).

Why a single worker thread: ``fsutil.wiki_lock`` keeps other *processes* out and is re-entrant
per process, not per thread; the queue (and its ``write_lock``) is what keeps two requests of
this server apart.
"""

import bisect
import itertools
import sys
import threading
import time
import traceback
import uuid
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from ..errors import EpistemeError, NotFoundError
from .httperrors import JobStopped, error_body, status_for
from .shapes import JobJSON

__all__ = ["MAX_JOBS_KEPT", "Job", "JobQueue", "JobStopped", "ProgressEmbedder", "iso_time"]

MAX_JOBS_KEPT = 200


@dataclass
class Job:
    """One background ingest.  Progress is reported in the unit of the running phase:
    ``passages`` while embedding, ``sections`` while writing the wiki."""

    id: str
    kind: str
    paper: str
    status: str = "queued"  # queued | running | done | failed
    phase: str = "queued"
    done: int = 0
    total: int = 0
    unit: str = ""
    sections_done: int = 0
    sections_total: int | None = None
    result: dict | None = None
    error: dict | None = None
    http_status: int | None = None
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    future: Future | None = None
    timeout_s: float | None = None
    cancel_requested: bool = False
    batch: str | None = None  # the multi-file POST /ingest it came from
    file: str | None = None  # the uploaded file's name

    #: cumulative passage counts per section, in embedding order (set once the paper is split)
    _cum: list[int] = field(default_factory=list)

    def progress(self, phase: str, done: int = 0, total: int = 0, unit: str = "") -> None:
        self.phase, self.done, self.total, self.unit = phase, int(done), int(total), unit
        if unit == "sections":
            self.sections_done, self.sections_total = int(done), int(total)
        elif unit == "passages" and self._cum:
            # a section is done once all of its passages are embedded
            self.sections_done = bisect.bisect_right(self._cum, int(done))

    def check(self) -> None:
        """Called by the pipeline between its slow steps: stops the job when it was cancelled
        (``DELETE /jobs/{id}``) or has run past its timeout (``EPISTEME_JOB_TIMEOUT``).  Nothing
        is committed before the last check, so a stopped ingest leaves the stores as they were."""
        if self.cancel_requested:
            raise JobStopped("cancelled", f"job {self.id} was cancelled")
        if self.timeout_s and self.started and time.time() - self.started > self.timeout_s:
            raise JobStopped("timeout", f"job {self.id} ran past its timeout of "
                             f"{self.timeout_s:.0f} s (EPISTEME_JOB_TIMEOUT)")

    def split_done(self, passages_per_section: list[int]) -> None:
        self._cum = list(itertools.accumulate(passages_per_section))
        self.sections_total = len(passages_per_section)
        self.progress("embedding", 0, self._cum[-1] if self._cum else 0, "passages")

    def to_json(self) -> JobJSON:
        """The job as ``GET /jobs/{id}`` reports it."""
        out: JobJSON = {
            "job": self.id,
            "kind": self.kind,
            "paper": self.paper,
            "status": self.status,
            **({"batch": self.batch} if self.batch else {}),
            **({"file": self.file} if self.file else {}),
            "progress": {
                "phase": self.phase,
                "done": self.done,
                "total": self.total,
                "unit": self.unit,
                "sections_done": self.sections_done,
                "sections_total": self.sections_total,
            },
            "created_at": iso_time(self.created),
            "started_at": iso_time(self.started),
            "finished_at": iso_time(self.finished),
        }
        if self.started is not None:
            out["seconds"] = round((self.finished or time.time()) - self.started, 2)
        if self.result is not None:
            out["result"] = self.result
        if self.error is not None:
            out["error"] = self.error.get("error")
            out["http_status"] = self.http_status
            if "details" in self.error:
                out["details"] = self.error["details"]
        return out


def iso_time(t: float | None) -> str | None:
    """A timestamp as ISO 8601 in UTC, to the second (None stays None)."""
    if t is None:
        return None
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")


class JobQueue:
    """Jobs run one at a time on a single worker thread: the per-wiki writer queue."""

    def __init__(self, timeout_s: float | None = None) -> None:
        self.timeout_s = timeout_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="episteme-writer")
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self.write_lock = threading.Lock()

    def submit(self, kind: str, paper: str, fn, *, batch: str | None = None,
               file: str | None = None) -> Job:
        job = Job(id=uuid.uuid4().hex[:16], kind=kind, paper=paper, timeout_s=self.timeout_s,
                  batch=batch, file=file)
        with self._lock:
            self._jobs[job.id] = job
            self._trim()
        job.future = self._pool.submit(self._run, job, fn)
        return job

    def cancel(self, job_id: str) -> Job:
        """Cancel a queued job at once, or ask a running one to stop at its next check."""
        job = self.get(job_id)
        if job.status in ("queued", "running"):
            job.cancel_requested = True
            if job.status == "queued" and job.future is not None and job.future.cancel():
                job.status, job.finished = "cancelled", time.time()
                job.error = {"error": f"job {job.id} was cancelled before it started"}
                job.http_status = 409
        return job

    def _run(self, job: Job, fn) -> Job:
        job.status, job.started = "running", time.time()
        job.progress("starting")
        try:
            job.check()
            with self.write_lock:
                job.result = fn(job)
            job.status = "done"
            job.progress("done", job.total, job.total, job.unit)
        except BaseException as e:  # the job records every failure; the thread lives on
            job.status = "cancelled" if isinstance(e, JobStopped) and e.kind == "cancelled" \
                else "failed"
            job.http_status = status_for(e)
            job.error = error_body(e)
            if not isinstance(e, EpistemeError):
                print(f"episteme serve: job {job.id} failed:", file=sys.stderr)
                traceback.print_exc(file=sys.stderr)
        finally:
            job.finished = time.time()
        return job

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise NotFoundError(f"no job {job_id!r} (finished jobs are kept for a while, not forever)")
        return job

    def list(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def counts(self) -> dict[str, int]:
        out = {"queued": 0, "running": 0, "done": 0, "failed": 0, "cancelled": 0}
        for j in self.list():
            out[j.status] = out.get(j.status, 0) + 1
        return out

    def _trim(self) -> None:
        while len(self._jobs) > MAX_JOBS_KEPT:
            for jid, j in self._jobs.items():
                if j.status in ("done", "failed", "cancelled"):
                    del self._jobs[jid]
                    break
            else:
                return

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class ProgressEmbedder:
    """Wraps the warm embedder so a job can report ``passages`` embedded / total.  Encodes in
    slices (each slice length-sorted by the embedder as usual); the vectors are the same."""

    SLICE = 128

    def __init__(self, inner, job: Job):
        self._inner = inner
        self._job = job

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def encode(self, texts, batch_size: int = 32, progress: bool = False):
        return self.encode_counting(texts, "passages", batch_size)

    def encode_counting(self, texts, unit: str, batch_size: int = 32):
        """Encode ``texts`` reporting them as ``unit`` embedded / total: only ``passages``
        move the job's sections done (the answerer's sentence vectors are another count)."""
        import numpy as np

        texts = list(texts)
        self._job.progress("embedding", 0, len(texts), unit)
        if len(texts) <= self.SLICE:
            out = self._inner.encode(texts, batch_size=batch_size, progress=False)
            self._job.progress("embedding", len(texts), len(texts), unit)
            return out
        parts = []
        for start in range(0, len(texts), self.SLICE):
            self._job.check()
            parts.append(self._inner.encode(texts[start:start + self.SLICE],
                                            batch_size=batch_size, progress=False))
            self._job.progress("embedding", min(start + self.SLICE, len(texts)), len(texts), unit)
        return np.concatenate(parts, axis=0)
