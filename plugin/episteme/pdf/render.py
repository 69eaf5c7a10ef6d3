"""Page images of the papers in ``raw/``: render, cache, draw highlight boxes, encode PNG.

Why it looks like this:

- **pypdfium2, chosen by measurement** (``benchmarks/bench_render.py``): PDFium renders a page
  at scale 1.5 in tens of milliseconds from one ~8 MB wheel with no system libraries, and the
  same library gives the text positions the highlights are computed from
  (:mod:`episteme.pdf.highlight`).  pdf.js would render in the browser only, need a second copy of
  the text layer logic in JavaScript, and could not make the images the agent opens.
- **No Pillow.**  PNGs are encoded here with numpy + zlib (one filter byte per row): the
  rendering stays one dependency, and encoding a page costs ~20 ms.
- **One lock.**  PDFium is not thread-safe; every call into it (here and in
  :mod:`episteme.pdf.highlight`) holds :data:`PDFIUM_LOCK`, so the server's thread pool is safe.
- **Cached on disk** under ``<wiki>/.episteme/pages/``, keyed by the paper's name, size and
  modification time (a re-ingested file never shows a stale image), written atomically.  The
  cache is bounded, because any page can ask for it: scales are snapped to quarter steps (what
  the viewer asks for anyway), so a page has at most 16 images, and past
  :data:`PAGE_CACHE_MAX_BYTES` the oldest images are removed (a page image is re-rendered in tens
  of milliseconds, so first-in-first-out is enough; a hit leaves the file untouched).
- **Annotations are not drawn**: a PDF that someone highlighted before adding it would show
  their marks in the same colour as the evidence.
- **Names are checked before any path is built**: a paper is a plain ``*.pdf`` file name that
  exists in ``raw/`` (through :func:`episteme.fsutil.safe_join`, so no ``..``, absolute path or
  escaping symlink), a page is in range, a scale is bounded.

Boxes are ``[x0, y0, x1, y1]`` in PDF points, origin bottom-left as in the PDF (and pypdf).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import struct
import threading
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError, NotFoundError, UsageError

#: PDFium may not be entered by two threads at once
PDFIUM_LOCK = threading.RLock()
MIN_SCALE = 0.25
MAX_SCALE = 4.0
DEFAULT_SCALE = 1.5
#: refuse renders above this many pixels (a poster-sized page at scale 4 would be gigabytes)
MAX_PIXELS = 40_000_000
CACHE_DIR = "pages"
#: cached images are rendered at multiples of this scale: the viewer (static/evidence.js) asks
#: for zoom x devicePixelRatio rounded to 0.25, so it never sees the snap
CACHE_SCALE_STEP = 0.25
#: the page-image cache's size: ~500 page images at the viewer's usual scale (a page at 1.5 is
#: 0.3-0.8 MB); the oldest go first
PAGE_CACHE_MAX_BYTES = 256 * 1024 * 1024
#: part of the cache key: bump when the rendering changes, so no stale image is served
RENDER_VERSION = 2
#: highlight colour (multiplied over the page like a marker pen, so the text stays legible)
HIGHLIGHT_RGB = (255, 214, 0)
HIGHLIGHT_ALPHA = 0.55
_DOC_CACHE_SIZE = 8


def _pdfium():
    try:
        import pypdfium2 as pdfium
    except ImportError as e:
        raise MissingDependencyError(
            "page images need pypdfium2; run pip install 'episteme[render]'"
        ) from e
    return pdfium


# ----------------------------------------------------------------------------------- names


def paper_pdf(wiki: Path, paper: str) -> Path:
    """The PDF of ``paper`` (a file name in ``raw/``), path-checked; NotFoundError otherwise.

    Only a bare ``*.pdf`` name is accepted: no folder separators, no leading dot, no NUL, and
    the resolved file must stay inside ``raw/`` (a symlink pointing out is refused)."""
    from ..fsutil import safe_join

    name = (paper or "").strip()
    if (not name or "\x00" in name or "/" in name or "\\" in name or name.startswith(".")
            or not name.lower().endswith(".pdf") or len(name) > 255):
        raise NotFoundError(f"no paper {paper!r} in raw/")
    raw = Path(wiki) / "raw"
    try:
        path = safe_join(raw, name)
    except UsageError:
        raise NotFoundError(f"no paper {paper!r} in raw/") from None
    if not path.is_file():
        raise NotFoundError(f"no paper {paper!r} in raw/")
    return path


def check_scale(scale: float | str | None) -> float:
    """``scale`` as a float in [MIN_SCALE, MAX_SCALE], rounded to 2 decimals (so the cache holds
    one image per visible zoom step, not one per float)."""
    if scale is None:
        return DEFAULT_SCALE
    try:
        s = float(scale)
    except (TypeError, ValueError):
        raise UsageError(f"scale must be a number, not {scale!r}") from None
    if not math.isfinite(s) or not MIN_SCALE <= s <= MAX_SCALE:
        raise UsageError(f"scale must be between {MIN_SCALE} and {MAX_SCALE}, not {scale!r}")
    return round(s, 2)


def cache_scale(scale: float | str | None) -> float:
    """``scale`` checked (:func:`check_scale`) and snapped to the nearest multiple of
    :data:`CACHE_SCALE_STEP`, so requests cannot fill the cache with one image per float."""
    s = check_scale(scale)
    return min(MAX_SCALE, max(MIN_SCALE, round(s / CACHE_SCALE_STEP) * CACHE_SCALE_STEP))


# ------------------------------------------------------------------------------- documents

_DOCS: OrderedDict[tuple, Any] = OrderedDict()


def file_key(path: Path) -> tuple[str, int, int]:
    """(resolved path, size, mtime_ns): what identifies one version of a file."""
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns)


@contextlib.contextmanager
def open_document(path: Path):
    """A PDFium document for ``path`` (kept open in a small LRU), with PDFIUM_LOCK held."""
    pdfium = _pdfium()
    key = file_key(path)
    with PDFIUM_LOCK:
        doc = _DOCS.get(key)
        if doc is None:
            try:
                doc = pdfium.PdfDocument(str(path))
            except pdfium.PdfiumError as e:
                raise UsageError(f"{path.name} cannot be opened as a PDF: {e}") from None
            _DOCS[key] = doc
            while len(_DOCS) > _DOC_CACHE_SIZE:
                _k, old = _DOCS.popitem(last=False)
                with contextlib.suppress(Exception):
                    old.close()
        else:
            _DOCS.move_to_end(key)
        yield doc


def page_geometry(doc, index: int) -> dict:
    """``{"width", "height", "origin": [x0, y0]}`` of page ``index`` (0-based) in points: the
    crop box, which is what PDFium renders and what boxes are positioned against."""
    page = doc[index]
    try:
        x0, y0, x1, y1 = page.get_cropbox()
        rotation = page.get_rotation()
    finally:
        page.close()
    return {"width": round(x1 - x0, 2), "height": round(y1 - y0, 2),
            "origin": [round(x0, 2), round(y0, 2)], "rotation": rotation}


def paper_info(wiki: Path, paper: str) -> dict:
    """``{"paper", "page_count", "pages": [geometry...]}`` for the viewer."""
    path = paper_pdf(wiki, paper)
    with open_document(path) as doc:
        n = len(doc)
        pages = [{"page": i + 1, **page_geometry(doc, i)} for i in range(n)]
    return {"paper": path.name, "page_count": n, "pages": pages}


def check_page(doc, page: int | str, paper: str) -> int:
    """``page`` (1-based) as an int in range; NotFoundError otherwise."""
    try:
        n = int(page)
    except (TypeError, ValueError):
        raise NotFoundError(f"{paper} has no page {page!r}") from None
    if not 1 <= n <= len(doc):
        raise NotFoundError(f"{paper} has no page {n} (it has {len(doc)})")
    return n


# -------------------------------------------------------------------------------- rendering


def render_rgb(doc, page: int, scale: float):
    """Page ``page`` (1-based) as an ``(h, w, 3)`` uint8 RGB array at ``scale`` (1 = 72 dpi),
    plus its geometry.  The caller holds PDFIUM_LOCK (via :func:`open_document`)."""
    geo = page_geometry(doc, page - 1)
    if geo["width"] * geo["height"] * scale * scale > MAX_PIXELS:
        raise UsageError(f"page {page} is too large to render at scale {scale}")
    pg = doc[page - 1]
    try:
        # no annotations: a reader's own highlights (some shared arXiv PDFs carry dozens per
        # page) would be mistaken for the evidence highlight
        bitmap = pg.render(scale=scale, rev_byteorder=True, draw_annots=False,
                           may_draw_forms=False)
        try:
            arr = bitmap.to_numpy().copy()
        finally:
            bitmap.close()
    finally:
        pg.close()
    if arr.ndim == 3 and arr.shape[2] == 4:  # some builds render with alpha: drop it
        arr = arr[:, :, :3].copy()
    return arr, geo


def draw_boxes(rgb, boxes: list[dict], page: int, geo: dict, scale: float):
    """Mark ``boxes`` of page ``page`` on the rendered ``rgb`` array (in place) like a
    highlighter pen: the page is multiplied by a translucent yellow, and a thin border is drawn
    so a box on a dark figure is still visible.  Returns the array."""
    import numpy as np

    h, w = rgb.shape[:2]
    ox, oy = geo["origin"]
    top = oy + geo["height"]
    tint = 1.0 - HIGHLIGHT_ALPHA + HIGHLIGHT_ALPHA * np.array(HIGHLIGHT_RGB, dtype=np.float32) / 255.0
    for b in boxes:
        if int(b.get("page", page)) != page:
            continue
        x0, y0, x1, y1 = b["bbox"]
        pad = 1.0
        c0 = max(0, int(math.floor((x0 - ox - pad) * scale)))
        c1 = min(w, int(math.ceil((x1 - ox + pad) * scale)))
        r0 = max(0, int(math.floor((top - y1 - pad) * scale)))
        r1 = min(h, int(math.ceil((top - y0 + pad) * scale)))
        if c1 <= c0 or r1 <= r0:
            continue
        region = rgb[r0:r1, c0:c1].astype(np.float32) * tint
        rgb[r0:r1, c0:c1] = region.clip(0, 255).astype(np.uint8)
        edge = np.array((200, 140, 0), dtype=np.uint8)
        rgb[r1 - 1, c0:c1] = edge
        rgb[r0, c0:c1] = edge
    return rgb


def encode_png(rgb, level: int = 3) -> bytes:
    """An RGB uint8 array as PNG bytes (filter 0 on every row, zlib ``level``)."""
    import numpy as np

    h, w = rgb.shape[:2]
    raw = np.empty((h, w * 3 + 1), dtype=np.uint8)
    raw[:, 0] = 0
    raw[:, 1:] = np.ascontiguousarray(rgb).reshape(h, w * 3)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), level)) + chunk(b"IEND", b""))


def cache_path(data_dir: Path, pdf: Path, page: int, scale: float) -> Path:
    """Where the plain render of ``pdf`` page ``page`` at ``scale`` is cached."""
    _p, size, mtime = file_key(pdf)
    digest = hashlib.sha256(f"{RENDER_VERSION}\x00{pdf.name}\x00{size}\x00{mtime}".encode()).hexdigest()[:16]
    stem = pdf.name[:-4][:80]
    return Path(data_dir) / CACHE_DIR / f"{stem}-{digest}" / f"p{page}@{scale:g}.png"


def page_png(settings, paper: str, page: int | str, scale: float | str | None = None, *,
             max_cache_bytes: int = PAGE_CACHE_MAX_BYTES) -> Path:
    """The cached PNG of a page of ``paper`` (rendered now if missing) at ``scale`` snapped to
    :data:`CACHE_SCALE_STEP`: a path under ``<wiki>/.episteme/pages/``.  A new image makes room
    for itself within ``max_cache_bytes``.  NotFoundError for an unknown paper or page,
    UsageError for a scale out of bounds."""
    from ..fsutil import atomic_write_bytes

    s = cache_scale(scale)
    pdf = paper_pdf(settings.wiki, paper)
    with open_document(pdf) as doc:
        n = check_page(doc, page, pdf.name)
        target = cache_path(settings.data_dir, pdf, n, s)
        if target.is_file():
            return target
        rgb, _geo = render_rgb(doc, n, s)
    atomic_write_bytes(target, encode_png(rgb))
    evict_pages(settings.data_dir, max_cache_bytes, keep=target)
    return target


_EVICT_LOCK = threading.Lock()


def evict_pages(data_dir: Path, max_bytes: int, *, keep: Path | None = None) -> int:
    """Remove the oldest page images until the cache holds at most ``max_bytes``
    (never ``keep``, the image just asked for); returns how many were removed.  Only the
    cache's own ``<paper>/p<N>@<scale>.png`` files are counted or removed, never through a
    symlink."""
    root = Path(data_dir) / CACHE_DIR
    files: list[tuple[int, int, str]] = []
    with _EVICT_LOCK:
        try:
            folders = [d for d in os.scandir(root) if d.is_dir(follow_symlinks=False)]
        except OSError:
            return 0
        for folder in folders:
            with contextlib.suppress(OSError):
                for f in os.scandir(folder.path):
                    if f.name.startswith("p") and f.name.endswith(".png") \
                            and f.is_file(follow_symlinks=False):
                        st = f.stat(follow_symlinks=False)
                        files.append((st.st_mtime_ns, st.st_size, f.path))
        total = sum(size for _m, size, _p in files)
        removed = 0
        for _mtime, size, path in sorted(files):
            if total <= max_bytes:
                break
            if keep is not None and path == str(keep):
                continue
            with contextlib.suppress(OSError):
                os.unlink(path)
                total -= size
                removed += 1
    return removed


def highlighted_png(wiki: Path, paper: str, page: int, boxes: list[dict],
                    scale: float | str | None = None) -> tuple[bytes, dict]:
    """PNG bytes of ``paper`` page ``page`` with ``boxes`` drawn in, and the page geometry
    (``{"width", "height", "origin", "scale", "pixels": [w, h]}``)."""
    s = check_scale(scale)
    pdf = paper_pdf(wiki, paper)
    with open_document(pdf) as doc:
        n = check_page(doc, page, pdf.name)
        rgb, geo = render_rgb(doc, n, s)
    draw_boxes(rgb, boxes, n, geo, s)
    geo = {**geo, "scale": s, "pixels": [int(rgb.shape[1]), int(rgb.shape[0])]}
    return encode_png(rgb), geo
