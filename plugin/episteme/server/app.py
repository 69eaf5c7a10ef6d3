"""The HTTP API and web UI: ``create_app(settings)`` builds a FastAPI app over one wiki.

Why it looks like this:

- **Same code paths as the CLI.**  ``POST /ingest`` runs :func:`episteme.ingest.pipeline.ingest_paper`
  and then the same wiki-writer call as ``episteme ingest --write``; ``POST /chat`` calls the
  query engine of :mod:`episteme.query.chat`; ``GET /graph`` returns
  :func:`episteme.graph.run.graph_query`'s JSON.  Nothing here re-implements a pipeline.
- **Warm.**  The embedder, the Chroma client and the query engine are loaded once (at start-up
  when ``warm=True``) and kept in the app state; every request reuses them.
- **Writers serialized.**  Ingests run as jobs on one worker thread per app (a queue), and that
  worker also holds an in-process lock around the write; inside, the pipeline takes the wiki's
  ``flock`` as always, which keeps other processes out.  ``fsutil.wiki_lock`` is re-entrant per
  *process*, not per thread, so the in-process serialization is what keeps two threads apart.
- **Safe by default.**  Loopback only unless a bearer token is configured; upload bytes are
  checked as a PDF (header/``%%EOF``) and against size and page limits before anything is
  stored; uploaded names go through ``ingest.paper_id_for``; page paths through ``safe_join``;
  every error is ``{"error": message}`` with a meaningful status, never a stack trace.

Why one module: the routes share the app state (:class:`Services`, :class:`JobQueue`) and one
error mapping (:func:`status_for`, :func:`error_body`); the work behind each route lives in the
library packages.
"""

import asyncio
import bisect
import contextlib
import hmac
import ipaddress
import itertools
import os
import sys
import threading
import time
import traceback
import uuid
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from .. import __version__
from ..errors import EpistemeError, MissingDependencyError, NotFoundError, UsageError

STATIC_DIR = Path(__file__).with_name("static")
MAX_JOBS_KEPT = 200
UPLOAD_CHUNK = 1024 * 1024
#: multipart framing around the file; a Content-Length above limit + this is refused unread
MULTIPART_SLACK = 64 * 1024
#: files one ``POST /ingest`` may carry (each within the per-file size limit); the request body
#: may be up to this many times that limit
MAX_UPLOAD_FILES = int(os.environ.get("EPISTEME_MAX_UPLOAD_FILES") or 16)
PUBLIC_PATHS = frozenset({"/", "/health", "/docs", "/openapi.json", "/docs/oauth2-redirect",
                          "/favicon.ico"})


# ------------------------------------------------------------------------------------- safety


def is_loopback(host: str) -> bool:
    """True for hosts only this machine can reach (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a bearer token (anyone on the network could
    otherwise write to the wiki and spend the LLM budget)."""
    if not is_loopback(host) and not token:
        raise UsageError(
            f"refusing to listen on {host} without a token: pass --token T "
            "(or set EPISTEME_TOKEN), or bind 127.0.0.1"
        )


def _host_name(value: str) -> str:
    """``host[:port]`` / ``[v6]:port`` / a URL's netloc -> the bare host name, lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _browser_guard(request, token: str | None) -> str | None:
    """Why a request that a *web page* could have sent must be refused, or None.

    A server on 127.0.0.1 is reachable from any page the user's browser opens: a form on a
    hostile site can POST a multipart upload here without any CORS preflight, and a DNS
    rebinding attack makes a hostile name resolve to 127.0.0.1.  So: without a token, the Host
    header must be a loopback name; and a state-changing request that carries an Origin must
    come from this very origin (our UI always does)."""
    from urllib.parse import urlsplit

    host = request.headers.get("host", "")
    if not token and host and not is_loopback(_host_name(host)):
        return f"host {host!r} refused: this server only answers to loopback names"
    origin = request.headers.get("origin")
    if origin and request.method not in ("GET", "HEAD", "OPTIONS"):
        parts = urlsplit(origin)
        if origin == "null" or parts.netloc.lower() != host.lower():
            return "cross-origin request refused"
    return None


def status_for(err: BaseException) -> int:
    """The HTTP status for an error, from its type (never from parsing its message)."""
    from ..pdf.split import PdfError

    if isinstance(err, PdfError):
        return 413 if err.kind == "too_large" else 422
    try:
        from ..llm.client import LLMError
    except Exception:  # pragma: no cover - llm is part of the package
        LLMError = ()  # type: ignore[assignment]
    if LLMError and isinstance(err, LLMError):
        return 503 if getattr(err, "status", None) in (None, 429, 529) else 502
    if isinstance(err, JobStopped):
        return 409 if err.kind == "cancelled" else 504
    if isinstance(err, NotFoundError):
        return 404
    if isinstance(err, UsageError):
        return 400
    if isinstance(err, MissingDependencyError):
        return 503
    if isinstance(err, EpistemeError):
        return 422
    return 500


def error_body(err: BaseException) -> dict:
    if isinstance(err, EpistemeError):
        body: dict[str, Any] = {"error": err.message}
        if err.details:
            body["details"] = err.details
        return body
    return {"error": "internal error; see the server log"}


# --------------------------------------------------------------------------------------- jobs


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

    def to_json(self) -> dict:
        out: dict[str, Any] = {
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
            "created_at": _iso(self.created),
            "started_at": _iso(self.started),
            "finished_at": _iso(self.finished),
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


class JobStopped(EpistemeError):
    """A job stopped by a cancel or its timeout."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _iso(t: float | None) -> str | None:
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


class _ProgressEmbedder:
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


# ------------------------------------------------------------------------------- app services


class Services:
    """What the app keeps warm: settings, embedder, query engine, the writer queue."""

    def __init__(self, settings, *, token: str | None = None, write_mode: str | None = None):
        self.settings = settings
        self.token = token or None
        self.write_mode = write_mode
        import os

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
            embedder = _ProgressEmbedder(self.embedder(), job)
            job.progress("splitting")
            result = ingest_paper(self.settings, upload, force=force, progress=False, name=name,
                                  embedder=embedder, on_split=job.split_done, check=job.check)
        finally:
            with contextlib.suppress(FileNotFoundError):
                upload.unlink()
        job.paper = result["paper"]
        job.sections_total = result.get("sections_indexed")
        out = {"status": "ok", "ingest_status": result.get("status"), **_without(result, "status")}
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


def _with_boxes(settings, result: dict) -> dict:
    """Every source (and claim passage) of an answer gains ``boxes`` for its quote
    (:func:`episteme.pdf.highlight.attach_boxes`; [] when pypdfium2 or the PDF is missing)."""
    try:
        from ..pdf.highlight import attach_boxes
    except ImportError:
        return result
    import functools

    from ..stores.sqlite import passage_boxes

    return attach_boxes(settings.wiki, result, stored=functools.partial(passage_boxes, settings))


def _without(d: dict, *keys: str) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


# ------------------------------------------------------------------------------- wiki reading


def section_pages(wiki: Path, section_ids: list[str]) -> list[dict]:
    """``[{id, page, description}]`` for section ids, read from ``index.md``."""
    from ..wiki.index import read_index_md

    try:
        entries = read_index_md(wiki).entries
    except (EpistemeError, OSError):
        entries = {}
    out = []
    for sid in section_ids:
        e = entries.get(sid)
        out.append({"id": sid, "page": e.page if e else None,
                    "description": e.description if e else None})
    return out


def _tags(props: dict) -> list[str]:
    from ..wiki.frontmatter import frontmatter_tags

    return frontmatter_tags(props)


def list_pages(wiki: Path) -> list[dict]:
    """Every page with its title, type and tags (read from the files on every call)."""
    from ..wiki.scan import scan_wiki

    out = []
    for p in scan_wiki(wiki):
        t = p.props.get("type")
        out.append({
            "page": p.id,
            "title": p.title,
            "type": None if t is None else str(t),
            "tags": _tags(p.props),
            "links": len(p.links),
        })
    return out


#: The longest page argument accepted (a path of a few folders and a long title fits easily).
MAX_PAGE_ARG = 1024


def _page_file(wiki: Path, page: str) -> str | None:
    """``page`` as a page id if it names a page file directly (path-checked), else None."""
    from ..wiki.files import RAW_DIR, is_structural

    page = page.strip().replace("\\", "/")
    cands = [page] if page.endswith(".md") else [page + ".md", page]
    for cand in cands:
        target = _contained(wiki, cand)  # rejects ../, absolute paths, escaping symlinks
        rel = target.relative_to(wiki.resolve()).as_posix()
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or parts[0] == RAW_DIR:
            raise NotFoundError(f"{page!r} is not a wiki page")
        if (len(parts) == 1 and is_structural(rel)) or not rel.endswith(".md"):
            continue
        try:
            if target.is_file():
                return rel
        except OSError:  # e.g. a name longer than the file system allows: no such page
            continue
    return None


def _contained(wiki: Path, rel: str) -> Path:
    """``safe_join`` for a request: the real path of ``rel`` inside the wiki, a name the file
    system refuses (too long, ...) is simply no page."""
    from ..fsutil import safe_join

    try:
        return safe_join(wiki, rel)
    except OSError as e:
        raise NotFoundError(f"no page matches {rel[:80]!r} ({e.strerror})") from None


def read_wiki_page(wiki: Path, page: str) -> dict:
    """One page: frontmatter, markdown, sections (with ids) and where its links point."""
    from ..graph import WikiGraph
    from ..wiki.files import read_bytes
    from ..wiki.frontmatter import parse_frontmatter, strip_bom
    from ..wiki.sections import parse_page
    from .pageview import graph_resolver, tokenize

    wiki = Path(wiki)
    if not page or "\x00" in page:
        raise UsageError("empty page name")
    if len(page) > MAX_PAGE_ARG:
        raise UsageError(f"page name longer than {MAX_PAGE_ARG} characters")
    pid = _page_file(wiki, page)
    g = WikiGraph.build(wiki)
    if pid is None:
        pid = g.ids[g.find_page(page)]  # a title, alias or stem, as a [[link]] would say it
    # every lookup ends here: the real path must be inside the wiki, a regular file, capped
    path = _contained(wiki, pid)
    try:
        text = read_bytes(str(path)).decode("utf-8", "replace")
    except OSError as e:
        raise NotFoundError(f"{pid} cannot be read: {e.strerror or e}") from None
    fm = parse_frontmatter(text.encode("utf-8"))
    parsed = parse_page(text, strict=False)
    node = g.index.get(pid)
    resolve = graph_resolver(g, pid)
    links: dict[str, str | None] = {}
    backlinks: list[dict] = []
    if node is not None:
        for link in g.pages[node].links:
            if link.target not in links:
                links[link.target] = resolve(link.target)
        backlinks = [{"page": g.ids[i], "title": g.pages[i].title} for i in sorted(set(g.in_edges[node]))
                     if i != node]
    props = g.pages[node].props if node is not None else fm.props
    # the text as the UI renders it: links found by wiki.links, resolved as the graph does
    refs: list[dict] = []
    view = {
        "preamble": tokenize(parsed.preamble or "", refs, resolve),
        "sections": [{"id": s.id, "title": tokenize(s.title or "", refs, resolve),
                      "body": tokenize(s.body or "", refs, resolve)} for s in parsed.sections],
        # what the UI renders when there is neither a section nor a preamble
        "body": "" if parsed.sections or (parsed.preamble or "").strip() else tokenize(
            strip_bom(text.encode("utf-8", "surrogatepass"))[fm.body_offset:].decode("utf-8", "replace"),
            refs, resolve),
        "links": refs,
    }
    t = props.get("type")
    return {
        "page": pid,
        "title": g.pages[node].title if node is not None else Path(pid).stem,
        "type": None if t is None else str(t),
        "tags": _tags(props),
        "frontmatter": props,
        "markdown": text,
        "preamble": parsed.preamble,
        "sections": [
            {"id": s.id, "title": s.title, "level": s.level, "description": s.description,
             "sources": s.sources, "body": s.body}
            for s in parsed.sections
        ],
        "links": links,
        "backlinks": backlinks,
        "view": view,
    }


def answer_view(wiki: Path, answer: str) -> dict:
    """An answer as the UI renders it: ``{"text", "links"}`` with its ``[[links]]`` found by
    wiki.links and resolved against the wiki's graph (see :mod:`.pageview`)."""
    from .pageview import graph_resolver, tokenize

    refs: list[dict] = []
    resolve = None
    if "[[" in answer:
        from ..graph import WikiGraph

        resolve = graph_resolver(WikiGraph.build(Path(wiki)), None)
    return {"text": tokenize(answer, refs, resolve), "links": refs}


def page_claims(settings, page: str, *, tracer=None, lock=None) -> dict:
    """The ``lint --claims`` findings of one page, for the wiki view's inline marks.

    Sections whose cache entry (``.episteme/claims-cache.json``) still matches their body and
    their sources' hashes are answered from it; the others are verified now, only this page's,
    and the cache keeps every other page's entries.  A wiki without an SQLite store (nothing
    ingested) answers an empty list with a ``reason``: there is nothing to check against."""
    wiki = Path(settings.wiki)
    pid = read_wiki_page(wiki, page)["page"]  # the same name and path checks as GET /wiki/{page}
    out: dict = {"page": pid, "findings": [], "reason": None, "summary": None,
                 "sections_verified": 0, "sections_cached": 0}
    if not Path(settings.sqlite_path).exists():
        out["reason"] = "no papers are ingested in this wiki (no SQLite store): nothing to check claims against"
        return out
    try:
        from ..query.claims import ClaimChecker, check_claims
    except ImportError as e:  # pragma: no cover - a broken install
        out["reason"] = f"claim checking is not available ({e})"
        return out
    with lock or contextlib.nullcontext():
        checker = ClaimChecker(settings, tracer=tracer)
        try:
            # since={pid}: only this page is checked, and the other pages' cache entries stay
            run = check_claims(str(wiki), settings, [pid], since={pid}, checker=checker, progress=False)
        except (ImportError, MissingDependencyError) as e:
            out["reason"] = f"the stores cannot be opened to check claims ({e})"
            return out
        finally:
            checker.close()
    out["findings"] = [f.to_dict() for f in run.findings]
    out["summary"] = run.pages.get(pid)
    out["sections_verified"] = run.sections_checked
    out["sections_cached"] = run.sections_cached
    return out


# ------------------------------------------------------------------------------------ the app


def create_app(settings, *, token: str | None = None, warm: bool = True,
               write_mode: str | None = None):
    """The FastAPI app for one wiki.  ``token``: require ``Authorization: Bearer <token>`` on
    the API.  ``warm``: load the model and stores at start-up (tests of pure routing skip it)."""
    try:
        from fastapi import FastAPI, File, Query, Request, UploadFile
        from fastapi.exceptions import RequestValidationError
        from fastapi.responses import FileResponse, JSONResponse
        from fastapi.staticfiles import StaticFiles
        from pydantic import BaseModel, Field
        from starlette.exceptions import HTTPException as StarletteHTTPException
    except ImportError as e:
        raise MissingDependencyError(
            f"the server needs fastapi and uvicorn ({e.name} missing); "
            "run pip install 'episteme[server]'"
        ) from e

    services = Services(settings, token=token, write_mode=write_mode)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        _drop_stale_uploads(settings)
        if warm:
            await asyncio.to_thread(services.warm)
        yield
        await asyncio.to_thread(services.jobs.shutdown)

    app = FastAPI(
        title="episteme",
        version=__version__,
        description="LLM wiki for arXiv papers: ingest PDFs into a markdown wiki and trace "
        "every answer back to the exact source passages.",
        lifespan=lifespan,
        docs_url=None,  # our own /docs below: FastAPI's page loads Swagger UI from a CDN
        redoc_url=None,
    )
    app.state.services = services

    # --- errors: always {"error": message} ------------------------------------------------
    @app.exception_handler(EpistemeError)
    async def _episteme_error(request: Request, exc: EpistemeError):
        return JSONResponse(error_body(exc), status_code=status_for(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        errs = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errs):
            return JSONResponse({"error": "malformed JSON in the request body"}, status_code=400)
        parts = []
        for e in errs[:5]:
            loc = ".".join(str(x) for x in e.get("loc", ()) if x not in ("body",)) or "request"
            parts.append(f"{loc}: {e.get('msg', 'invalid')}")
        return JSONResponse({"error": "; ".join(parts) or "invalid request"}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        msg = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404 and msg == "Not Found":
            msg = f"no such endpoint: {request.method} {request.url.path}"
        elif exc.status_code == 405:
            msg = f"method {request.method} is not allowed on {request.url.path}"
        return JSONResponse({"error": msg}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        print(f"episteme serve: {request.method} {request.url.path} failed:", file=sys.stderr)
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        return JSONResponse({"error": "internal error; see the server log"}, status_code=500)

    # --- auth and headers -----------------------------------------------------------------
    @app.middleware("http")
    async def _guard(request: Request, call_next):
        path = request.url.path
        refusal = _browser_guard(request, services.token)
        if refusal:
            return JSONResponse({"error": refusal}, status_code=403)
        if request.method == "POST" and path == "/ingest":
            limit = services.settings.max_pdf_bytes
            try:
                length = int(request.headers.get("content-length", "0"))
            except ValueError:
                length = 0
            if limit and length > limit * MAX_UPLOAD_FILES + MULTIPART_SLACK:
                return JSONResponse(
                    {"error": f"the upload is {length} bytes, over the limit of {limit} bytes "
                              f"per file × {MAX_UPLOAD_FILES} files (EPISTEME_MAX_UPLOAD_FILES)",
                     "details": {"kind": "too_large"}}, status_code=413)
        if services.token and path not in PUBLIC_PATHS and not path.startswith("/static/"):
            header = request.headers.get("authorization", "")
            scheme, _, given = header.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), services.token.encode()
            ):
                return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
        try:
            response = await call_next(request)
        except Exception as exc:  # errors raised below the exception middleware
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
            return JSONResponse({"error": "internal error; see the server log"}, status_code=500)
        if path in ("/", "/docs") or path.startswith("/static/"):
            response.headers["Content-Security-Policy"] = (
                "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; "
                "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
            )
            response.headers["X-Content-Type-Options"] = "nosniff"
            response.headers["Cache-Control"] = "no-cache"
        return response

    # --- UI -------------------------------------------------------------------------------
    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    @app.get("/docs", include_in_schema=False)
    def docs():
        return FileResponse(STATIC_DIR / "docs.html", media_type="text/html")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    # --- health ---------------------------------------------------------------------------
    @app.get("/health", summary="Liveness and what is loaded")
    def health() -> dict:
        from ..stores.embedding import _CACHE as EMBEDDERS

        return {
            "status": "ok",
            "version": __version__,
            "wiki": str(settings.wiki),
            "auth": bool(services.token),
            "warm": {
                "embedder": bool(EMBEDDERS),
                "query_engine": services._engine is not None,
            },
            "llm_configured": bool(settings.api_key),
            "jobs": services.jobs.counts(),
            "limits": {"max_pdf_bytes": settings.max_pdf_bytes, "max_pages": settings.max_pages},
            "uptime_s": round(time.time() - services.started, 1),
        }

    # --- ingest ---------------------------------------------------------------------------
    @app.post("/ingest", summary="Ingest PDFs (multipart field `file`, once per PDF)",
              status_code=200)
    async def ingest(
        request: Request,
        file: Annotated[list[UploadFile], File(description="the paper(s): one PDF per `file` field")],
        wait: Annotated[bool, Query(description="false: return the job id(s) at once (202)")] = True,
        force: Annotated[bool, Query(description="redo even if the same bytes were ingested")] = False,
        write: Annotated[bool, Query(description="false: only index (raw/, SQLite, Chroma)")] = True,
        force_write: Annotated[bool, Query(description="write wiki pages even if the wiki already cites the paper")] = False,
    ):
        """Upload a PDF: it is checked (bytes, size, pages), split, indexed (raw/, SQLite,
        Chroma) and written into the wiki.  Returns ``{"status": "ok", "paper",
        "sections_indexed", "wiki_pages_updated", "new_sections", "sections", ...}``; with
        ``wait=false``, 202 and a job to poll at ``/jobs/{id}``.  413: over the size or page
        limit; 422: not a readable PDF.

        Several ``file`` fields (up to ``EPISTEME_MAX_UPLOAD_FILES``, default 16): one job per
        file, all under one ``batch`` id (``GET /jobs?batch=ID`` lists them).  A file that fails
        its checks is reported in ``failed`` and the others still run.  The answer is
        ``{"batch", "status": "ok"|"failed", "papers": [result + job per file], "failed":
        [{"file", "error", "http_status"}]}`` (``wait=false``: 202 with ``jobs`` instead of
        ``papers``)."""
        from ..ingest.pipeline import paper_id_for

        def submit(upload: Path, name: str, batch: str | None = None) -> Job:
            return services.jobs.submit(
                "ingest", paper_id_for(name),
                lambda job: services.run_ingest(job, upload, name, force=force, write=write,
                                               force_write=force_write),
                batch=batch, file=name)

        if len(file) == 1:
            upload, name = await _receive_upload(services.settings, file[0])
            job = submit(upload, name)
            if not wait:
                body = job.to_json()
                body["url"] = f"/jobs/{job.id}"
                return JSONResponse(body, status_code=202, headers={"Location": f"/jobs/{job.id}"})
            await asyncio.wrap_future(job.future)
            if job.status == "failed":
                return JSONResponse(job.error or {"error": "ingest failed"},
                                    status_code=job.http_status or 500)
            return {**(job.result or {}), "job": job.id}
        if len(file) > MAX_UPLOAD_FILES:
            for f in file:
                await f.close()
            raise UsageError(f"{len(file)} files in one request; at most {MAX_UPLOAD_FILES} "
                             "(EPISTEME_MAX_UPLOAD_FILES)")
        batch = uuid.uuid4().hex[:12]
        jobs: list[Job] = []
        failed: list[dict] = []
        for f in file:  # each checked as a single upload is; a bad one does not stop the rest
            try:
                upload, name = await _receive_upload(services.settings, f)
            except EpistemeError as e:
                failed.append({"file": f.filename, **error_body(e), "http_status": status_for(e)})
                continue
            jobs.append(submit(upload, name, batch))
        if not wait:
            return JSONResponse({"batch": batch, "url": f"/jobs?batch={batch}",
                                 "jobs": [{**j.to_json(), "url": f"/jobs/{j.id}"} for j in jobs],
                                 "failed": failed}, status_code=202)
        for j in jobs:
            await asyncio.wrap_future(j.future)
        papers = []
        for j in jobs:
            if j.status == "done":
                papers.append({**(j.result or {}), "job": j.id, "file": j.file})
            else:
                failed.append({"file": j.file, "job": j.id,
                               **(j.error or {"error": "ingest failed"}),
                               "http_status": j.http_status or 500})
        return {"batch": batch, "status": "failed" if failed else "ok", "papers": papers,
                "failed": failed}

    @app.get("/jobs", summary="Recent jobs (or one batch's, per file)")
    def jobs(batch: Annotated[str | None, Query(description="only the jobs of this multi-file upload")] = None) -> dict:
        """Every recent job; with ``batch``, the jobs of one multi-file ``POST /ingest`` (one per
        file, in upload order) and their counts by status."""
        listed = [j for j in services.jobs.list() if batch is None or j.batch == batch]
        if batch is None:
            return {"jobs": [j.to_json() for j in listed]}
        if not listed:
            raise NotFoundError(f"no batch {batch!r} (finished jobs are kept for a while, not forever)")
        counts: dict[str, int] = {}
        for j in listed:
            counts[j.status] = counts.get(j.status, 0) + 1
        return {"batch": batch, "counts": counts, "jobs": [j.to_json() for j in listed]}

    @app.delete("/jobs/{job_id}", summary="Cancel a job", status_code=202)
    def cancel_job(job_id: str) -> dict:
        """A queued job is cancelled at once; a running one stops at its next step boundary
        (before anything is committed), or finishes if it is already writing."""
        return services.jobs.cancel(job_id).to_json()

    @app.get("/jobs/{job_id}", summary="A job's progress and result")
    def job_status(job_id: str) -> dict:
        """``status`` (queued, running, done, failed), ``progress`` (phase, done/total in
        passages while embedding and sections while writing), then ``result`` or ``error``."""
        return services.jobs.get(job_id).to_json()

    # --- chat -----------------------------------------------------------------------------
    class ChatRequest(BaseModel):
        query: str = Field(..., min_length=1, max_length=4000, description="the question")

    @app.post("/chat", summary="Answer from the wiki and trace the answer to source passages")
    def chat(body: ChatRequest) -> dict:
        """``{"answer", "wiki_sections_used", "sources": [{paper, section, passage, similarity,
        page, claim}], "unsupported_claims", "claims", "mode"}``: the answer is written from the
        retrieved wiki sections, then each claim is traced to the papers' passages."""
        q = body.query.strip()
        if not q:
            raise UsageError("query is empty")
        result = services.engine().chat(q)
        _with_boxes(settings, result)
        # for the UI: where each cited wiki section lives (from index.md, no second pipeline)
        result["wiki_sections"] = section_pages(settings.wiki, result.get("wiki_sections_used") or [])
        result["answer_view"] = answer_view(settings.wiki, result.get("answer") or "")
        return result

    class TraceRequest(BaseModel):
        answer: str = Field(..., min_length=1, max_length=20000, description="the answer text")
        sections: list[str] | None = Field(None, description="wiki section ids it was written from")
        papers: list[str] | None = Field(None, description="paper file names to search")
        top: int = Field(3, ge=1, le=20, description="passages reported per claim")

    @app.post("/trace", summary="Trace an answer's claims to source passages (with boxes)")
    def trace(body: TraceRequest) -> dict:
        """``episteme trace``'s JSON: ``claims`` (each with ``verdict``, ``reason``, ``evidence``
        and ``passages`` best first), ``sources`` (each with ``quote`` and ``boxes: [{page,
        bbox}]`` in PDF points), ``unsupported_claims``, ``contradicted_claims``, ``scope``."""
        if body.sections and body.papers:
            raise UsageError("give sections or papers, not both")
        result = services.engine().trace(body.answer, sections=body.sections or None,
                                         papers=body.papers or None, top=body.top)
        return _with_boxes(settings, result)

    # --- evidence: page images, highlight boxes, the PDF itself --------------------------
    @app.get("/papers/{paper}", summary="A paper's pages (size in PDF points) for the viewer")
    def paper_pages(paper: str) -> dict:
        from ..pdf.render import paper_info

        return paper_info(settings.wiki, paper)

    @app.get("/papers/{paper}/pages/{n}.png", summary="A page of a paper as PNG (cached)",
             response_class=FileResponse)
    def page_image(paper: str, n: str, scale: float = 1.5):
        """Rendered with PDFium, cached under ``<wiki>/.episteme/pages/``.  404: no such paper
        in raw/ or page out of range; 400: scale outside 0.25..4."""
        from ..pdf.render import page_png

        path = page_png(settings, paper, n, scale)
        return FileResponse(path, media_type="image/png",
                            headers={"Cache-Control": "private, max-age=3600",
                                     "X-Content-Type-Options": "nosniff"})

    @app.get("/papers/{paper}/boxes", summary="Highlight boxes of a quote on a page")
    def quote_boxes_route(paper: str, quote: Annotated[str, Query(min_length=1, max_length=4000)],
                          page: int | None = None) -> dict:
        """``{"paper", "page", "boxes": [{page, bbox}]}``: where ``quote`` is printed, looked
        for on ``page`` and the next (every page when omitted)."""
        from ..pdf.highlight import quote_boxes
        from ..pdf.render import paper_pdf

        pdf = paper_pdf(settings.wiki, paper)
        return {"paper": pdf.name, "page": page, "boxes": quote_boxes(pdf, page, quote)}

    @app.get("/papers/{paper}/pdf", summary="The PDF itself, from raw/", response_class=FileResponse)
    def paper_file(paper: str):
        """Served inline (open it at a page with ``#page=N``); only files in raw/."""
        from ..pdf.render import paper_pdf

        pdf = paper_pdf(settings.wiki, paper)
        return FileResponse(pdf, media_type="application/pdf", headers={
            "Content-Disposition": f"inline; filename=\"{pdf.name}\"",
            "X-Content-Type-Options": "nosniff",
        })

    # --- wiki -----------------------------------------------------------------------------
    @app.get("/wiki", summary="All pages with title, type and tags")
    def wiki_pages() -> dict:
        pages = list_pages(settings.wiki)
        return {"pages": pages, "count": len(pages)}

    claims_lock = threading.Lock()

    def _claims_tracer():
        try:
            return services.engine().tracer
        except (EpistemeError, ImportError):
            return None  # the checker opens its own

    @app.get("/wiki/{page:path}/claims", summary="lint --claims findings of one page (cached)")
    def wiki_page_claims(page: str) -> dict:
        """``{"page", "findings": [{rule, severity, line, section_id, claim, verdict, reason,
        evidence: {paper, section, page, quote}}], "summary", "sections_verified",
        "sections_cached", "reason"}``: ``lint --claims`` for this page only, from the cache
        when its sections are unchanged.  ``reason`` says why nothing could be checked (no
        papers ingested); that is an empty list, not an error."""
        if _page_file(settings.wiki, page) is None and _page_file(settings.wiki, page + "/claims"):
            return read_wiki_page(settings.wiki, page + "/claims")  # a page named "claims"
        return page_claims(settings, page, tracer=_claims_tracer(), lock=claims_lock)

    @app.get("/wiki/{page:path}", summary="One page: markdown, sections, resolved links")
    def wiki_page(page: str) -> dict:
        """A page by path (``concepts/x.md``, ``.md`` optional) or by the name a ``[[link]]``
        would use; ``links`` maps each link target to the page it resolves to (or null), as
        ``episteme graph`` resolves it from this page; ``view`` is the text as the UI renders
        it, every link found by wiki.links and replaced by a token naming its record in
        ``view.links`` (``{raw, kind, target, anchor, page, display, plain, dangling}``)."""
        return read_wiki_page(settings.wiki, page)

    # --- graph ----------------------------------------------------------------------------
    @app.get("/graph", summary="graph_query's JSON (modes as in `episteme graph`)")
    def graph(
        mode: str = "stats",
        seed: str | None = None,
        depth: int = 1,
        src: str | None = None,
        dst: str | None = None,
        tag: str | None = None,
        query: str | None = None,
        sort: str | None = None,
        limit: int | None = None,
        tier: str | None = None,
        format: str = "json",  # noqa: A002 - the query parameter's public name
    ):
        from fastapi.responses import PlainTextResponse

        from ..graph.run import graph_query

        if format not in ("json", "mermaid"):
            raise UsageError("format must be json or mermaid")
        result = graph_query(settings.wiki, mode, seed=seed, depth=depth, src=src, dst=dst,
                             tag=tag, query=query, sort=sort, limit=limit, tier=tier)
        if format == "mermaid":  # the diagram, as `episteme graph --format mermaid` prints it
            from ..graph.format import render_mermaid

            return PlainTextResponse(render_mermaid(mode, result), media_type="text/plain")
        return result

    app.add_middleware(_UploadLimit,
                       limit=lambda: services.settings.max_pdf_bytes * MAX_UPLOAD_FILES)
    return app


class _UploadTooLarge(Exception):
    pass


class _UploadLimit:
    """Pure ASGI: counts the bytes of a ``POST /ingest`` body *as they arrive* and answers 413
    once they pass the limit (+ multipart framing).  Why: a chunked upload has no
    Content-Length for the guard to check, and the multipart parser would otherwise spool the
    whole body to disk before the endpoint sees a byte of it."""

    def __init__(self, app, limit):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        limit = self.limit() if scope.get("type") == "http" else 0
        if not limit or scope.get("method") != "POST" or scope.get("path") != "/ingest":
            return await self.app(scope, receive, send)
        seen = 0
        over = False
        started = False

        async def counted():
            nonlocal seen, over
            message = await receive()
            if message.get("type") == "http.request":
                seen += len(message.get("body") or b"")
                if seen > limit + MULTIPART_SLACK:
                    over = True
                    raise _UploadTooLarge()
            return message

        async def guarded_send(message):
            nonlocal started
            if over:
                return  # the app's own error reply to the aborted body is replaced below
            if message.get("type") == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, guarded_send)
        except Exception:
            if not over:
                raise
        if over and not started:
            import json

            body = json.dumps({"error": f"the upload is over the limit of {limit} bytes",
                               "details": {"kind": "too_large"}}).encode()
            await send({"type": "http.response.start", "status": 413,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()),
                                    (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": body})


def _drop_stale_uploads(settings, max_age_s: float = 3600.0) -> None:
    """Upload temp files left by a server that stopped with jobs still queued."""
    folder = settings.data_dir / "uploads"
    if not folder.is_dir():
        return
    from ..fsutil import pid_alive as _pid_alive

    now = time.time()
    for f in folder.glob("*.pdf"):
        pid = f.name.split(".", 1)[0]
        dead = pid.isdigit() and not _pid_alive(int(pid))  # a killed server's upload
        with contextlib.suppress(OSError):
            if dead or now - f.stat().st_mtime > max_age_s:
                f.unlink()


async def _receive_upload(settings, file) -> tuple[Path, str]:
    """Stream the upload to a private temp file, enforcing the size limit as bytes arrive, and
    check it is a PDF by its bytes and within the page limit -- before any job is queued."""
    from ..ingest.pipeline import base_name
    from ..pdf.split import PdfError, check_pdf_bytes

    name = base_name(file.filename or "paper.pdf")  # ingest_paper derives the id from it
    limit = settings.max_pdf_bytes
    tmp_dir = settings.data_dir / "uploads"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    path = tmp_dir / f"{os.getpid()}.{uuid.uuid4().hex}.pdf"
    size = 0
    ok = False
    try:
        with open(path, "wb") as out:
            while True:
                chunk = await file.read(UPLOAD_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if limit and size > limit:
                    raise PdfError("too_large", f"the upload is over the limit of {limit} bytes")
                out.write(chunk)
        data = path.read_bytes() if size else b""
        check_pdf_bytes(data, limit or None)
        await asyncio.to_thread(_check_pages, data, settings.max_pages)
        ok = True
        return path, name
    finally:
        await file.close()
        if not ok:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _check_pages(data: bytes, max_pages: int) -> None:
    """Open the PDF as the splitter will, to reject unreadable or over-long files up front, so
    ``?wait=false`` never queues a job that is bound to fail on them."""
    from ..pdf.split import open_pdf

    open_pdf(data, max_pages)


def serve(settings, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
          write_mode: str | None = None, log_level: str = "info") -> None:
    """Run the app with uvicorn (blocking)."""
    check_bind(host, token)
    try:
        import uvicorn
    except ImportError as e:
        raise MissingDependencyError("the server needs uvicorn; run pip install 'episteme[server]'") from e
    app = create_app(settings, token=token, write_mode=write_mode)
    print(f"episteme: serving {settings.wiki} on http://{host}:{port}/ "
          f"({'token required' if token else 'no token, loopback only'})", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False,
                timeout_graceful_shutdown=5)

