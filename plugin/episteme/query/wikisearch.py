"""Search over the WIKI's sections: lexical (SQLite FTS5, BM25) and semantic (Chroma) fused.

Why a derived index rather than reading pages per query: a question must find its sections in
milliseconds among thousands, by words (BM25 catches names, numbers, rare terms) and by meaning
(embeddings catch paraphrase).  The pages stay the source of truth: the index is a cache under
``<wiki>/.episteme/wiki_index.db`` (plus the Chroma collection ``wiki_sections``) that
:meth:`WikiSectionIndex.refresh` brings up to date by content hash, and that can be deleted at
any time (the next refresh rebuilds it, dropping the stale Chroma collection too).

Refresh is cheap when nothing changed: a page whose size and mtime are unchanged is not even
read; a changed page is parsed, and only sections whose hash (page, title, description, body,
sources) changed are re-embedded.  One refresh at a time per wiki (a lock file, taken with
the portable lock of :mod:`episteme.fsutil`), so the writer and a query process can both call it.

A read-only wiki (a read-only mount, or no write permission) is searched through an
in-memory copy of the stored index (read with SQLite's ``immutable`` flag, so nothing is
written; empty if it was never built), refreshed in memory against the pages, with the vectors
in a temporary copy of Chroma (:func:`episteme.stores.vectors.make_client`); nothing is locked.

Each section gets a few vectors in Chroma (ids ``sec_002#0``, ``sec_002#1`` ...; metadata
``section_id``): the first is the title + description + the start of the body, the others cover
later parts of the body, so a question about the end of a long section still finds it.  A
section's semantic score is its best vector's similarity.  The two rankings are fused with
reciprocal rank fusion (robust to the incomparable scales of BM25 and cosine).

Why one module: the FTS5 table, the Chroma collection and the fusion of their rankings are one
index with one refresh protocol (content hash, lock, read-only fallback); split apart, the
lexical and semantic halves could fall out of step.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from ..errors import EpistemeError
from ..fsutil import file_lock, read_only_reason
from ..stores.sqlite import fts5_quote
from ..wiki.files import iter_page_files
from ..wiki.sections import SectionFormatError, parse_page
from .text import STOP

DB_NAME = "wiki_index.db"
COLLECTION = "wiki_sections"
INDEX_VERSION = 1  # bump when the stored layout or the vector recipe changes: forces a rebuild
RRF_K = 60  # the usual reciprocal-rank-fusion constant: ranks below ~60 matter little
CHUNK_WORDS = 140  # body words per extra vector (the model reads ~256 word pieces)
MAX_VECTORS_PER_SECTION = 8  # bound the cost of one huge section
# BM25 column weights: a word in the title or description says more about the section than
# the same word somewhere in its body.
FTS_WEIGHTS = (4.0, 2.5, 1.0)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    page TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sections (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    page TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    text TEXT NOT NULL,
    sources TEXT NOT NULL,
    hash TEXT NOT NULL,
    nvec INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sections_page ON sections(page);
CREATE VIRTUAL TABLE IF NOT EXISTS sections_fts USING fts5(
    title, description, text, content='sections', content_rowid='pk',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS sections_ai AFTER INSERT ON sections BEGIN
    INSERT INTO sections_fts(rowid, title, description, text)
    VALUES (new.pk, new.title, new.description, new.text);
END;
CREATE TRIGGER IF NOT EXISTS sections_ad AFTER DELETE ON sections BEGIN
    INSERT INTO sections_fts(sections_fts, rowid, title, description, text)
    VALUES ('delete', old.pk, old.title, old.description, old.text);
END;
"""

# Function words that only slow FTS5 down and add noise to an OR query: the query layer's one list.
_STOP = STOP
_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str) -> str:
    """The content words of ``text`` (stopwords dropped, unless nothing else is left)."""
    words = _WORD.findall(text or "")
    kept = [w for w in words if w.lower() not in _STOP]
    return " ".join(kept or words)


def _section_hash(page: str, title: str, description: str, text: str, sources: list[str]) -> str:
    h = hashlib.sha256()
    for part in (str(INDEX_VERSION), page, title, description, text, "\x1f".join(sources)):
        h.update(part.encode("utf-8", "replace"))
        h.update(b"\x00")
    return h.hexdigest()


def _vector_texts(sec: dict) -> list[str]:
    """What gets embedded for one section: a head vector, then chunks of the body."""
    words = sec["text"].split()
    head = f"{sec['title']}. {sec['description']}".strip()
    out = [f"{head} {' '.join(words[:CHUNK_WORDS])}".strip()]
    for start in range(CHUNK_WORDS, len(words), CHUNK_WORDS):
        if len(out) >= MAX_VECTORS_PER_SECTION:
            break
        out.append(f"{sec['title']}: {' '.join(words[start:start + CHUNK_WORDS])}")
    return out


class WikiSectionIndex:
    """The lexical + semantic index of one wiki's sections.  Thread-safe.

    ``embedder`` defaults to :func:`episteme.stores.embedding.get_embedder` (loaded on first use).
    :meth:`search` refreshes once per instance before its first query; after writing pages,
    call :meth:`refresh` (cheap when nothing changed).
    """

    def __init__(self, settings, embedder=None):
        self.settings = settings
        self.wiki = Path(settings.wiki)
        self.db_path = settings.data_dir / DB_NAME
        self._embedder = embedder
        self._vectors = None
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._refreshed = False
        self._read_only: str | None = None  # why the data folder cannot be written, once known

    # -- plumbing ------------------------------------------------------------------------------

    @property
    def embedder(self):
        if self._embedder is None:
            from ..stores.embedding import get_embedder

            self._embedder = get_embedder(self.settings)
        return self._embedder

    @property
    def vectors(self):
        if self._vectors is None:
            from ..stores.vectors import open_vectors

            self._vectors = open_vectors(self.settings, self.embedder)
        return self._vectors

    def _db(self) -> sqlite3.Connection:
        if self._conn is None and self._check_read_only():
            self._conn = self._open_read_only()
        if self._conn is None:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = sqlite3.connect(str(self.db_path), timeout=30.0, isolation_level=None,
                                       check_same_thread=False)
                conn.row_factory = sqlite3.Row
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.executescript(_SCHEMA)
            except sqlite3.DatabaseError as e:
                raise EpistemeError(
                    f"the wiki search index {self.db_path} is unreadable ({e}); delete it, it is "
                    "rebuilt from the pages on the next query"
                ) from e
            self._conn = conn
        return self._conn

    def _check_read_only(self) -> str | None:
        if self._read_only is None:
            self._read_only = read_only_reason(self.settings.data_dir) or ""
        return self._read_only or None

    def _open_read_only(self) -> sqlite3.Connection:
        """An in-memory copy of the stored index (empty when it was never built), read without
        writing anything (``immutable``: no -shm/-wal files, which a read-only folder could not
        hold).  Refreshes then update the copy, so pages changed since are still found."""
        mem = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        mem.row_factory = sqlite3.Row
        if self.db_path.is_file():
            uri = "file:" + self.db_path.resolve().as_posix() + "?mode=ro&immutable=1"
            try:
                src = sqlite3.connect(uri, uri=True)
                try:
                    src.backup(mem)
                finally:
                    src.close()
            except sqlite3.DatabaseError as e:
                raise EpistemeError(
                    f"the wiki search index {self.db_path} is unreadable ({e}) and the wiki is "
                    f"read-only ({self._read_only}): rebuild it with write access"
                ) from e
        mem.executescript(_SCHEMA)
        return mem

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> WikiSectionIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _meta(self, key: str) -> str | None:
        row = self._db().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self._db().execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def _signature(self) -> str:
        return json.dumps({"version": INDEX_VERSION, "model": self.embedder.name, "dim": self.embedder.dim})

    # -- refresh -------------------------------------------------------------------------------

    def refresh(self) -> dict:
        """Bring the index up to date with the pages.  Returns ``{"added", "updated",
        "removed", "unchanged", "pages_read", "rebuilt"}``."""
        if self._check_read_only():  # in memory: no lock to take, nothing shared to protect
            lock = contextlib.nullcontext()
        else:
            lock = file_lock(self.settings.data_dir / "wiki_index.lock")
        with self._lock, lock:
            result = self._refresh_locked()
            self._refreshed = True
            return result

    def _refresh_locked(self) -> dict:
        db = self._db()
        rebuilt = False
        stored_count = int(db.execute("SELECT count(*) FROM sections").fetchone()[0])
        if self._meta("signature") != self._signature():
            rebuilt = True
        elif stored_count and self.vectors.count(COLLECTION) == 0:
            rebuilt = True  # Chroma lost its collection (deleted folder): re-embed everything
        if rebuilt:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM sections")
            db.execute("DELETE FROM pages")
            db.execute("DELETE FROM meta")
            db.execute("COMMIT")
            self.vectors.drop(COLLECTION)

        known_pages = {r["page"]: (r["size"], r["mtime_ns"]) for r in db.execute("SELECT * FROM pages")}
        current: dict[str, tuple[int, int]] = {}
        for rel in iter_page_files(self.wiki):
            try:
                st = os.stat(self.wiki / rel)
            except OSError:
                continue
            current[rel] = (st.st_size, st.st_mtime_ns)
        changed = [p for p, sig in current.items() if known_pages.get(p) != sig]
        gone_pages = [p for p in known_pages if p not in current]

        fallback = _Lazy(self._index_md_descriptions)  # index.md is parsed only if a marker lacks one
        parsed: dict[str, list[dict]] = {}
        for rel in changed:
            parsed[rel] = self._read_sections(rel, fallback)

        # Which sections exist now, page by page (unchanged pages keep their stored rows).  Only
        # the rows of the touched pages, and of the ids found on them, are read: a refresh after
        # one paper's write costs that paper's sections, not the whole wiki's (nothing at all
        # when no page changed).
        touched_pages = set(parsed) | set(gone_pages)
        stored = self._stored_rows(touched_pages, {sec["id"] for secs in parsed.values() for sec in secs})
        new_rows: dict[str, dict] = {}
        for rel, secs in parsed.items():
            for sec in secs:
                if sec["id"] in new_rows:
                    continue  # duplicate id across pages: the first page read wins (lint reports it)
                owner = stored.get(sec["id"])
                if owner and owner["page"] != rel and owner["page"] in current and owner["page"] not in parsed:
                    continue  # the id already lives on an unchanged page
                new_rows[sec["id"]] = sec
        removed = [sid for sid, row in stored.items()
                   if row["page"] in touched_pages and sid not in new_rows]
        added = [sid for sid in new_rows if sid not in stored]
        updated = [sid for sid in new_rows if sid in stored and stored[sid]["hash"] != new_rows[sid]["hash"]]
        unchanged = stored_count - len(removed) - len(updated) if not rebuilt else 0

        to_embed = [new_rows[sid] for sid in added + updated]
        texts: list[str] = []
        owners: list[tuple[str, int]] = []
        for sec in to_embed:
            for j, t in enumerate(_vector_texts(sec)):
                texts.append(t)
                owners.append((sec["id"], j))
        embeddings = self.embedder.encode(texts, batch_size=32) if texts else []

        # Chroma first (idempotent deletes/adds), then SQLite in one transaction: a crash in
        # between leaves rows whose hash is stale or missing, which the next refresh redoes.
        stale_vec_ids = [f"{sid}#{j}" for sid in removed + updated for j in range(int(stored[sid]["nvec"]))]
        if stale_vec_ids:
            self.vectors.delete(ids=stale_vec_ids, collection=COLLECTION)
        if texts:
            self.vectors.add(
                [f"{sid}#{j}" for sid, j in owners], embeddings,
                [{"section_id": sid, "part": j, "page": new_rows[sid]["page"]} for sid, j in owners],
                texts, collection=COLLECTION,
            )
        nvec: dict[str, int] = {}
        for sid, _j in owners:
            nvec[sid] = nvec.get(sid, 0) + 1
        db.execute("BEGIN IMMEDIATE")
        try:
            for sid in removed + updated:
                db.execute("DELETE FROM sections WHERE id = ?", (sid,))
            for sid in added + updated:
                sec = new_rows[sid]
                db.execute(
                    "INSERT INTO sections (id, page, title, description, text, sources, hash, nvec) "
                    "VALUES (?,?,?,?,?,?,?,?)",
                    (sid, sec["page"], sec["title"], sec["description"], sec["text"],
                     json.dumps(sec["sources"], ensure_ascii=False), sec["hash"], nvec.get(sid, 0)),
                )
            for sid in new_rows:  # a section that moved page without changing content
                if sid not in added and sid not in updated:
                    db.execute("UPDATE sections SET page = ? WHERE id = ?", (new_rows[sid]["page"], sid))
            for rel in gone_pages:
                db.execute("DELETE FROM pages WHERE page = ?", (rel,))
            for rel in changed:
                size, mtime = current[rel]
                db.execute("INSERT OR REPLACE INTO pages (page, size, mtime_ns) VALUES (?,?,?)",
                           (rel, size, mtime))
            self._set_meta("signature", self._signature())
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return {"added": len(added), "updated": len(updated), "removed": len(removed),
                "unchanged": max(0, unchanged), "pages_read": len(changed), "rebuilt": rebuilt,
                "rows_read": len(stored), "index_md_read": fallback.called}

    def _stored_rows(self, pages: set[str], ids: set[str]) -> dict[str, dict]:
        """Stored ``id, page, hash, nvec`` of the sections on ``pages`` or with an id in
        ``ids`` (by the ``page`` index and the ``id`` key, 500 at a time)."""
        db = self._db()
        out: dict[str, dict] = {}
        for column, values in (("page", sorted(pages)), ("id", sorted(ids))):
            for start in range(0, len(values), 500):
                chunk = values[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for r in db.execute(f"SELECT id, page, hash, nvec FROM sections WHERE {column} IN ({marks})",
                                    chunk):
                    out[r["id"]] = dict(r)
        return out

    def _index_md_descriptions(self) -> dict[str, str]:
        """Descriptions from ``index.md``, for sections whose marker has none."""
        from ..wiki.index import read_index_md

        try:
            return {sid: e.description for sid, e in read_index_md(self.wiki).entries.items()}
        except (OSError, UnicodeDecodeError):
            return {}

    def _read_sections(self, rel: str, fallback: _Lazy) -> list[dict]:
        try:
            text = (self.wiki / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        if "<!-- section" not in text:
            return []
        try:
            page = parse_page(text, strict=True)
        except SectionFormatError:
            page = parse_page(text, strict=False)
        out = []
        for s in page.sections:
            desc = " ".join((s.description or fallback().get(s.id, "")).split())
            title = s.title or s.id
            body = s.body.strip()
            sources = list(s.sources)
            out.append({"id": s.id, "page": rel, "title": title, "description": desc, "text": body,
                        "sources": sources, "hash": _section_hash(rel, title, desc, body, sources)})
        return out

    # -- search --------------------------------------------------------------------------------

    def count(self) -> int:
        with self._lock:
            return int(self._db().execute("SELECT count(*) FROM sections").fetchone()[0])

    def ids(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db().execute("SELECT id FROM sections ORDER BY id")]

    def get(self, ids: Iterable[str]) -> dict[str, dict]:
        """Stored sections by id (unknown ids are absent from the result)."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, dict] = {}
        with self._lock:
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for r in self._db().execute(f"SELECT * FROM sections WHERE id IN ({marks})", chunk):
                    out[r["id"]] = _row_dict(r)
        return out

    def lexical(self, text: str, n: int = 50) -> list[tuple[str, float]]:
        """``(section id, bm25 score)`` best first."""
        q = fts5_quote(query_terms(text))
        if not q or n <= 0:
            return []
        w = ", ".join(str(x) for x in FTS_WEIGHTS)
        with self._lock:
            rows = self._db().execute(
                f"SELECT s.id, -bm25(sections_fts, {w}) AS score FROM sections_fts "
                "JOIN sections s ON s.pk = sections_fts.rowid WHERE sections_fts MATCH ? "
                f"ORDER BY bm25(sections_fts, {w}) LIMIT ?",
                (q, int(n)),
            ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def term_df(self, terms: Iterable[str], surface: dict[str, str] | None = None
                ) -> tuple[dict[str, int], int]:
        """``({term: number of sections containing it}, number of sections)``: document
        frequencies for an absolute relevance score.  Each (stemmed) term is asked as
        :func:`~episteme.query.trace.fts_term` asks the passages, with ``surface`` (stem -> a
        word of the question that makes it, :func:`~episteme.query.trace.surface_words`) so
        that FTS5's own Porter stemmer cannot turn a stem into a prefix of other words."""
        from .text import fts_term

        surface = surface or {}
        out: dict[str, int] = {}
        with self._lock:
            db = self._db()
            total = int(db.execute("SELECT count(*) FROM sections").fetchone()[0])
            for t in terms:
                try:
                    out[t] = int(db.execute("SELECT count(*) FROM sections_fts WHERE sections_fts "
                                            "MATCH ?", (fts_term(t, surface.get(t)),)).fetchone()[0])
                except sqlite3.Error:
                    out[t] = 0
        return out, total

    def pages_with(self, term: str, pages: Iterable[str], word: str | None = None) -> set[str]:
        """Which of ``pages`` have a section containing ``term`` (asked like :meth:`term_df`,
        ``word`` being the question's word for it): a page names a thing even where one section
        does not."""
        from .text import fts_term

        pages = list(dict.fromkeys(pages))
        if not pages or not term:
            return set()
        marks = ",".join("?" * len(pages))
        with self._lock:
            db = self._db()
            try:
                rows = db.execute(
                    "SELECT DISTINCT s.page FROM sections_fts JOIN sections s ON s.pk = "
                    f"sections_fts.rowid WHERE sections_fts MATCH ? AND s.page IN ({marks})",
                    [fts_term(term, word), *pages]).fetchall()
            except sqlite3.Error:
                return set()
        return {r[0] for r in rows}

    def semantic(self, text: str, n: int = 50, *, vector=None) -> list[tuple[str, float]]:
        """``(section id, best cosine similarity)`` best first."""
        if n <= 0 or not (text or "").strip():
            return []
        with self._lock:
            total = self.vectors.count(COLLECTION)
        if total == 0:
            return []
        vec = vector if vector is not None else self.embedder.encode([text])[0]
        hits = self.vectors.query([vec], min(total, n * 3), collection=COLLECTION)[0]
        best: dict[str, float] = {}
        for h in hits:
            sid = h["metadata"].get("section_id") or h["id"].split("#", 1)[0]
            if h["similarity"] > best.get(sid, -2.0):
                best[sid] = h["similarity"]
        return sorted(best.items(), key=lambda kv: -kv[1])[:n]

    def search(self, text: str, k: int = 8, *, exclude_ids: Iterable[str] = (),
               extra: int = 0) -> list[dict]:
        """The ``k`` sections most relevant to ``text``: dicts with ``id, page, title,
        description, text, score, sources`` (plus ``lexical_rank`` / ``semantic_rank`` /
        ``similarity``), best first.  ``score`` is the reciprocal-rank-fusion score.
        ``extra``: that many more of the ranking after the ``k`` (the first ``k`` are the same
        as without: the candidate pool is sized by ``k``)."""
        if not self._refreshed:
            self.refresh()
        if k <= 0 or not (text or "").strip():
            return []
        exclude = set(exclude_ids)
        pool = max(50, 4 * k + len(exclude))
        lex = [(sid, s) for sid, s in self.lexical(text, pool) if sid not in exclude]
        sem = [(sid, s) for sid, s in self.semantic(text, pool) if sid not in exclude]
        fused: dict[str, float] = {}
        for ranking in (lex, sem):
            for rank, (sid, _s) in enumerate(ranking):
                fused[sid] = fused.get(sid, 0.0) + 1.0 / (RRF_K + rank + 1)
        order = sorted(fused, key=lambda sid: -fused[sid])[:k + max(0, extra)]
        rows = self.get(order)
        lex_rank = {sid: i + 1 for i, (sid, _s) in enumerate(lex)}
        sem_rank = {sid: i + 1 for i, (sid, _s) in enumerate(sem)}
        sims = dict(sem)
        out = []
        for sid in order:
            row = rows.get(sid)
            if row is None:
                continue
            row["score"] = round(fused[sid], 6)
            row["lexical_rank"] = lex_rank.get(sid)
            row["semantic_rank"] = sem_rank.get(sid)
            row["similarity"] = round(sims[sid], 4) if sid in sims else None
            out.append(row)
        return out


class _Lazy:
    """A value computed on first call (then kept); ``called`` says whether it was needed."""

    def __init__(self, make):
        self._make = make
        self.called = False
        self._value = None

    def __call__(self):
        if not self.called:
            self._value = self._make()
            self.called = True
        return self._value


def _row_dict(r: sqlite3.Row) -> dict:
    return {
        "id": r["id"],
        "page": r["page"],
        "title": r["title"],
        "description": r["description"],
        "text": r["text"],
        "sources": json.loads(r["sources"] or "[]"),
    }


def refresh_after_write(settings, embedder=None) -> dict | None:
    """Bring the wiki-section index up to date right after pages were written, so the first
    question on a freshly written wiki is as fast as the next (issue 34: the first ``retrieve``
    otherwise parses and embeds every section written since).  The writer calls it with its
    warm embedder.  Never fails the write: ``None`` when the index cannot be built here (the
    embedding model not installed, the data folder not writable, a damaged index: the next
    query then refreshes, as before)."""
    try:
        with WikiSectionIndex(settings, embedder) as index:
            return index.refresh()
    except (EpistemeError, ImportError, OSError, sqlite3.Error):
        return None
