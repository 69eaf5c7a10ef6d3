"""SQLite store: papers, their logical sections and the passages that get embedded.

Why SQLite holds the text (and Chroma only vectors + ids): the tracer returns exact passages with
their page and character offsets, lint cross-checks wiki citations against real section ids, and
``rebuild`` can recreate Chroma from here or from ``raw/``.  Standard library ``sqlite3`` only.

- WAL mode, foreign keys on, ``PRAGMA user_version`` = schema version; :data:`MIGRATIONS` brings
  an older file up to date on open (each step in its own transaction).
- One transaction per paper: :meth:`Store.write_paper` replaces all rows of one paper and is
  committed (or rolled back) by the caller, so a failure elsewhere in ingest undoes it.
- An FTS5 index over passage text (kept in sync by triggers) for BM25 lexical search.

Why one module: the schema, its migrations, the row types and every query over them change
together (a new column is a migration, a row field and its queries at once), and this is the
only module that speaks SQL to ``sections.db``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EpistemeError
from ..fsutil import slugify
from ..paper import PaperSection

# Each entry upgrades the schema by one version (index 0 -> version 1).  Never edit a released
# step; append a new one.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE papers (
        id          TEXT PRIMARY KEY,          -- sanitized file name in raw/
        file        TEXT NOT NULL,             -- path relative to the wiki (raw/<id>)
        sha256      TEXT NOT NULL,
        title       TEXT,
        authors     TEXT NOT NULL DEFAULT '[]',  -- JSON list
        pages       INTEGER NOT NULL,
        ingested_at TEXT NOT NULL,
        used_outline INTEGER NOT NULL DEFAULT 0,
        warnings    TEXT NOT NULL DEFAULT '[]',  -- JSON list
        embedding_model TEXT
    );
    CREATE TABLE sections (
        section_id      TEXT PRIMARY KEY,      -- e.g. attention_1706.03762v5.pdf#3.2
        paper_id        TEXT NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
        ord             INTEGER NOT NULL,
        number          TEXT,
        title           TEXT NOT NULL,
        level           INTEGER NOT NULL,
        kind            TEXT NOT NULL,
        page_start      INTEGER NOT NULL,
        page_end        INTEGER NOT NULL,
        section_text    TEXT NOT NULL,
        section_title   TEXT NOT NULL,         -- "3.2 Multi-Head Attention"
        source_filename TEXT NOT NULL,
        UNIQUE (paper_id, ord)
    );
    CREATE TABLE passages (
        pk          INTEGER PRIMARY KEY,       -- stable rowid for the FTS index
        id          TEXT NOT NULL UNIQUE,      -- <section_id>~<ord>, also the Chroma id
        section_id  TEXT NOT NULL REFERENCES sections(section_id) ON DELETE CASCADE,
        paper_id    TEXT NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
        ord         INTEGER NOT NULL,
        text        TEXT NOT NULL,
        page        INTEGER NOT NULL,
        char_start  INTEGER NOT NULL,          -- offsets into sections.section_text
        char_end    INTEGER NOT NULL
    );
    CREATE INDEX passages_section ON passages(section_id, ord);
    CREATE INDEX passages_paper ON passages(paper_id);
    CREATE INDEX sections_paper ON sections(paper_id, ord);
    CREATE VIRTUAL TABLE passages_fts USING fts5(
        text, content='passages', content_rowid='pk',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN
        INSERT INTO passages_fts(rowid, text) VALUES (new.pk, new.text);
    END;
    CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
        INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.pk, old.text);
    END;
    CREATE TRIGGER passages_au AFTER UPDATE OF text ON passages BEGIN
        INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.pk, old.text);
        INSERT INTO passages_fts(rowid, text) VALUES (new.pk, new.text);
    END;
    """,
    # v2: tables, figures, algorithms and footnotes as objects of their own (their passages
    # live in a section of the object's kind, whose id is the object's id); paper metadata
    """
    CREATE TABLE objects (
        id          TEXT PRIMARY KEY,          -- <paper>#table-4, also its section_id
        paper_id    TEXT NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
        ord         INTEGER NOT NULL,
        kind        TEXT NOT NULL,             -- table | figure | algorithm | footnote
        label       TEXT NOT NULL,             -- "Table 4", "footnote 3"
        page        INTEGER NOT NULL,
        caption     TEXT NOT NULL,
        text        TEXT NOT NULL,             -- table rows (cells tab-separated), labels
        section     TEXT NOT NULL,             -- the section it is printed in
        bbox        TEXT NOT NULL DEFAULT '[]' -- JSON [x0, y0, x1, y1], PDF points
    );
    CREATE INDEX objects_paper ON objects(paper_id, ord);
    ALTER TABLE papers ADD COLUMN meta TEXT NOT NULL DEFAULT '{}';
    """,
    # v3: where each passage is printed, stored at ingest so a source is highlighted without
    # re-reading the PDF: JSON [{page, bbox: [x0, y0, x1, y1] (PDF points), start, end}], one
    # box per printed line, start/end = the line's characters within the passage text.  Rows
    # written before v3 keep '[]' (the highlighter then finds the quote in the PDF).
    """
    ALTER TABLE passages ADD COLUMN boxes TEXT NOT NULL DEFAULT '[]';
    """,
    # v4: sentence vectors, computed at ingest (episteme.ingest.sentences) so the offline
    # answerer scores every candidate sentence without embedding it at query time.  One row per
    # section: ``spans`` = int32 (start, end) pairs into sections.section_text, ``vectors`` =
    # float16 unit vectors, one per span, of ``model``.  Stores from before v4 have no rows
    # until ``episteme.ingest.sentences.backfill`` fills them.
    """
    CREATE TABLE sentence_vectors (
        section_id  TEXT PRIMARY KEY REFERENCES sections(section_id) ON DELETE CASCADE,
        paper_id    TEXT NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
        model       TEXT NOT NULL,
        spans       BLOB NOT NULL,
        vectors     BLOB NOT NULL
    );
    CREATE INDEX sentence_vectors_paper ON sentence_vectors(paper_id);
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
#: The oldest schema a read-only open accepts: the steps after it only add tables that readers
#: treat as optional (:meth:`Store.has_table`), so a wiki not yet migrated still answers queries.
READABLE_FROM = 3
OBJECT_KINDS = frozenset({"table", "figure", "algorithm", "footnote"})


@dataclass
class PassageRow:
    id: str
    ord: int
    text: str
    page: int
    char_start: int
    char_end: int
    boxes: list[dict] = field(default_factory=list)  # [{page, bbox, start, end}] (schema v3)


@dataclass
class PaperRow:
    id: str
    file: str
    sha256: str
    title: str | None
    authors: list[str]
    pages: int
    ingested_at: str
    used_outline: bool = False
    warnings: list[str] = field(default_factory=list)
    embedding_model: str | None = None
    meta: dict = field(default_factory=dict)  # year, venue, arxiv_id, doi (pdfmeta)
    objects: list[dict] = field(default_factory=list)  # PdfObject.as_dict() + "id"


def section_id_for(paper_id: str, number: str | None, title: str, taken: set[str]) -> str:
    """Readable, stable id: ``<paper>#<number>`` or ``<paper>#<title-slug>``, deduped ``-2``..."""
    key = (number or "").strip().rstrip(".") or slugify(title or "section", max_len=60)
    base = f"{paper_id}#{key}"
    sid, n = base, 2
    while sid in taken:
        sid = f"{base}-{n}"
        n += 1
    taken.add(sid)
    return sid


class Store:
    """One SQLite connection (not shared across threads)."""

    def __init__(self, path: str | Path, *, readonly: bool = False):
        self.path = Path(path)
        if not readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif not self.path.exists():
            raise EpistemeError(f"no SQLite store at {self.path} (ingest a paper first)")
        try:
            uri = f"file:{self.path}?mode=ro" if readonly else str(self.path)
            self.conn = sqlite3.connect(
                uri, uri=readonly, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            if readonly:
                self._readable_in_place()
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA busy_timeout = 30000")
            if not readonly:
                self.conn.execute("PRAGMA journal_mode = WAL")
                self.conn.execute("PRAGMA synchronous = NORMAL")
                self._migrate()
            elif not READABLE_FROM <= self.schema_version() <= SCHEMA_VERSION:
                raise EpistemeError(
                    f"{self.path} has schema version {self.schema_version()}, expected "
                    f"{SCHEMA_VERSION}; open it read-write once (any ingest) or run `episteme rebuild`"
                )
        except sqlite3.DatabaseError as e:
            raise EpistemeError(
                f"cannot open the SQLite store {self.path}: {e} (run `episteme rebuild`)"
            ) from e

    def _readable_in_place(self) -> None:
        """A WAL database in a folder nobody may write (a read-only mount) cannot be opened
        ``mode=ro`` once its ``-shm`` file is gone: SQLite would have to create it.  Then open it
        ``immutable`` (no -shm, no locks): nothing can change it while the folder is read-only."""
        try:
            self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            from ..fsutil import read_only_reason

            if read_only_reason(self.path.parent) is None:
                raise
            self.conn.close()
            self.conn = sqlite3.connect(f"file:{self.path.resolve().as_posix()}?mode=ro&immutable=1",
                                        uri=True, isolation_level=None, check_same_thread=False)

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def has_table(self, name: str) -> bool:
        """Whether the table exists (a read-only store may predate an additive migration)."""
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                 (name,)).fetchone() is not None

    def _migrate(self) -> None:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise EpistemeError(
                f"{self.path} was written by a newer episteme (schema {version} > {SCHEMA_VERSION})"
            )
        for v in range(version, SCHEMA_VERSION):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                # re-check under the write lock: another process may have migrated meanwhile
                if self.schema_version() > v:
                    self.conn.execute("COMMIT")
                    continue
                for stmt in _split_sql(MIGRATIONS[v]):
                    self.conn.execute(stmt)
                self.conn.execute(f"PRAGMA user_version = {v + 1}")
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def begin(self) -> None:
        """Start a write transaction the caller ends with :meth:`commit` / :meth:`rollback`
        (ingest keeps it open while it updates Chroma and raw/)."""
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    # -- writes (inside a transaction) --------------------------------------------------------

    def delete_paper(self, paper_id: str) -> bool:
        """Delete a paper and (by cascade) its sections, passages and FTS entries."""
        cur = self.conn.execute("DELETE FROM papers WHERE id = ?", (paper_id,))
        return cur.rowcount > 0

    def write_paper(self, paper: PaperRow, sections: Sequence[PaperSection]) -> None:
        """Replace every row of ``paper.id``.  Call inside :meth:`begin` or :meth:`transaction`."""
        if not self.conn.in_transaction:
            raise RuntimeError("write_paper must run inside a transaction")
        self.delete_paper(paper.id)
        self.conn.execute(
            "INSERT INTO papers (id, file, sha256, title, authors, pages, ingested_at, "
            "used_outline, warnings, embedding_model, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                paper.id,
                paper.file,
                paper.sha256,
                paper.title,
                json.dumps(paper.authors, ensure_ascii=False),
                paper.pages,
                paper.ingested_at,
                int(paper.used_outline),
                json.dumps(paper.warnings, ensure_ascii=False),
                paper.embedding_model,
                json.dumps(paper.meta, ensure_ascii=False),
            ),
        )
        self.conn.executemany(
            "INSERT INTO objects (id, paper_id, ord, kind, label, page, caption, text, section, "
            "bbox) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [
                (o["id"], paper.id, i, o["kind"], o["label"], int(o["page"]), o["caption"],
                 o["text"], o.get("section", ""), json.dumps(o.get("bbox", [])))
                for i, o in enumerate(paper.objects)
            ],
        )
        self.conn.executemany(
            "INSERT INTO sections (section_id, paper_id, ord, number, title, level, kind, "
            "page_start, page_end, section_text, section_title, source_filename) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    s.id,
                    paper.id,
                    s.ord,
                    s.number,
                    s.title,
                    s.level,
                    s.kind,
                    s.page_start,
                    s.page_end,
                    s.text,
                    s.section_title,
                    paper.id,
                )
                for s in sections
            ],
        )
        self.conn.executemany(
            "INSERT INTO passages (id, section_id, paper_id, ord, text, page, char_start, char_end, "
            "boxes) VALUES (?,?,?,?,?,?,?,?,?)",
            [
                (p.id, s.id, paper.id, p.ord, p.text, p.page, p.char_start, p.char_end,
                 json.dumps(p.boxes))
                for s in sections
                for p in s.passages
            ],
        )

    def write_sentence_vectors(self, rows: Sequence[tuple]) -> None:
        """Insert or replace sentence-vector rows ``(section_id, paper_id, model, spans bytes,
        vectors bytes)`` (see migration v4).  Call inside a transaction."""
        if not self.conn.in_transaction:
            raise RuntimeError("write_sentence_vectors must run inside a transaction")
        self.conn.executemany(
            "INSERT OR REPLACE INTO sentence_vectors (section_id, paper_id, model, spans, vectors) "
            "VALUES (?,?,?,?,?)", list(rows))

    # -- reads ---------------------------------------------------------------------------------

    def sentence_vectors(self, section_ids: Iterable[str], model: str, dim: int) -> dict:
        """``{section_id: (spans int32 (n, 2), vectors float32 (n, dim))}`` of the sections that
        have stored sentence vectors of ``model`` (others are left out)."""
        import numpy as np

        ids = list(dict.fromkeys(section_ids))
        out: dict = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for sid, spans, vecs in self.conn.execute(
                    f"SELECT section_id, spans, vectors FROM sentence_vectors WHERE model = ? "
                    f"AND section_id IN ({marks})", [model, *chunk]):
                sp = np.frombuffer(spans, dtype=np.int32).reshape(-1, 2)
                out[sid] = (sp, np.frombuffer(vecs, dtype=np.float16).reshape(len(sp), dim)
                            .astype(np.float32))
        return out


    def paper(self, paper_id: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM papers WHERE id = ?", (paper_id,)).fetchone()
        return _paper_dict(row) if row else None

    def objects(self, paper_id: str | None = None) -> list[dict]:
        """Tables, figures, algorithms and footnotes (``bbox`` decoded), in page order."""
        sql, args = "SELECT * FROM objects", []
        if paper_id is not None:
            sql, args = sql + " WHERE paper_id = ?", [paper_id]
        out = []
        for r in self.conn.execute(sql + " ORDER BY paper_id, ord", args):
            d = dict(r)
            d["bbox"] = json.loads(d["bbox"] or "[]")
            out.append(d)
        return out

    def papers(self) -> list[dict]:
        return [_paper_dict(r) for r in self.conn.execute("SELECT * FROM papers ORDER BY id")]

    def sections(self, paper_id: str | None = None) -> list[dict]:
        if paper_id is None:
            rows = self.conn.execute("SELECT * FROM sections ORDER BY paper_id, ord")
        else:
            rows = self.conn.execute(
                "SELECT * FROM sections WHERE paper_id = ? ORDER BY ord", (paper_id,)
            )
        return [dict(r) for r in rows]

    def paper_sections(self, paper_id: str) -> list[PaperSection]:
        """A paper's sections, in order, as the type ingest wrote them with (no passages, no
        page breaks: the writers need the text and where it is printed)."""
        return [
            PaperSection(
                id=s["section_id"], ord=int(s["ord"]), number=s["number"], title=s["title"],
                level=int(s["level"]), kind=s["kind"], page_start=int(s["page_start"]),
                page_end=int(s["page_end"]), text=s["section_text"],
            )
            for s in self.sections(paper_id)
        ]

    def section(self, section_id: str) -> dict | None:
        row = self.conn.execute(
            "SELECT * FROM sections WHERE section_id = ?", (section_id,)
        ).fetchone()
        return dict(row) if row else None

    def section_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT section_id FROM sections")}

    def passages(self, *, paper_id: str | None = None, section_id: str | None = None) -> list[dict]:
        sql, args = "SELECT * FROM passages", []
        if section_id is not None:
            sql += " WHERE section_id = ?"
            args.append(section_id)
        elif paper_id is not None:
            sql += " WHERE paper_id = ?"
            args.append(paper_id)
        sql += " ORDER BY paper_id, section_id, ord"
        return [_passage_dict(r) for r in self.conn.execute(sql, args)]

    def passages_by_id(self, ids: Iterable[str]) -> dict[str, dict]:
        ids = list(dict.fromkeys(ids))
        out: dict[str, dict] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(f"SELECT * FROM passages WHERE id IN ({marks})", chunk):
                out[r["id"]] = _passage_dict(r)
        return out

    def counts(self) -> dict[str, int]:
        return {
            t: int(self.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
            for t in ("papers", "sections", "passages")
        }

    # --- answerer queries (the offline answerer's reads: query/answer_candidates.py) ----------

    def section_texts(self, section_ids: Sequence[str]) -> list:
        """``(section_id, section_text, ord, section_title, kind, page_start, page_end)`` rows
        of the given sections (any order)."""
        return self.conn.execute(
            "SELECT section_id, section_text, ord, section_title, kind, page_start, page_end "
            f"FROM sections WHERE section_id IN ({','.join('?' * len(section_ids))})",
            list(section_ids)).fetchall()

    def passage_spans(self, section_ids: Sequence[str]) -> list:
        """``(passage id, section id, char_start, char_end, page)`` rows of the given sections,
        by section then position."""
        return self.conn.execute(
            "SELECT id, section_id, char_start, char_end, page FROM passages WHERE section_id IN "
            f"({','.join('?' * len(section_ids))}) ORDER BY section_id, ord", list(section_ids)
        ).fetchall()

    def unreferenced_section_ids(self, paper_ids: Sequence[str]) -> list:
        """``(section_id, paper_id)`` rows of the papers' sections other than their reference
        lists."""
        return self.conn.execute(
            "SELECT section_id, paper_id FROM sections WHERE paper_id IN "
            f"({','.join('?' * len(paper_ids))}) AND kind != 'references'", list(paper_ids)).fetchall()

    def body_section_titles(self, paper_ids: Sequence[str]) -> list:
        """``(section_id, section_title)`` rows of the papers' body sections with text (no
        references, front matter, tables, figures or footnotes)."""
        return self.conn.execute(
            "SELECT section_id, section_title FROM sections WHERE paper_id IN "
            f"({','.join('?' * len(paper_ids))}) AND kind NOT IN ('references', 'front', "
            "'table', 'figure', 'footnote') AND length(section_text) > 0",
            list(paper_ids)).fetchall()

    def prose_section_ids(self, paper_id: str) -> list[str]:
        """A paper's section ids in order, without its references and front matter."""
        return [r[0] for r in self.conn.execute(
            "SELECT section_id FROM sections WHERE paper_id = ? AND kind NOT IN "
            "('references', 'front') ORDER BY ord", (paper_id,))]
    # -- what ingest asks of the store (its SQL lives here, not in ingest/) -------------------

    def paper_ids(self) -> list[str]:
        """Every stored paper id (the ids a new paper's id must not collide with)."""
        return [str(r[0]) for r in self.conn.execute("SELECT id FROM papers")]

    def passage_counts(self, paper_id: str) -> dict[str, int]:
        """Passages per section id of one paper (what ingest reports per section)."""
        return {sid: int(n) for sid, n in self.conn.execute(
            "SELECT section_id, count(*) FROM passages WHERE paper_id = ? GROUP BY section_id",
            (paper_id,))}

    def paper_section_texts(self, paper_id: str) -> list[tuple[str, str, str]]:
        """``(section id, kind, text)`` of one paper's sections, in reading order."""
        return [(r[0], r[1], r[2]) for r in self.conn.execute(
            "SELECT section_id, kind, section_text FROM sections WHERE paper_id = ? ORDER BY ord",
            (paper_id,))]

    def papers_without_sentence_vectors(self, model: str) -> list[str]:
        """Papers with a section that has no sentence-vector row for ``model``."""
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT s.paper_id FROM sections s LEFT JOIN sentence_vectors v "
            "ON v.section_id = s.section_id AND v.model = ? WHERE v.section_id IS NULL "
            "ORDER BY s.paper_id", (model,))]

    def sentence_vector_spans(self, model: str) -> Iterator[tuple[str, str, str, bytes]]:
        """``(paper id, section kind, section text, stored spans)`` of every section with a
        sentence-vector row for ``model`` (a backfill checks the spans are still current)."""
        yield from self.conn.execute(
            "SELECT s.paper_id, s.kind, s.section_text, v.spans FROM sections s JOIN sentence_vectors v "
            "ON v.section_id = s.section_id AND v.model = ?", (model,))

    def checkpoint(self) -> None:
        """Fold the WAL into the database file and truncate it (before the file is moved)."""
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def search_passages_fts(
        self, query: str, paper_ids: Sequence[str] | None = None, limit: int = 20, *, match_all: bool = False
    ) -> list[dict]:
        """BM25 search over passage text.  ``query`` is user text: it is reduced to word tokens,
        each double-quoted, so FTS5 operators in it (``NEAR``, ``*``, ``:``, quotes) are inert.

        Returns passages best first with ``score`` (= -bm25, higher is better).
        """
        fts_query = fts5_quote(query, match_all=match_all)
        if not fts_query or limit <= 0:
            return []
        sql = (
            "SELECT p.*, -bm25(passages_fts) AS score FROM passages_fts "
            "JOIN passages p ON p.pk = passages_fts.rowid WHERE passages_fts MATCH ?"
        )
        args: list = [fts_query]
        if paper_ids is not None:
            paper_ids = list(paper_ids)
            if not paper_ids:
                return []
            sql += f" AND p.paper_id IN ({','.join('?' * len(paper_ids))})"
            args.extend(paper_ids)
        sql += " ORDER BY bm25(passages_fts) LIMIT ?"
        args.append(int(limit))
        out = []
        for r in self.conn.execute(sql, args):
            d = _passage_dict(r)
            d["score"] = float(r["score"])
            out.append(d)
        return out


    # -- the tracer's reads (query.trace): its SQL lives here ---------------------------------

    def papers_signature(self) -> tuple:
        """Changes whenever a paper is ingested, re-ingested or removed (one cheap query)."""
        return tuple(self.conn.execute(
            "SELECT count(*), max(ingested_at), group_concat(sha256) FROM papers").fetchone())

    def paper_hashes(self) -> dict[str, str]:
        """Paper id -> the sha256 of its PDF (a batch finds duplicates by content; the tracer
        notices a re-ingested paper)."""
        return {r[0]: r[1] for r in self.conn.execute("SELECT id, sha256 FROM papers")}

    def passage_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM passages").fetchone()[0])

    def search_passage_ids(self, fts_query: str, paper_ids: Sequence[str] | None,
                           exclude_kinds: Sequence[str], limit: int) -> list[str]:
        """Passage ids matching the FTS5 query ``fts_query`` (already safe: built by
        :func:`fts5_quote` or of quoted phrases), best BM25 first, in ``paper_ids`` (None = all),
        outside sections of ``exclude_kinds``.  FTS5 errors propagate."""
        sql = ("SELECT p.id FROM passages_fts JOIN passages p ON p.pk = passages_fts.rowid "
               "JOIN sections s ON s.section_id = p.section_id WHERE passages_fts MATCH ?")
        args: list = [fts_query]
        if paper_ids is not None:
            sql += f" AND p.paper_id IN ({','.join('?' * len(paper_ids))})"
            args.extend(paper_ids)
        if exclude_kinds:
            sql += f" AND s.kind NOT IN ({','.join('?' * len(exclude_kinds))})"
            args.extend(exclude_kinds)
        sql += " ORDER BY bm25(passages_fts) LIMIT ?"
        args.append(int(limit))
        return [r[0] for r in self.conn.execute(sql, args)]

    def passage_bm25(self, fts_query: str, ids: Sequence[str]) -> dict[str, float]:
        """``-bm25`` of ``fts_query`` for each passage of ``ids`` it matches (higher is better)."""
        out: dict[str, float] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            marks = ",".join("?" * len(chunk))
            for pid, sc in self.conn.execute(
                "SELECT p.id, -bm25(passages_fts) FROM passages_fts JOIN passages p ON "
                f"p.pk = passages_fts.rowid WHERE passages_fts MATCH ? AND p.id IN ({marks})",
                [fts_query, *chunk],
            ):
                out[pid] = float(sc)
        return out

    def doc_freq(self, fts_query: str) -> int:
        """How many passages match ``fts_query`` (FTS5 errors propagate)."""
        return int(self.conn.execute(
            "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?", (fts_query,)).fetchone()[0])

    def section_text(self, section_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT section_text FROM sections WHERE section_id = ?", (section_id,)).fetchone()
        return row[0] if row else None

    def passage_texts_containing(self, piece: str, paper_ids: Sequence[str] | None) -> Iterator[str]:
        """Texts of the passages whose lower-cased text contains ``piece`` (a cheap filter;
        callers check the exact form themselves)."""
        sql = "SELECT text FROM passages WHERE instr(lower(text), ?) > 0"
        args: list = [piece]
        if paper_ids is not None:
            sql += f" AND paper_id IN ({','.join('?' * len(paper_ids))})"
            args.extend(paper_ids)
        for (text,) in self.conn.execute(sql, args):
            yield text

    def passage_texts_matching(self, fts_query: str, limit: int) -> list[str]:
        """Texts of (up to ``limit``) passages matching ``fts_query`` (FTS5 errors propagate)."""
        return [r[0] for r in self.conn.execute(
            "SELECT p.text FROM passages_fts JOIN passages p ON p.pk = passages_fts.rowid "
            "WHERE passages_fts MATCH ? LIMIT ?", (fts_query, limit))]

    def passages_with_sections(self, ids: Iterable[str]) -> dict[str, dict]:
        """Passages by id with their section's title and kind, as the tracer reads them; a later
        chunk of a table also gets ``table_head``: its section's text before it (the caption and
        column header it lacks, at most 6,000 characters)."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, dict] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(
                "SELECT p.id, p.paper_id, p.section_id, p.text, p.page, p.char_start, p.char_end, "
                "s.section_title, s.kind, CASE WHEN s.kind = 'table' AND p.char_start > 0 "
                "THEN substr(s.section_text, 1, p.char_start) END "
                "FROM passages p JOIN sections s ON s.section_id = p.section_id "
                f"WHERE p.id IN ({marks})", chunk,
            ):
                out[r[0]] = {
                    "id": r[0], "paper": r[1], "section_id": r[2], "text": r[3], "page": r[4],
                    "char_start": r[5], "char_end": r[6], "section": r[7], "kind": r[8],
                }
                if r[9]:
                    out[r[0]]["table_head"] = r[9][:6000]
        return out


_WORD = re.compile(r"\w+", re.UNICODE)


def fts5_quote(text: str, *, match_all: bool = False) -> str:
    """User text -> a safe FTS5 query: each word a quoted string, joined by OR (or AND)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text or "")))
    if not words:
        return ""
    joiner = " AND " if match_all else " OR "
    return joiner.join('"' + w.replace('"', '""') + '"' for w in words[:64])


def _paper_dict(row: sqlite3.Row) -> dict:
    d = dict(row)
    d["authors"] = json.loads(d.get("authors") or "[]")
    d["warnings"] = json.loads(d.get("warnings") or "[]")
    d["used_outline"] = bool(d.get("used_outline"))
    d["meta"] = json.loads(d.get("meta") or "{}")
    return d


def _passage_dict(row: sqlite3.Row) -> dict:
    d = dict(row)
    d.pop("pk", None)
    if "boxes" in d:
        d["boxes"] = json.loads(d["boxes"] or "[]")
    return d


def passage_boxes(settings, ids: Iterable[str]) -> dict[str, list[dict]]:
    """Stored boxes of the passages ``ids`` (``{id: [{page, bbox, start, end}]}``, passages
    without stored boxes left out): what the highlighter uses before re-reading a PDF.  {} when
    the store cannot be opened (a wiki not yet ingested, an older schema read-only)."""
    ids = [i for i in dict.fromkeys(ids) if isinstance(i, str)]
    if not ids:
        return {}
    try:
        store = open_store(settings, readonly=True)
    except (EpistemeError, sqlite3.Error, OSError):
        return {}
    try:
        return {k: p["boxes"] for k, p in store.passages_by_id(ids).items() if p.get("boxes")}
    except sqlite3.Error:
        return {}
    finally:
        store.close()


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements (``sqlite3.complete_statement`` handles triggers)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--") and not buf.strip():
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


def search_passages_fts(settings, query: str, paper_ids: Sequence[str] | None = None,
                        limit: int = 20, *, match_all: bool = False) -> list[dict]:
    """BM25 passage search in the wiki's store (empty when nothing is ingested yet)."""
    if not settings.sqlite_path.exists():
        return []
    with open_store(settings, readonly=True) as st:
        return st.search_passages_fts(query, paper_ids, limit, match_all=match_all)


def open_store(settings, *, readonly: bool = False) -> Store:
    """The SQLite store at ``settings.sqlite_path``."""
    return Store(settings.sqlite_path, readonly=readonly)
