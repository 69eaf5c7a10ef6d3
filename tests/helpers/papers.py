"""Real-paper helpers the ingest tests share: the two shared papers' file names, a smaller real
PDF cut from one, and a snapshot of everything an ingest may change (to prove a failure changed
nothing)."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
from pathlib import Path

from episteme.stores.vectors import open_vectors

ATT = "attention_1706.03762v5.pdf"
GAN = "gan_1406.2661v1.pdf"


def subset_pdf(src: Path, dest: Path, pages: range) -> Path:
    """A smaller real PDF (some pages of a paper) for fast ingests."""
    import pypdf

    reader = pypdf.PdfReader(src)
    writer = pypdf.PdfWriter()
    for i in pages:
        writer.add_page(reader.pages[i])
    buf = io.BytesIO()
    writer.write(buf)
    dest.write_bytes(buf.getvalue())
    return dest


def snapshot(settings) -> dict:
    """Everything ingest may change: raw/ bytes, the SQLite dump, the Chroma passage records."""
    raw = settings.raw_dir
    files = {}
    if raw.is_dir():
        for p in sorted(raw.rglob("*")):
            if p.is_file():
                files[str(p.relative_to(raw))] = hashlib.sha256(p.read_bytes()).hexdigest()
    dump = []
    if settings.sqlite_path.exists():
        con = sqlite3.connect(settings.sqlite_path)
        dump = [line for line in con.iterdump()]
        con.close()
    res = open_vectors(settings, model_name="all-MiniLM-L6-v2", dim=384).get(include_embeddings=True)
    vecs = sorted(
        (i, json.dumps(m, sort_keys=True), d, tuple(round(float(x), 5) for x in e[:8]))
        for i, m, d, e in zip(res["ids"], res["metadatas"], res["documents"], res["embeddings"], strict=True)
    )
    return {"raw": files, "sqlite": dump, "chroma": vecs}
