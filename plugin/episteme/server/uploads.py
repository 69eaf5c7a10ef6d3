"""Uploads for ``POST /ingest``: streamed to a private temp file under the size limit as bytes
arrive, checked as a PDF (bytes, page count) before any job is queued, and temp files of a
server that stopped mid-queue removed at the next start.
"""

import asyncio
import contextlib
import os
import time
import uuid
from pathlib import Path

UPLOAD_CHUNK = 1024 * 1024
#: multipart framing around the file; a Content-Length above limit + this is refused unread
MULTIPART_SLACK = 64 * 1024
#: files one ``POST /ingest`` may carry (each within the per-file size limit); the request body
#: may be up to this many times that limit
MAX_UPLOAD_FILES = int(os.environ.get("EPISTEME_MAX_UPLOAD_FILES") or 16)


def drop_stale_uploads(settings, max_age_s: float = 3600.0) -> None:
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


async def receive_upload(settings, file) -> tuple[Path, str]:
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
        await asyncio.to_thread(check_pages, data, settings.max_pages)
        ok = True
        return path, name
    finally:
        await file.close()
        if not ok:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def check_pages(data: bytes, max_pages: int) -> None:
    """Open the PDF as the splitter will, to reject unreadable or over-long files up front, so
    ``?wait=false`` never queues a job that is bound to fail on them."""
    from ..pdf.split import open_pdf

    open_pdf(data, max_pages)
