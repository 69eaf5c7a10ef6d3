"""A split paper made ready to store: sections with their ids and passages, object sections
(tables, figures, ...), the rows SQLite gets and the texts Chroma embeds -- nothing written.

Why its own module: the single ingest, the batch (in the parent or in a worker process) and
rebuild all prepare a paper the same way before they commit it; this part needs no store and
no lock, and what it returns pickles.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import EpistemeError
from ..fsutil import write_error, write_new_file
from ..paper import PaperSection
from .sentences import sentence_rows

PASSAGE_MAX_TOKENS = 200  # well under the model's 256-word-piece window (specials included)
NOT_EMBEDDED_KINDS = frozenset({"references"})  # kept in SQLite, never traced to
# sections holding one table/figure/algorithm/footnote each (store.OBJECT_KINDS)
OBJECT_KINDS = frozenset({"table", "figure", "algorithm", "footnote"})


@dataclass
class Prepared:
    """A split + embedded paper, ready to be written."""

    paper: object  # store.PaperRow
    sections: list  # list[paper.PaperSection], with ids and passages
    ids: list[str]
    embeddings: object  # np.ndarray
    metadatas: list[dict]
    documents: list[str]
    split_warnings: list[str]
    # sentence-vector rows (episteme.ingest.sentences), embedded with the split, outside the
    # lock; None = none stored (the answerer embeds such a paper's sentences when it needs them)
    sentence_rows: list | None = None



def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()



def tmp_dir(settings) -> Path:
    """``.episteme/tmp/``: private temp copies and staged vectors (created on first use)."""
    d = settings.data_dir / "tmp"
    d.mkdir(parents=True, exist_ok=True)
    return d



def write_temp_copy(settings, paper_id: str, data: bytes) -> Path:
    """The PDF's bytes in a private temp file (what is split, then renamed into ``raw/``),
    fsynced, with the mode of the raw file it will replace.  A full disk: the partial copy is
    removed and a :class:`~episteme.errors.WriteError` says nothing was stored."""
    try:
        tmp = tmp_dir(settings) / f"{paper_id}.{os.getpid()}.{time.time_ns()}.tmp"
        write_new_file(tmp, data, mode_of=settings.raw_dir / paper_id)
    except OSError as e:
        raise write_error(e, f"a temp copy of {paper_id} under .episteme/tmp",
                          "nothing was stored") from e
    return tmp


def split_paper(pdf: Path, *, use_outline: bool, max_pages, max_bytes):
    """The PDF work of an ingest (:func:`episteme.pdf.split.split_pdf`), the part a batch runs in
    worker processes: it needs no store and no model, and its result pickles."""
    from ..pdf.split import split_pdf

    return split_pdf(pdf, use_outline=use_outline, max_pages=max_pages, max_bytes=max_bytes)


def prepare_split(paper_id: str, res, sha: str, embedder, *, on_split=None) -> Prepared:
    """A split paper as store rows and passages, the passages not yet embedded (``embeddings`` is
    ``None``; its sentence vectors are, see :mod:`episteme.ingest.sentences`):
    a batch embeds the passages of several papers in one call, then commits each paper."""
    from ..pdf.passages import make_passages
    from ..stores.sqlite import PaperRow, PassageRow, section_id_for

    taken: set[str] = set()
    sections: list[PaperSection] = []
    for i, s in enumerate(res.sections):
        # the splitter's section, given its store identity (id, ord; unnumbered = None)
        s.title = s.title or ("Front matter" if s.kind == "front" else "Untitled")
        s.number = s.number or None
        s.id, s.ord = section_id_for(paper_id, s.number, s.title, taken), i
        s.level, s.page_start, s.page_end = int(s.level), int(s.page_start), int(s.page_end)
        if s.kind not in NOT_EMBEDDED_KINDS and s.text.strip():
            for j, p in enumerate(make_passages(s, embedder.count_tokens,
                                                max_tokens=PASSAGE_MAX_TOKENS)):
                s.passages.append(PassageRow(f"{s.id}~{j}", j, p.text, int(p.page),
                                             int(p.char_start), int(p.char_end),
                                             s.boxes_for(p.char_start, p.char_end)))
        sections.append(s)
    objects = _object_sections(paper_id, res, sections, taken, embedder)
    ids, docs, metas = [], [], []
    for s in sections:
        for p in s.passages:
            ids.append(p.id)
            docs.append(p.text)
            metas.append({"paper": paper_id, "section_id": s.id, "page": p.page,
                          "ord": p.ord, "kind": s.kind, "char_start": p.char_start,
                          "char_end": p.char_end})
    if not ids:
        raise EpistemeError(f"{paper_id}: no passages to embed (the text layer is empty?)")
    if on_split is not None:  # passages per section, in the order they are embedded (progress)
        # one entry per section the JSON lists; the objects' passages (embedded last) count
        # with the last section, so sections_total == sections_indexed and the sum is exact
        counts = [len(s.passages) for s in sections if s.kind not in OBJECT_KINDS]
        extra = sum(len(s.passages) for s in sections if s.kind in OBJECT_KINDS)
        if counts:
            counts[-1] += extra
        on_split(counts)
    paper = PaperRow(id=paper_id, file=f"raw/{paper_id}", sha256=sha, title=res.title or None,
                     authors=list(res.authors or []), pages=int(res.pages), ingested_at=_now(),
                     used_outline=bool(res.used_outline), warnings=list(res.warnings),
                     embedding_model=embedder.name, meta=dict(getattr(res, "meta", {}) or {}),
                     objects=objects)
    return Prepared(paper, sections, ids, None, metas, docs, list(res.warnings),
                     sentence_rows(paper_id, sections, embedder))


def _object_sections(paper_id: str, res, sections: list, taken: set[str], embedder) -> list:
    """Tables, figures, algorithms and footnotes become sections of their own kind (after the
    paper's sections), so their passages are embedded and a claim about a table value traces
    to "Table 4, p. 8" rather than to whatever prose the caption interrupted."""
    from ..pdf.passages import make_passages
    from ..stores.sqlite import PassageRow, section_id_for

    out = []
    for obj in res.objects:
        text = obj.caption if obj.kind == "footnote" else "\n".join(
            t for t in (obj.caption, obj.text) if t)
        if not text.strip():
            continue
        sid = section_id_for(paper_id, None, obj.label, taken)
        row = PaperSection(None, obj.label, 9, obj.kind, obj.page, obj.page, text,
                           [(0, obj.page)], id=sid, ord=len(sections))
        for j, p in enumerate(make_passages(row, embedder.count_tokens,
                                            max_tokens=PASSAGE_MAX_TOKENS)):
            box = [round(v, 1) for v in obj.bbox]  # the object's own box: caption and body
            row.passages.append(PassageRow(f"{sid}~{j}", j, p.text, int(p.page),
                                           int(p.char_start), int(p.char_end),
                                           [{"page": obj.page, "bbox": box, "start": 0,
                                             "end": len(p.text)}] if box[2] > box[0] else []))
        sections.append(row)
        out.append({**obj.as_dict(), "id": sid})
    return out
