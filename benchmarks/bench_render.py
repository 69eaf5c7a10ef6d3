"""Page images: first and cached render of a page, PDFium (pypdfium2) vs pdf.js, and the
highlight boxes' cost.

For each of three real papers and its first ``--pages`` pages, at scale 1.5:

- **pypdfium2, first**: ``pagerender.page_png`` with an empty cache (render + PNG encode + atomic
  write; the first page of a paper also opens the document).
- **pypdfium2, cached**: the same call again (stat + page-range check), and the bytes read.
- **HTTP first / cached**: ``GET /papers/{paper}/pages/{n}.png?scale=1.5`` on a live uvicorn
  (what the UI waits for).
- **pdf.js in Chromium** (``--pdfjs DIR`` = a folder holding ``node_modules/pdfjs-dist``, from
  ``npm install pdfjs-dist``): ``getPage`` + ``render`` to a canvas at the same scale, in the
  system Chromium, timed inside the page; and the agreement of its pixels with PDFium's (mean
  absolute grey difference, 0-255, at half resolution).
- **boxes**: ``highlight.quote_boxes`` for a two-sentence quote of the page (cold page text).

Times are medians in milliseconds; the ratio column divides by the bare PDFium render (pixels
only, no PNG) measured in the same run (the machine is shared and noisy; ratios travel better than milliseconds).

    PYTHONPATH=plugin python benchmarks/bench_render.py [--pages 6] [--pdfjs /tmp/pdfjs]
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from functools import partial
from pathlib import Path

DATA = Path("/work/shared/data/papers")
PAPERS = ("attention_1706.03762v5.pdf", "s2orc_acl2020.pdf", "resnet_1512.03385v1.pdf")
SCALE = 1.5


def ms(xs: list[float]) -> float:
    return 1000 * statistics.median(xs)


def bench_pdfium(wiki: Path, pages: int) -> dict:
    from episteme.config import load_settings
    from episteme.pdf import render as pagerender

    s = load_settings(wiki, env={}, dotenv=None)
    first, cached, read, opened, bare = [], [], [], [], []
    for paper in PAPERS:
        with pagerender.open_document(wiki / "raw" / paper) as doc:
            for n in range(2, pages + 1):
                t = time.perf_counter()
                pagerender.render_rgb(doc, n, SCALE)
                bare.append(time.perf_counter() - t)
        pagerender._DOCS.clear()
        for n in range(1, pages + 1):
            t = time.perf_counter()
            path = pagerender.page_png(s, paper, n, SCALE)
            (opened if n == 1 else first).append(time.perf_counter() - t)
        for n in range(1, pages + 1):
            t = time.perf_counter()
            path = pagerender.page_png(s, paper, n, SCALE)
            cached.append(time.perf_counter() - t)
            t = time.perf_counter()
            path.read_bytes()
            read.append(time.perf_counter() - t)
    size = statistics.median(p.stat().st_size for p in (wiki / ".episteme" / "pages").rglob("*.png"))
    return {"first": ms(first), "first_open": ms(opened), "cached": ms(cached), "read": ms(read),
            "bare": ms(bare),
            "png_kb": size / 1024}


def bench_http(wiki: Path, pages: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from episteme.config import load_settings
    from serverlive import LiveServer

    shutil.rmtree(wiki / ".episteme" / "pages", ignore_errors=True)
    first, cached = [], []
    with LiveServer(load_settings(wiki, env={}, dotenv=None), warm=False) as srv:
        for paper in PAPERS:
            for bucket in (first, cached):
                for n in range(2, pages + 1):
                    t = time.perf_counter()
                    with urllib.request.urlopen(f"{srv.url}/papers/{paper}/pages/{n}.png?scale={SCALE}") as r:
                        r.read()
                    bucket.append(time.perf_counter() - t)
    return {"first": ms(first), "cached": ms(cached)}


def bench_boxes(pages: int) -> float:
    from episteme.pdf import highlight
    from episteme.pdf.passages import split_sentences
    from episteme.pdf.split import split_pdf

    times = []
    for paper in PAPERS:
        pdf = DATA / paper
        for sec in split_pdf(pdf).sections:
            if sec.kind != "body":
                continue
            sents = split_sentences(sec.text)
            if len(sents) < 2:
                continue
            a, b = sents[0][0], sents[1][1]
            highlight._PAGE_CACHE.clear()
            t = time.perf_counter()
            highlight.quote_boxes(pdf, sec.page_at(a), sec.text[a:b])
            times.append(time.perf_counter() - t)
    return ms(times)


PDFJS_PAGE = """<!doctype html><meta charset=utf-8><canvas id=c></canvas><script type=module>
import * as pdfjs from '/node_modules/pdfjs-dist/build/pdf.min.mjs';
pdfjs.GlobalWorkerOptions.workerSrc = '/node_modules/pdfjs-dist/build/pdf.worker.min.mjs';
window.renderAll = async (url, pages, scale) => {
  const t0 = performance.now();
  const doc = await pdfjs.getDocument({url: new URL(url, location.href).href}).promise;
  const out = {open: performance.now() - t0, pages: [], grey: null};
  for (let n = 1; n <= pages; n++) {
    const t = performance.now();
    const page = await doc.getPage(n);
    const vp = page.getViewport({scale});
    const c = document.getElementById('c');
    c.width = Math.floor(vp.width); c.height = Math.floor(vp.height);
    await page.render({canvasContext: c.getContext('2d'), viewport: vp, canvas: c}).promise;
    out.pages.push(performance.now() - t);
    if (n === 2) {  // half-resolution grey pixels, to compare with PDFium's
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, g = [];
      for (let y = 0; y < c.height; y += 2) for (let x = 0; x < c.width; x += 2) {
        const i = 4 * (y * c.width + x); g.push(Math.round((d[i] + d[i + 1] + d[i + 2]) / 3));
      }
      out.grey = {w: Math.ceil(c.width / 2), h: Math.ceil(c.height / 2), g};
    }
  }
  return out;
};
window.ready = true;
</script>"""


def bench_pdfjs(pdfjs_dir: Path, pages: int, wiki: Path) -> dict:
    """pdf.js rendering in the system Chromium, served from a local folder (no CDN)."""
    import numpy as np
    from episteme.pdf import render as pagerender
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="pdfjs-bench-"))
    os.symlink(pdfjs_dir / "node_modules", root / "node_modules")
    (root / "index.html").write_text(PDFJS_PAGE, encoding="utf-8")
    for p in PAPERS:
        shutil.copy(DATA / p, root / p)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def guess_type(self, path):
            return "text/javascript" if str(path).endswith(".mjs") else super().guess_type(path)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    first, opened, diffs = [], [], []
    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path="/usr/bin/chromium",
                                   args=["--no-sandbox", "--disable-gpu"])
            pg = b.new_page()
            for paper in PAPERS:
                pg.goto(url + "/index.html")
                pg.wait_for_function("window.ready === true")
                r = pg.evaluate(f"renderAll('/{paper}', {pages}, {SCALE})")
                opened.append((r["open"] + r["pages"][0]) / 1000)
                first.extend(x / 1000 for x in r["pages"][1:])
                with pagerender.open_document(DATA / paper) as doc:
                    rgb, _ = pagerender.render_rgb(doc, 2, SCALE)
                mine = rgb.astype(np.float32).mean(axis=2)[::2, ::2]
                g = r["grey"]
                theirs = np.array(g["g"], dtype=np.float32).reshape(g["h"], g["w"])
                h, w = min(mine.shape[0], theirs.shape[0]), min(mine.shape[1], theirs.shape[1])
                diffs.append(float(np.abs(mine[:h, :w] - theirs[:h, :w]).mean()))
            b.close()
    finally:
        httpd.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    size = sum(f.stat().st_size for f in (pdfjs_dir / "node_modules" / "pdfjs-dist").rglob("*") if f.is_file())
    shipped = sum((pdfjs_dir / "node_modules" / "pdfjs-dist" / "build" / n).stat().st_size
                  for n in ("pdf.min.mjs", "pdf.worker.min.mjs"))
    return {"first": ms(first), "first_open": ms(opened), "grey_diff": statistics.mean(diffs),
            "install_mb": size / 1e6, "shipped_mb": shipped / 1e6}


def pdfium_install_mb() -> float:
    import pypdfium2
    import pypdfium2_raw

    total = 0
    for mod in (pypdfium2, pypdfium2_raw):
        for f in Path(mod.__file__).parent.rglob("*"):
            if f.is_file():
                total += f.stat().st_size
    return total / 1e6


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=6)
    ap.add_argument("--pdfjs", type=Path, default=None, help="folder with node_modules/pdfjs-dist")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wiki = Path(tmp) / "wiki"
        (wiki / "raw").mkdir(parents=True)
        for p in PAPERS:
            shutil.copy(DATA / p, wiki / "raw" / p)
        fn = bench_pdfium(wiki, args.pages)
        print(f"pdfium: {fn}", file=sys.stderr)
        web = bench_http(wiki, args.pages)
        print(f"http: {web}", file=sys.stderr)
        boxes = bench_boxes(args.pages)
        js = None
        if args.pdfjs:
            with contextlib.suppress(Exception):
                js = bench_pdfjs(args.pdfjs, args.pages, wiki)
            print(f"pdfjs: {js}", file=sys.stderr)
    base = fn["bare"] or 1e-9
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{len(PAPERS)} papers x {args.pages} pages, scale {SCALE}\n")
    print("| what | median ms | ÷ bare PDFium render | target |")
    print("|---|---|---|---|")
    rows = [
        ("bare PDFium render to pixels (the baseline)", fn["bare"], ""),
        ("pypdfium2 first render (render + PNG + cache write)", fn["first"], "≤ 300 ms"),
        ("pypdfium2 first render of a paper's first page (+ open)", fn["first_open"], ""),
        ("pypdfium2 cached (`page_png` hit)", fn["cached"], "≤ 20 ms"),
        ("cached PNG read", fn["read"], ""),
        ("HTTP GET .png, first", web["first"], "≤ 300 ms"),
        ("HTTP GET .png, cached", web["cached"], "≤ 20 ms"),
        ("highlight boxes of a 2-sentence quote (cold page text)", boxes, ""),
    ]
    if js:
        rows += [("pdf.js in Chromium, render to canvas", js["first"], ""),
                 ("pdf.js, first page of a paper (+ getDocument)", js["first_open"], "")]
    for name, v, target in rows:
        print(f"| {name} | {v:.1f} | {v / base:.2f} | {target} |")
    print()
    print("| renderer | install size | PNG per page |")
    print("|---|---|---|")
    print(f"| pypdfium2 (wheel: bindings + libpdfium) | {pdfium_install_mb():.1f} MB | "
          f"{fn['png_kb']:.0f} kB |")
    if js:
        print(f"| pdfjs-dist (npm package; pdf.min.mjs + worker shipped) | {js['install_mb']:.1f} MB "
              f"({js['shipped_mb']:.1f} MB) | canvas in the browser |")
        print(f"\npdf.js vs PDFium pixels, page 2 of each paper: mean |grey difference| "
              f"{js['grey_diff']:.2f} / 255")
    return 0


if __name__ == "__main__":
    sys.exit(main())
