"""wiki-lint ``--stores``: raw/, SQLite and Chroma agree with each other and with the wiki.

Imported only when ``--stores`` is given (it needs sqlite3, chromadb and, for ``--fix``, the
embedding model), so a plain lint run stays standard library + PyYAML.

Checks: every ``raw/`` PDF has its paper row and every paper row its file (``store-raw-missing``,
``store-row-missing``); the file's sha256 is the ingested one (``store-sha-mismatch``); each
paper's passage vectors in Chroma are exactly its passages in SQLite (``store-vector-count``); the
vectors and papers were embedded with the configured model (``store-model-mismatch``); every
source ``index.json`` cites is a paper in SQLite (``store-unknown-source``).  The one repair,
embedding passages that lost their vector, reuses the ingest metadata layout.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from ..errors import EpistemeError
from .rules import Finding, SectionInfo, finding

_CHUNK = 1 << 20


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(_CHUNK)
            if not b:
                return h.hexdigest()
            h.update(b)


def _rel(root: str, path: Any) -> str:
    try:
        return os.path.relpath(os.fspath(path), root).replace(os.sep, "/")
    except ValueError:
        return os.fspath(path)


def _settings(root: str, settings: Any):
    if settings is not None:
        return settings
    from ..config import load_settings

    return load_settings(root)


def check_stores(root: str, settings: Any, on: frozenset[str], sections: list[tuple[str, SectionInfo]]) -> list[Finding]:
    """The store-* findings for the wiki at ``root``."""
    from ..ingest.pipeline import list_raw
    from ..stores.sqlite import Store

    settings = _settings(root, settings)
    out: list[Finding] = []
    raw = {p.name: p for p in list_raw(settings)}
    db_rel = _rel(root, settings.sqlite_path)
    if not settings.sqlite_path.exists():
        if raw and "store-row-missing" in on:
            for name in sorted(raw):
                out.append(finding("store-row-missing", f"raw/{name}", None,
                                   f"{name} is in raw/ but there is no SQLite store ({db_rel}); run episteme rebuild"))
        return out
    try:
        store = Store(settings.sqlite_path, readonly=True)
    except EpistemeError as e:
        if "store-unavailable" in on:
            out.append(finding("store-unavailable", db_rel, None, e.message))
        return out
    with store:
        papers = {p["id"]: p for p in store.papers()}
        passage_counts = dict(store.conn.execute("SELECT paper_id, count(*) FROM passages GROUP BY paper_id").fetchall())
        passage_ids = {r[0]: r[1] for r in store.conn.execute("SELECT id, paper_id FROM passages")}
    for pid, p in sorted(papers.items()):
        path = raw.get(pid)
        if path is None:
            if "store-raw-missing" in on:
                out.append(finding("store-raw-missing", f"raw/{pid}", None,
                                   f"{pid} is in SQLite but raw/{pid} is missing (episteme remove {pid}, or restore the file)"))
        elif "store-sha-mismatch" in on and _sha256(os.fspath(path)) != p["sha256"]:
            out.append(finding("store-sha-mismatch", f"raw/{pid}", None,
                               f"raw/{pid} changed since it was ingested (sha256 differs); re-ingest it with --force"))
        model = p.get("embedding_model")
        if model and model != settings.embedding_model and "store-model-mismatch" in on:
            out.append(finding("store-model-mismatch", db_rel, None,
                               f"{pid} was embedded with {model}, the configured model is {settings.embedding_model} "
                               f"(run episteme rebuild)", paper=pid))
    if "store-row-missing" in on:
        for name in sorted(set(raw) - set(papers)):
            out.append(finding("store-row-missing", f"raw/{name}", None,
                               f"raw/{name} is not in SQLite (ingest it: episteme ingest raw/{name})"))
    if "store-unknown-source" in on:
        out.extend(_unknown_sources(root, set(papers)))
    if on & {"store-vector-count", "store-model-mismatch", "store-unavailable"}:
        out.extend(_vector_findings(root, settings, on, papers, passage_counts, passage_ids))
    return out


def _unknown_sources(root: str, papers: set[str]) -> list[Finding]:
    from ..wiki.index import INDEX_JSON, parse_index_json
    from .indexes import JSON_KEY, line_map, read_text

    text = read_text(os.path.join(root, INDEX_JSON))
    if text is None:
        return []
    try:
        mapping = parse_index_json(text)
    except EpistemeError:
        return []  # reported as index-malformed
    lines, _ = line_map(text, JSON_KEY)
    out = []
    for sid, sources in mapping.items():
        unknown = [s for s in sources if s not in papers]
        if unknown:
            out.append(finding("store-unknown-source", INDEX_JSON, lines.get(sid),
                               f"{sid} cites {', '.join(unknown)}, which SQLite does not hold (not ingested)",
                               section=sid, sources=unknown))
    return out


def _passages_collection(settings):
    from ..stores.vectors import PASSAGES, make_client, physical_name

    client = make_client(settings)
    try:
        return client.get_collection(physical_name(settings, PASSAGES, client),
                                     embedding_function=None)
    except Exception:
        return None


def _vector_findings(root, settings, on, papers, passage_counts, passage_ids) -> list[Finding]:
    out: list[Finding] = []
    chroma_rel = _rel(root, settings.chroma_path) if not settings.chroma_host else f"chroma://{settings.chroma_host}"
    if not settings.chroma_host:  # Chroma's own error for this is "error returned from database"
        from ..stores.vectors import read_only_chroma

        reason = read_only_chroma(settings.chroma_path)
        if reason and "store-read-only" in on:
            out.append(finding("store-read-only", chroma_rel, None,
                               f"Chroma at {chroma_rel} is read-only ({reason}): Chroma cannot open "
                               "it in place, so a temporary copy was checked"))
    try:
        col = _passages_collection(settings)
        got = col.get(include=["metadatas"]) if col is not None else {"ids": [], "metadatas": []}
    except EpistemeError as e:
        if "store-unavailable" in on:
            out.append(finding("store-unavailable", chroma_rel, None, e.message))
        return out
    except Exception as e:  # a damaged Chroma folder raises its own exception types
        if "store-unavailable" in on:
            out.append(finding("store-unavailable", chroma_rel, None, f"cannot read Chroma: {e}"))
        return out
    if col is not None and "store-model-mismatch" in on:
        recorded = (col.metadata or {}).get("embedding_model")
        if recorded != settings.embedding_model:
            out.append(finding("store-model-mismatch", chroma_rel, None,
                               f"the passage vectors were made with {recorded!r}, the configured model is "
                               f"{settings.embedding_model!r} (run episteme rebuild)"))
    if "store-vector-count" not in on:
        return out
    vec_ids: dict[str, str | None] = {}
    for vid, meta in zip(got["ids"], got["metadatas"] or [None] * len(got["ids"]), strict=False):
        vec_ids[vid] = (meta or {}).get("paper")
    per_paper: dict[str, int] = {}
    for p in vec_ids.values():
        per_paper[p or "?"] = per_paper.get(p or "?", 0) + 1
    missing_by_paper: dict[str, list[str]] = {}
    for pid_, paper in passage_ids.items():
        if pid_ not in vec_ids:
            missing_by_paper.setdefault(paper, []).append(pid_)
    extra_by_paper: dict[str, int] = {}
    for vid, paper in vec_ids.items():
        if vid not in passage_ids:
            extra_by_paper[paper or "?"] = extra_by_paper.get(paper or "?", 0) + 1
    for paper in sorted(set(papers) | set(per_paper) - {"?"} | set(extra_by_paper)):
        n_sql = int(passage_counts.get(paper, 0))
        n_vec = per_paper.get(paper, 0)
        missing = missing_by_paper.get(paper, [])
        extra = extra_by_paper.get(paper, 0)
        if n_sql == n_vec and not missing and not extra:
            continue
        file = f"raw/{paper}" if paper in papers else chroma_rel
        detail = []
        if missing:
            detail.append(f"{len(missing)} passage(s) without a vector")
        if extra:
            detail.append(f"{extra} vector(s) without a passage")
        out.append(finding("store-vector-count", file, None,
                           f"{paper}: {n_sql} passage(s) in SQLite, {n_vec} vector(s) in Chroma ({'; '.join(detail)})",
                           paper=paper, passages=n_sql, vectors=n_vec, missing=len(missing), extra=extra,
                           _missing_ids=sorted(missing)))
    return out


def fix_vectors(root: str, settings: Any, items: list[Finding]) -> list[dict[str, Any]]:
    """Embed the passages that have no vector and add them with the metadata ingest writes.
    Refused (reported, nothing written) when Chroma holds another model's vectors: mixing
    vector spaces would corrupt search; ``episteme rebuild`` is the repair then."""
    from ..stores.embedding import get_embedder
    from ..stores.sqlite import Store
    from ..stores.vectors import open_vectors

    settings = _settings(root, settings)
    col = _passages_collection(settings)
    if col is not None and (col.metadata or {}).get("embedding_model") != settings.embedding_model:
        return [{"fix": "vectors-skipped", "file": _rel(root, settings.chroma_path),
                 "message": "not re-embedding: Chroma holds another model's vectors (run episteme rebuild)"}]
    ids = [i for f in items for i in f.data["_missing_ids"]]
    with Store(settings.sqlite_path, readonly=True) as store:
        rows = store.passages_by_id(ids)
        kinds = dict(store.conn.execute("SELECT section_id, kind FROM sections").fetchall())
    rows_list = [rows[i] for i in ids if i in rows]
    if not rows_list:
        return []
    embedder = get_embedder(settings)
    vectors = open_vectors(settings, embedder)
    embs = embedder.encode([r["text"] for r in rows_list], batch_size=32, progress=False)
    metas = [
        {"paper": r["paper_id"], "section_id": r["section_id"], "page": r["page"], "ord": r["ord"],
         "kind": kinds.get(r["section_id"], "body"), "char_start": r["char_start"], "char_end": r["char_end"]}
        for r in rows_list
    ]
    vectors.add([r["id"] for r in rows_list], embs, metas, [r["text"] for r in rows_list])
    out = []
    per: dict[str, int] = {}
    for r in rows_list:
        per[r["paper_id"]] = per.get(r["paper_id"], 0) + 1
    for paper, n in sorted(per.items()):
        out.append({"fix": "vectors", "file": f"raw/{paper}", "message": f"embedded {n} missing passage vector(s) of {paper}"})
    return out
