"""``POST /ingest`` (one or several PDFs, each a job on the writer queue) and ``/jobs``.

An upload is streamed and checked (:mod:`.uploads`) before its job is queued; the job runs the
same ingest and wiki write as ``episteme ingest --write`` (:meth:`.services.Services.run_ingest`).
"""

import asyncio
import uuid
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Query, Request, UploadFile
from fastapi.responses import JSONResponse

from ..errors import EpistemeError, NotFoundError, UsageError
from .httperrors import error_body, status_for
from .jobs import Job
from .services import Services
from .uploads import MAX_UPLOAD_FILES, receive_upload


def router(services: Services) -> APIRouter:
    """The ingest and job routes over ``services``."""
    r = APIRouter()

    @r.post("/ingest", summary="Ingest PDFs (multipart field `file`, once per PDF)",
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
            return await _ingest_one(services, file[0], submit, wait)
        return await _ingest_many(services, file, submit, wait)

    @r.get("/jobs", summary="Recent jobs (or one batch's, per file)")
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

    @r.delete("/jobs/{job_id}", summary="Cancel a job", status_code=202)
    def cancel_job(job_id: str) -> dict:
        """A queued job is cancelled at once; a running one stops at its next step boundary
        (before anything is committed), or finishes if it is already writing."""
        return services.jobs.cancel(job_id).to_json()

    @r.get("/jobs/{job_id}", summary="A job's progress and result")
    def job_status(job_id: str) -> dict:
        """``status`` (queued, running, done, failed), ``progress`` (phase, done/total in
        passages while embedding and sections while writing), then ``result`` or ``error``."""
        return services.jobs.get(job_id).to_json()

    return r


async def job_reply(job, wait: bool, failed: str = "job failed"):
    """What a route that queued ``job`` answers: 202 and the job to poll (``wait`` false), or,
    once it ends, its result, or its error with its HTTP status."""
    if not wait:
        body = job.to_json()
        body["url"] = f"/jobs/{job.id}"
        return JSONResponse(body, status_code=202, headers={"Location": f"/jobs/{job.id}"})
    await asyncio.wrap_future(job.future)
    if job.status == "failed":
        return JSONResponse(job.error or {"error": failed}, status_code=job.http_status or 500)
    return {**(job.result or {}), "job": job.id}


async def _ingest_one(services: Services, file, submit, wait: bool):
    """One uploaded file: its job's result (or error), or 202 and the job to poll."""
    upload, name = await receive_upload(services.settings, file)
    return await job_reply(submit(upload, name), wait, "ingest failed")


async def _ingest_many(services: Services, file: list, submit, wait: bool):
    """Several uploaded files: one job each under one batch id; a file that fails its checks
    is listed in ``failed`` and does not stop the others."""
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
            upload, name = await receive_upload(services.settings, f)
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
