"""The evidence viewer's back end on real papers: page images (render, disk cache, name and path
checks), highlight boxes of quotes (from the page's own text positions, tolerant of pypdf's
repairs; inside one column of a two-column paper), the HTTP routes, and ``episteme show``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from episteme.pdf.highlight import words_in_order
from ingested_wiki import wiki_settings
from serverlive import LiveServer, request, written_template  # noqa: F401  (fixture)

ATTENTION = "attention_1706.03762v5.pdf"
TWO_COLUMN = "s2orc_acl2020.pdf"  # ACL format: two columns of body text


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def png_pixels(data: bytes):
    """Decode our own PNGs (8-bit RGB, filter 0 on every row) into an (h, w, 3) array."""
    import numpy as np

    w, h = png_size(data)
    pos, idat = 8, b""
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, w * 3 + 1)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, 3)


def body_quotes(pdf: Path, n: int, seed: int = 3) -> list[tuple[int, str]]:
    """``n`` quotes as the tracer makes them: two consecutive sentences of a body section, as
    pypdf extracted and repaired them, with the page their first character is on."""
    from episteme.pdf.passages import split_sentences
    from episteme.pdf.split import split_pdf

    out = []
    for s in split_pdf(pdf).sections:
        if s.kind != "body":
            continue
        sents = split_sentences(s.text)
        for i in range(len(sents) - 1):
            a, b = sents[i][0], sents[i + 1][1]
            q = s.text[a:b]
            if 80 <= len(q) <= 400 and sum(c.isalpha() for c in q) > 0.7 * len(q):
                out.append((s.page_at(a), q))
    random.Random(seed).shuffle(out)
    return out[:n]


def test_normalize_drops_what_pypdf_repairs():
    from episteme.pdf.highlight import normalize

    a = normalize("The ﬁrst repre\ufffesentation, self-\r\nattention (Fig. 2).")[0]
    b = normalize("The first representation, self-attention (Fig. 2).")[0]
    assert a == b == "thefirstrepresentationselfattentionfig2"
    _n, _src, words = normalize("a  b-c\u00add")
    assert len(words) == 3  # a | b | cd  (a soft hyphen joins, a real hyphen separates)


def test_line_boxes_split_lines_and_columns():
    from episteme.pdf.highlight import line_boxes

    left = [(100 + 6 * i, 700, 105 + 6 * i, 710) for i in range(10)]
    next_line = [(100 + 6 * i, 688, 105 + 6 * i, 698) for i in range(5)]
    right_col = [(320 + 6 * i, 760, 325 + 6 * i, 770) for i in range(4)]
    boxes = line_boxes(left + next_line + right_col)
    assert boxes == [[100, 700, 159, 710], [100, 688, 129, 698], [320, 760, 343, 770]]


def test_quotes_are_highlighted_on_their_page(papers_dir):
    """Real quotes (pypdf's text) are found by PDFium's text, on their page or the next, and
    the text under the boxes is the quote's words in order."""
    from episteme.pdf.highlight import quote_boxes, text_in_box

    pdf = papers_dir / ATTENTION
    quotes = body_quotes(pdf, 15)
    assert len(quotes) == 15
    ok = 0
    for page, q in quotes:
        boxes = quote_boxes(pdf, page, q)
        assert boxes, q
        assert {b["page"] for b in boxes} <= {page, page + 1}
        under = " ".join(text_in_box(pdf, b["page"], b["bbox"]) for b in boxes)
        ok += words_in_order(q, under) >= 0.9
        for b in boxes:
            x0, y0, x1, y1 = b["bbox"]
            assert 0 <= x0 < x1 <= 612 and 0 <= y0 < y1 <= 792
            assert y1 - y0 < 30  # one line per box, not a block
    assert ok >= 14


def test_a_quote_elsewhere_is_not_placed_on_the_wrong_page(papers_dir):
    from episteme.pdf.highlight import quote_boxes

    pdf = papers_dir / ATTENTION
    (page, q), = body_quotes(pdf, 1, seed=11)
    far = 1 if page > 4 else 12
    assert quote_boxes(pdf, far, q, neighbours=0) == []
    assert quote_boxes(pdf, page, "zebra quantum marmalade " * 3) == []
    assert quote_boxes(pdf, None, q)  # no page: every page is searched


def test_two_column_highlights_stay_inside_one_column(papers_dir):
    """Every box of every quote of a two-column paper lies within one column: none crosses the
    gutter (boxes follow the lines of a column, even when a quote runs on into the next).  A
    line that itself crosses the gutter (a full-width caption: the page has text in the gutter
    at that height) may be highlighted across it."""
    from episteme.pdf.highlight import quote_boxes, text_in_box

    pdf = papers_dir / TWO_COLUMN
    quotes = body_quotes(pdf, 25)
    placed = narrow = wide = covered = 0
    for page, q in quotes:
        boxes = quote_boxes(pdf, page, q)
        if not boxes:
            continue
        placed += 1
        under = " ".join(text_in_box(pdf, b["page"], b["bbox"]) for b in boxes)
        # most quotes are covered whole; one that runs on past an interrupting float may be
        # highlighted up to the float only
        covered += words_in_order(q, under) >= 0.8
        assert words_in_order(q, under) >= 0.5, q
        mid = 595.28 / 2
        for b in boxes:
            x0, y0, x1, y1 = b["bbox"]
            if text_in_box(pdf, b["page"], [mid - 2, y0 + 1, mid + 2, y1 - 1]).strip():
                wide += 1
                continue
            assert x1 <= mid + 4 or x0 >= mid - 4, (q, b)  # left column or right column
            narrow += 1
    assert placed >= 22 and narrow > 5 * wide
    assert covered >= 0.9 * placed


# -------------------------------------------------------------------------------- rendering


@pytest.fixture
def raw_wiki(tmp_path, papers_dir):
    wiki = tmp_path / "wiki"
    (wiki / "raw").mkdir(parents=True)
    for name in (ATTENTION, TWO_COLUMN):
        shutil.copy(papers_dir / name, wiki / "raw" / name)
    return wiki


def test_page_png_renders_once_then_comes_from_the_cache(raw_wiki):
    from episteme.pdf.render import page_png

    s = wiki_settings(raw_wiki)
    path = page_png(s, ATTENTION, 3, 1.5)
    assert path.is_file() and raw_wiki / ".episteme" / "pages" in path.parents
    w, h = png_size(path.read_bytes())
    assert (w, h) == (round(612 * 1.5), round(792 * 1.5))
    px = png_pixels(path.read_bytes())
    assert px.mean() > 200 and px.min() < 50  # a white page with dark text on it
    mtime = path.stat().st_mtime_ns
    assert page_png(s, ATTENTION, "3", 1.5) == path and path.stat().st_mtime_ns == mtime
    assert page_png(s, ATTENTION, 3, 0.5) != path
    # a re-ingested file (new bytes) never shows the old image
    pdf = raw_wiki / "raw" / ATTENTION
    pdf.write_bytes(pdf.read_bytes() + b"\n% touched\n")
    assert page_png(s, ATTENTION, 3, 1.5) != path


@pytest.mark.parametrize("paper,page,scale,err", [
    ("nope.pdf", 1, 1.5, "NotFoundError"),
    ("../raw/" + ATTENTION, 1, 1.5, "NotFoundError"),
    ("..", 1, 1.5, "NotFoundError"),
    (".episteme.pdf", 1, 1.5, "NotFoundError"),
    (ATTENTION, 0, 1.5, "NotFoundError"),
    (ATTENTION, 16, 1.5, "NotFoundError"),
    (ATTENTION, "x", 1.5, "NotFoundError"),
    (ATTENTION, 1, 0.1, "UsageError"),
    (ATTENTION, 1, 9, "UsageError"),
    (ATTENTION, 1, float("nan"), "UsageError"),
])
def test_bad_names_pages_and_scales_are_refused(raw_wiki, paper, page, scale, err):
    from episteme.pdf.render import page_png

    with pytest.raises(Exception) as e:
        page_png(wiki_settings(raw_wiki), paper, page, scale)
    assert type(e.value).__name__ == err
    assert not list((raw_wiki / ".episteme").rglob("*.png")) if (raw_wiki / ".episteme").exists() else True


def test_symlink_out_of_raw_is_refused(raw_wiki, tmp_path, papers_dir):
    from episteme.errors import NotFoundError
    from episteme.pdf.render import page_png

    outside = tmp_path / "outside.pdf"
    shutil.copy(papers_dir / ATTENTION, outside)
    (raw_wiki / "raw" / "link.pdf").symlink_to(outside)
    with pytest.raises(NotFoundError):
        page_png(wiki_settings(raw_wiki), "link.pdf", 1)


def test_highlighted_png_tints_exactly_the_boxes(raw_wiki):
    from episteme.pdf.highlight import quote_boxes
    from episteme.pdf.render import highlighted_png, page_png

    pdf = raw_wiki / "raw" / ATTENTION
    page, q = body_quotes(pdf, 1, seed=5)[0]
    boxes = quote_boxes(pdf, page, q)
    page = boxes[0]["page"]
    marked, geo = highlighted_png(raw_wiki, ATTENTION, page, boxes, 1.0)
    plain = png_pixels(page_png(wiki_settings(raw_wiki), ATTENTION, page, 1.0).read_bytes())
    hi = png_pixels(marked)
    assert hi.shape == plain.shape and geo["pixels"] == [hi.shape[1], hi.shape[0]]
    x0, y0, x1, y1 = boxes[0]["bbox"]
    top = geo["origin"][1] + geo["height"]
    # the box's pixels on average (one pixel may sit on a glyph, where little is left to tint)
    rows, cols = slice(int(top - y1) + 1, int(top - y0)), slice(int(x0) + 1, int(x1))
    inside_hi, inside_plain = hi[rows, cols].astype(float), plain[rows, cols].astype(float)
    assert inside_hi[..., 2].mean() < inside_plain[..., 2].mean() - 60  # blue drops: yellow marker
    assert abs(inside_hi[..., 0].mean() - inside_plain[..., 0].mean()) < 30  # red stays: legible
    outside = hi[: int(top - y1) - 10]
    assert (outside == plain[: int(top - y1) - 10]).all()  # nothing else changed


# ------------------------------------------------------------------------------------ HTTP


@pytest.fixture
def raw_site(raw_wiki):
    with LiveServer(wiki_settings(raw_wiki), warm=False) as srv:
        yield srv


def get(url: str) -> tuple[int, bytes, dict]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def test_http_page_images_pdf_and_boxes(raw_site):
    base = raw_site.url + "/papers/" + ATTENTION
    status, body, hdrs = get(base + "/pages/2.png?scale=1")
    assert status == 200 and hdrs["content-type"] == "image/png"
    assert png_size(body) == (612, 792)
    cached = list((raw_site.settings.wiki / ".episteme" / "pages").rglob("p2@1.png"))
    assert len(cached) == 1 and cached[0].read_bytes() == body
    assert get(base + "/pages/2.png?scale=1")[1] == body
    status, body, hdrs = get(base + "/pdf")
    assert status == 200 and hdrs["content-type"] == "application/pdf"
    assert body == (raw_site.settings.wiki / "raw" / ATTENTION).read_bytes()
    status, info, _ = request("GET", base)
    assert status == 200 and info["page_count"] == 15 and info["pages"][0]["width"] == 612
    page, q = body_quotes(raw_site.settings.wiki / "raw" / ATTENTION, 1, seed=9)[0]
    from urllib.parse import quote as urlquote

    status, r, _ = request("GET", f"{base}/boxes?page={page}&quote={urlquote(q)}")
    assert status == 200 and r["boxes"] and r["boxes"][0]["page"] in (page, page + 1)


@pytest.mark.parametrize("path,code", [
    ("/papers/nope.pdf/pages/1.png", 404),
    (f"/papers/{ATTENTION}/pages/0.png", 404),
    (f"/papers/{ATTENTION}/pages/99.png", 404),
    (f"/papers/{ATTENTION}/pages/1.png?scale=50", 400),
    (f"/papers/{ATTENTION}/pages/1.png?scale=0", 400),
    (f"/papers/{ATTENTION}/pages/1.png?scale=abc", 422),
    ("/papers/..%2F..%2Fetc%2Fpasswd/pages/1.png", 404),
    ("/papers/%2e%2e/pages/1.png", 404),
    ("/papers/..%5C..%5Cwiki.pdf/pdf", 404),
    ("/papers/.episteme/pdf", 404),
    ("/papers/..%2Fraw%2F" + ATTENTION + "/pdf", 404),
    ("/papers/nope.pdf/pdf", 404),
])
def test_http_refuses_unknown_papers_pages_scales_and_escapes(raw_site, path, code):
    status, body, hdrs = get(raw_site.url + path)
    assert status == code, (path, body[:200])
    assert json.loads(body)["error"]
    assert hdrs["content-type"].startswith("application/json")


# --------------------------------------------------------------------------------- the CLI


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "WIKI_PATH"}
    return subprocess.run([sys.executable, "-m", "episteme.cli", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=cwd)


def test_show_writes_the_page_with_the_quote_highlighted(raw_wiki, tmp_path):
    pdf = raw_wiki / "raw" / TWO_COLUMN
    page, q = body_quotes(pdf, 1, seed=2)[0]
    out = tmp_path / "shot.png"
    proc = run_cli("show", TWO_COLUMN, "--page", str(page), "--quote", q, "--out", str(out),
                   "--wiki", str(raw_wiki), "--scale", "1")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["out"] == str(out) and r["boxes"] and r["page"] == page
    assert png_size(out.read_bytes()) == tuple(r["pixels"])
    # without --page, the page is found from the quote
    proc = run_cli("show", TWO_COLUMN, "--quote", q, "--out", str(out), "--wiki", str(raw_wiki))
    assert proc.returncode == 0 and json.loads(proc.stdout)["page"] in (page, page + 1)
    # a quote that is not there is an error, not an image without a highlight
    proc = run_cli("show", TWO_COLUMN, "--page", "1", "--quote", "zebra quantum marmalade " * 3,
                   "--out", str(tmp_path / "x.png"), "--wiki", str(raw_wiki))
    assert proc.returncode == 1 and "not found" in json.loads(proc.stdout)["error"]
    assert not (tmp_path / "x.png").exists()
    proc = run_cli("show", "../" + TWO_COLUMN, "--page", "1", "--out", str(tmp_path / "y.png"),
                   "--wiki", str(raw_wiki))
    assert proc.returncode == 1 and not (tmp_path / "y.png").exists()


def test_attach_boxes_gives_sources_passages_and_contradicted_claims_their_boxes(raw_wiki):
    from episteme.pdf.highlight import attach_boxes

    pdf = raw_wiki / "raw" / ATTENTION
    (p1, q1), (p2, q2) = body_quotes(pdf, 2, seed=4)
    stored = [{"page": 1, "bbox": [1, 2, 3, 4]}]
    result = {
        "sources": [{"paper": ATTENTION, "page": p1, "quote": q1, "passage": "x"},
                    {"paper": "missing.pdf", "page": 1, "quote": q1},
                    {"paper": ATTENTION, "page": p1, "quote": q1, "boxes": stored}],
        "claims": [
            {"claim": "c1", "verdict": "contradicted",
             "evidence": [{"paper": ATTENTION, "page": p2, "quote": q2}]},
            {"claim": "c2", "supported": True, "passages": [{"paper": ATTENTION, "page": p1, "quote": q1}]},
        ],
    }
    attach_boxes(raw_wiki, result)
    s = result["sources"]
    assert s[0]["boxes"] and s[0]["boxes"][0]["page"] in (p1, p1 + 1)
    assert s[1]["boxes"] == []  # a paper not in raw/: no boxes, no error
    assert s[2]["boxes"] == stored  # stored coordinates are kept
    c1, c2 = result["claims"]
    assert c1["boxes"] and c1["boxes"] == c1["evidence"][0]["boxes"]
    assert c1["boxes"][0]["page"] in (p2, p2 + 1)
    assert "boxes" not in c2 and c2["passages"][0]["boxes"] == s[0]["boxes"]


# ------------------------------------------------------------------ answers over a real wiki


@pytest.fixture(scope="module")
def answered(written_template, tmp_path_factory):  # noqa: F811
    from serverlive import serve_copy

    with serve_copy(written_template, tmp_path_factory.mktemp("ev") / "wiki") as srv:
        yield srv


def test_chat_and_trace_sources_carry_boxes_on_the_quote(answered):
    from episteme.pdf.highlight import text_in_box
    from serverlive import post_json

    wiki = answered.settings.wiki
    q = "What BLEU score did the Transformer reach on English-to-French translation?"
    status, r, _ = post_json(answered.url, "/chat", {"query": q})
    assert status == 200 and r["sources"]
    good = 0
    for s in r["sources"]:
        assert isinstance(s["boxes"], list)
        under = " ".join(text_in_box(wiki / "raw" / s["paper"], b["page"], b["bbox"]) for b in s["boxes"])
        good += bool(s["boxes"]) and words_in_order(s["quote"], under) >= 0.9
    assert good >= max(1, len(r["sources"]) - 1)
    # POST /trace: the same boxes for the same answer
    status, t, _ = post_json(answered.url, "/trace", {"answer": r["answer"],
                                                      "sections": r["wiki_sections_used"]})
    assert status == 200, t
    by_id = {s["passage_id"]: s["boxes"] for s in r["sources"]}
    assert t["sources"] and all(s["boxes"] == by_id[s["passage_id"]] for s in t["sources"]
                                if s["passage_id"] in by_id)
    assert all("boxes" in p for c in t["claims"] for p in c["passages"])
    status, bad, _ = post_json(answered.url, "/trace", {"answer": "x", "sections": ["sec_001"],
                                                        "papers": [ATTENTION]})
    assert status == 400 and "not both" in bad["error"]


def test_chat_render_writes_one_image_per_source(answered, tmp_path):
    out = tmp_path / "shots"
    proc = run_cli("chat", "How does multi-head attention work?", "--wiki",
                   str(answered.settings.wiki), "--render", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["sources"]
    images = sorted(out.glob("source-*.png"))
    assert len(images) == len(r["sources"]) == len([s for s in r["sources"] if s.get("image")])
    for s in r["sources"]:
        data = Path(s["image"]).read_bytes()
        w, h = png_size(data)
        assert (w, h) == (round(612 * 1.5), round(792 * 1.5))
        assert f"-p{s['boxes'][0]['page'] if s['boxes'] else s['page']}.png" in s["image"]
    # a highlighted image differs from the plain page: the marker is in it
    s = next(s for s in r["sources"] if s["boxes"])
    from episteme.pdf.render import page_png

    plain = png_pixels(page_png(answered.settings, s["paper"], s["boxes"][0]["page"], 1.5).read_bytes())
    hi = png_pixels(Path(s["image"]).read_bytes())
    assert (hi != plain).any(axis=2).mean() > 0.002


def test_show_passage_highlights_a_stored_passage(answered, tmp_path):
    from episteme.stores.sqlite import open_store

    with open_store(answered.settings, readonly=True) as st:
        p = next(x for x in st.passages(paper_id=ATTENTION) if len(x["text"]) > 300)
    out = tmp_path / "p.png"
    proc = run_cli("show", ATTENTION, "--passage", p["id"], "--out", str(out), "--wiki",
                   str(answered.settings.wiki))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["page"] in (p["page"], p["page"] + 1) and r["boxes"] and out.is_file()
    proc = run_cli("show", "gan_1406.2661v1.pdf", "--passage", p["id"], "--out", str(out),
                   "--wiki", str(answered.settings.wiki))
    assert proc.returncode == 2 and "is from" in json.loads(proc.stdout)["error"]
    proc = run_cli("show", ATTENTION, "--passage", "nope~1", "--out", str(out), "--wiki",
                   str(answered.settings.wiki))
    assert proc.returncode == 1 and "no passage" in json.loads(proc.stdout)["error"]


def test_a_readers_own_highlight_annotations_are_not_drawn(raw_wiki):
    """The shared Attention PDF carries a reader's highlight annotations on page 3: rendered,
    they would look like our evidence highlight, so pages are rendered without them."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as praw
    from episteme.pdf.render import page_png

    pdf = raw_wiki / "raw" / ATTENTION
    doc = pdfium.PdfDocument(str(pdf))
    try:
        assert praw.FPDFPage_GetAnnotCount(doc[2]) > 5
        with_annots = doc[2].render(scale=1, rev_byteorder=True).to_numpy()
    finally:
        doc.close()
    ours = png_pixels(page_png(wiki_settings(raw_wiki), ATTENTION, 3, 1).read_bytes())

    def yellow(a):
        return float((a[:, :, 2].astype(int) < a[:, :, 0].astype(int) - 60).mean())

    assert yellow(with_annots) > 0.03 and yellow(ours) < 0.01


def test_concurrent_renders_and_boxes_are_safe(raw_site):
    """PDFium is not thread-safe: the server's thread pool runs renders and box searches of
    the same documents at once, and every answer must still be whole and right."""
    from concurrent.futures import ThreadPoolExecutor
    from urllib.parse import quote as urlquote

    base = raw_site.url + "/papers/"
    quotes = body_quotes(raw_site.settings.wiki / "raw" / TWO_COLUMN, 6, seed=8)
    jobs = [("png", ATTENTION, n, 0.5 + 0.25 * (n % 3)) for n in range(1, 13)]
    jobs += [("png", TWO_COLUMN, n, 1.0) for n in range(1, 9)]
    jobs += [("boxes", TWO_COLUMN, p, q) for p, q in quotes]

    def run(job):
        kind, paper, n, arg = job
        if kind == "png":
            status, body, _ = get(f"{base}{paper}/pages/{n}.png?scale={arg}")
            return status, png_size(body) if status == 200 else None
        status, r, _ = request("GET", f"{base}{paper}/boxes?page={n}&quote={urlquote(arg)}")
        return status, bool(r.get("boxes"))

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, jobs))
    assert all(status == 200 for status, _ in results), results
    for (kind, paper, _n, arg), (_s, got) in zip(jobs, results, strict=True):
        if kind == "png":
            w = 612 if paper == ATTENTION else 595.28
            assert abs(got[0] - w * arg) < 1  # PDFium rounds a fractional size up
        else:
            assert got, "every quote is placed under concurrency too"
