"""Chroma: passage vectors (and, for other modules, wiki-section vectors).

We compute embeddings ourselves and always pass them explicitly: Chroma's default embedding
function would try to download a model.  Each collection records the embedding model's name and
dimension in its metadata; opening it with another model is an error that names
``episteme rebuild`` (mixing vector spaces silently returns nonsense neighbours).

Embedded ``PersistentClient`` under ``settings.chroma_path`` by default; ``chroma_host`` /
``chroma_port`` switch to an ``HttpClient`` against a Chroma server.

**Several wikis on one server.**  An embedded store lives inside its wiki (``.episteme/chroma``),
so its collections keep the plain names ``passages`` and ``wiki_sections``.  On a Chroma server
every wiki's collections are named with the wiki's id (``passages_<id>``, see :func:`wiki_id`),
so any number of wikis share one server without seeing each other's vectors.  A wiki that used a
server before ids existed (plain ``passages`` there) is migrated the first time it opens the
server, without re-embedding: the collection is renamed when it holds only this wiki's papers,
else this wiki's vectors are copied out of it (see :func:`physical_name`).

Why one module: every read and write of Chroma must go through the same client cache (with
its reopen-when-another-process-wrote token), the same per-wiki collection naming (and its
one-time migration) and the same model check; split apart, a path could open a collection
past one of them and mix wikis' or models' vectors.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from ..errors import EpistemeError, MissingDependencyError

PASSAGES = "passages"
WIKI_SECTIONS = "wiki_sections"
WIKI_ID_FILE = "wiki-id"
_BATCH = 1000  # Chroma rejects very large single adds; stay well under its max batch size


def _chromadb():
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        import chromadb
        from chromadb.config import Settings as ChromaSettings
    except ImportError as e:
        raise MissingDependencyError(
            "chromadb is not installed; run python3 plugin/scripts/setup_env.py"
        ) from e
    return chromadb, ChromaSettings


def preload_chromadb() -> None:
    """Import chromadb now (~1-3 s of Python), e.g. on a side thread while a PDF is split, so
    the first store call does not pay for it."""
    _chromadb()


_CLIENTS: dict[tuple, Any] = {}
_SEEN: dict[tuple, str] = {}  # client key -> generation token the cached client has seen
_CLIENTS_LOCK = threading.Lock()
GENERATION_FILE = "episteme.generation"


def _client_key(settings) -> tuple:
    host = getattr(settings, "chroma_host", None)
    if host:
        return ("http", host, int(getattr(settings, "chroma_port", None) or 8000))
    return ("local", str(settings.chroma_path))


def _generation(settings) -> str:
    try:
        return (settings.chroma_path / GENERATION_FILE).read_text(encoding="ascii")
    except OSError:
        return ""


def mark_written(settings) -> None:
    """Record that this process changed the embedded store.

    Why: an embedded client keeps its HNSW index in memory, so a long-running process (the
    server) does not see vectors another process (a CLI ingest) added -- and could write a stale
    index back.  Every writer bumps this token; :func:`make_client` reopens a client whose token
    is out of date.  (A Chroma server has no such problem.)
    """
    key = _client_key(settings)
    if key[0] != "local":
        return
    token = f"{time.time_ns()}-{os.getpid()}"
    path = settings.chroma_path / GENERATION_FILE
    tmp = path.with_name(f".{GENERATION_FILE}.{os.getpid()}.tmp")
    try:
        tmp.write_text(token, encoding="ascii")
        os.replace(tmp, path)
    except OSError:
        return
    with _CLIENTS_LOCK:
        _SEEN[key] = token


def make_client(settings):
    """A (process-cached) Chroma client for ``settings``: HTTP when a host is set, else embedded
    (reopened when another process wrote since, see :func:`mark_written`)."""
    chromadb, ChromaSettings = _chromadb()
    host = getattr(settings, "chroma_host", None)
    key = _client_key(settings)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is not None and host:
            return client
        if client is not None:
            token = _generation(settings)
            if token == _SEEN.get(key, ""):
                return client
            with contextlib.suppress(Exception):
                client.close()
            _CLIENTS.pop(key, None)
        cs = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        try:
            if host:
                client = chromadb.HttpClient(host=host, port=key[2], settings=cs)
            else:
                path = _read_only_copy(settings.chroma_path)
                if path is None:
                    settings.chroma_path.mkdir(parents=True, exist_ok=True)
                    path = settings.chroma_path
                _SEEN[key] = _generation(settings)
                client = chromadb.PersistentClient(path=str(path), settings=cs)
        except EpistemeError:
            raise
        except Exception as e:
            where = f"server {host}:{key[2]}" if host else str(settings.chroma_path)
            fix = ("is the Chroma server running?" if host else
                   "if the store is damaged, `episteme rebuild` moves it aside and recreates it "
                   "from raw/")
            raise EpistemeError(f"cannot open Chroma at {where}: {e} ({fix})") from e
        _CLIENTS[key] = client
        return client


#: A read-only Chroma folder up to this size is copied to a temporary folder to be read.
READ_ONLY_COPY_MAX = 1 << 30
_COPIES: dict[str, str] = {}


def read_only_chroma(path) -> str | None:
    """Why the embedded Chroma at ``path`` cannot be written ("read-only file system" /
    "permission denied"), or ``None``.  Why it matters: Chroma writes to its database even to
    open it, and on a read-only store fails with "error returned from database"."""
    from pathlib import Path

    from ..fsutil import read_only_reason

    path = Path(path)
    if not path.is_dir():
        return None
    reason = read_only_reason(path)
    db = path / "chroma.sqlite3"
    if reason is None and db.is_file() and not os.access(db, os.W_OK):
        reason = "permission denied"
    return reason


def _read_only_copy(path):
    """For a read-only Chroma folder, a private temporary copy to open instead (deleted at
    exit), so read commands work on a read-only wiki; ``None`` for a writable one.  Whatever is
    written to the copy is discarded: write commands fail earlier, on the wiki itself."""
    reason = read_only_chroma(path)
    if reason is None:
        return None
    if str(path) in _COPIES:
        return _COPIES[str(path)]
    import atexit
    import shutil
    import tempfile

    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    if size > READ_ONLY_COPY_MAX:
        raise EpistemeError(
            f"cannot open Chroma at {path}: {reason} (Chroma needs write access even to read, and "
            f"the store is too large to read from a temporary copy: {size >> 20} MB); give write "
            "access to the wiki, or use a Chroma server (--chroma-host)")
    tmp = tempfile.mkdtemp(prefix="episteme-ro-chroma-")
    atexit.register(shutil.rmtree, tmp, True)
    copy = os.path.join(tmp, "chroma")
    try:
        shutil.copytree(path, copy)
    except OSError as e:
        raise EpistemeError(f"cannot open Chroma at {path}: {reason}, and copying it to read it "
                            f"failed ({e}); give write access to the wiki") from e
    for root, dirs, files in os.walk(copy):  # the copy keeps the read-only modes
        for name in dirs + files:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(root, name), 0o700 if name in dirs else 0o600)
    os.chmod(copy, 0o700)
    _COPIES[str(path)] = copy
    return copy


def forget_clients() -> None:
    """Drop cached clients (tests that start and stop servers)."""
    with _CLIENTS_LOCK:
        _CLIENTS.clear()
        _SEEN.clear()
        _RESOLVED.clear()


def wiki_id(settings, *, create: bool = True) -> str | None:
    """This wiki's stable id (16 hex digits), kept in ``<wiki>/.episteme/wiki-id``.

    Why a file in the wiki folder and not a row in SQLite: SQLite is derived and ``rebuild``
    makes a new one; the id names the wiki's collections on a shared Chroma server and must
    survive a rebuild or a lost database.  Created on first need (``create``), race-free: the
    first writer wins (``O_EXCL``) and everyone reads its id.  A copied wiki folder keeps the id,
    so two copies on one server share collections: give the copy a new id by deleting the file.
    """
    import re
    import secrets

    path = settings.data_dir / WIKI_ID_FILE
    for _ in range(2):
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            text = None
        except (OSError, UnicodeDecodeError) as e:
            raise EpistemeError(f"cannot read the wiki id {path}: {e}") from e
        if text is not None:
            if not re.fullmatch(r"[0-9a-f]{8,32}", text):
                raise EpistemeError(f"{path} does not hold a wiki id ({text[:40]!r}); delete it "
                                    "to make a new one (the wiki's server collections then start "
                                    "empty: run `episteme rebuild`)")
            return text
        if not create:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o644)
        except FileExistsError:
            continue  # another process made it first: read its id
        except OSError as e:
            raise EpistemeError(f"cannot create the wiki id {path} (it names this wiki's "
                                f"collections on the Chroma server): {e}") from e
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_hex(8) + "\n")
            f.flush()
            os.fsync(f.fileno())
    return path.read_text(encoding="ascii").strip()


_RESOLVED: dict[tuple, str] = {}  # (client key, wiki id, logical name) -> migrated already


def physical_name(settings, name: str, client=None) -> str:
    """The Chroma collection that holds the wiki's logical collection ``name``.

    Embedded store: ``name`` itself.  Chroma server: ``<name>_<wiki id>``, migrating once per
    process a plain-named collection left by an older version (see the module docstring):
    renamed when every paper in it belongs to this wiki (its SQLite holds them), else this
    wiki's passages are copied out (vectors as stored: no re-embedding) and the plain collection
    is left for the other wikis that wrote into it.  The wiki-section collection follows a rename;
    when it cannot be renamed the wiki indexer re-embeds it on its next refresh."""
    key = _client_key(settings)
    if key[0] == "local":
        return name
    new = f"{name}_{wiki_id(settings)}"
    cache_key = (key, new)
    if cache_key in _RESOLVED:
        return new
    client = client or make_client(settings)
    try:
        _migrate_plain(settings, client, name, new)
    except EpistemeError:
        raise
    except Exception as e:
        raise EpistemeError(f"cannot move the wiki's vectors from Chroma collection {name!r} to "
                            f"{new!r} on the server: {e}") from e
    _RESOLVED[cache_key] = new
    return new


def _get(client, name: str):
    try:
        return client.get_collection(name, embedding_function=None)
    except Exception:  # NotFound differs between client kinds and versions
        return None


def _migrate_plain(settings, client, name: str, new: str) -> None:
    if _get(client, new) is not None:
        return
    plain = _get(client, name)
    if plain is None:
        return
    if name == WIKI_SECTIONS:
        # the section index is this wiki's only if the passages were wholly this wiki's
        physical_name(settings, PASSAGES, client)
        if _get(client, PASSAGES) is None:
            plain.modify(name=new)
        return
    mine = _own_papers(settings)
    theirs = {m.get("paper") for m in (plain.get(include=["metadatas"])["metadatas"] or []) if m}
    if theirs <= mine:
        plain.modify(name=new)  # a rename: nothing copied, nothing re-embedded
        return
    if not mine & theirs:
        return  # nothing of ours in it: the collection is created when first written
    col = client.get_or_create_collection(new, configuration={"hnsw": {"space": "cosine"}},
                                          metadata=dict(plain.metadata or {}),
                                          embedding_function=None)
    for paper in sorted(mine & theirs):
        got = plain.get(where={"paper": paper}, include=["embeddings", "metadatas", "documents"])
        if got["ids"]:
            add_in_batches(col, got["ids"], got["embeddings"], got["metadatas"], got["documents"])


def _own_papers(settings) -> set[str]:
    """The papers this wiki holds (its SQLite, else its raw/ folder)."""
    import sqlite3

    if settings.sqlite_path.is_file():
        try:
            conn = sqlite3.connect(f"file:{settings.sqlite_path.as_posix()}?mode=ro", uri=True)
            try:
                return {r[0] for r in conn.execute("SELECT id FROM papers")}
            finally:
                conn.close()
        except sqlite3.Error:
            pass
    raw = settings.raw_dir
    return {p.name for p in raw.iterdir() if p.is_file()} if raw.is_dir() else set()


class VectorStore:
    """The wiki's Chroma collections, bound to one embedding model (name + dim)."""

    def __init__(self, settings, model_name: str, dim: int):
        self.settings = settings
        self.model_name = model_name
        self.dim = int(dim)
        self.client = make_client(settings)
        self._collections: dict[str, Any] = {}

    # -- collections ---------------------------------------------------------------------------

    def _refresh(self) -> None:
        client = make_client(self.settings)
        if client is not self.client:  # another process wrote: reopened
            self.client = client
            self._collections.clear()

    def collection(self, name: str = PASSAGES):
        """Get or create collection ``name`` (cosine space), checking the recorded model."""
        self._refresh()
        col = self._collections.get(name)
        if col is not None:
            return col
        try:
            col = self.client.get_or_create_collection(
                physical_name(self.settings, name, self.client),
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"embedding_model": self.model_name, "dim": self.dim},
                embedding_function=None,
            )
        except Exception as e:
            raise EpistemeError(f"cannot open Chroma collection {name!r}: {e} (if the store is "
                                "damaged, `episteme rebuild` recreates it from raw/)") from e
        meta = col.metadata or {}
        recorded = meta.get("embedding_model")
        if recorded != self.model_name or int(meta.get("dim", self.dim)) != self.dim:
            raise EpistemeError(
                f"Chroma collection {name!r} holds vectors of embedding model {recorded!r} "
                f"(dim {meta.get('dim')}), but the configured model is {self.model_name!r} "
                f"(dim {self.dim}); run `episteme rebuild` to re-embed with the new model"
            )
        self._collections[name] = col
        return col

    def drop(self, name: str = PASSAGES) -> None:
        """Delete a collection (rebuild, model change)."""
        self._refresh()
        self._collections.pop(name, None)
        try:
            self.client.delete_collection(physical_name(self.settings, name, self.client))
        except Exception as e:  # NotFound differs between client kinds
            if "does not exist" not in str(e).lower() and "not found" not in str(e).lower():
                raise
        mark_written(self.settings)

    # -- generic operations --------------------------------------------------------------------

    def add(
        self,
        ids: Sequence[str],
        embeddings,
        metadatas: Sequence[dict],
        documents: Sequence[str] | None = None,
        *,
        collection: str = PASSAGES,
    ) -> None:
        add_in_batches(self.collection(collection), ids, embeddings, metadatas, documents)
        mark_written(self.settings)

    def get(self, *, where: dict | None = None, ids: Sequence[str] | None = None,
            collection: str = PASSAGES, include_embeddings: bool = False) -> dict:
        include = ["metadatas", "documents"] + (["embeddings"] if include_embeddings else [])
        res = self.collection(collection).get(
            where=where, ids=list(ids) if ids is not None else None, include=include
        )
        return res

    def delete(self, *, where: dict | None = None, ids: Sequence[str] | None = None,
               collection: str = PASSAGES) -> None:
        if ids is not None:
            ids = list(ids)
            if not ids:
                return
            for start in range(0, len(ids), _BATCH):
                self.collection(collection).delete(ids=ids[start : start + _BATCH])
        elif where is not None:
            self.collection(collection).delete(where=where)
        mark_written(self.settings)

    def count(self, collection: str = PASSAGES) -> int:
        return int(self.collection(collection).count())

    def query(self, embeddings, n: int = 10, *, where: dict | None = None,
              collection: str = PASSAGES) -> list[list[dict]]:
        """Nearest neighbours for each query vector: ``[{id, similarity, distance, metadata,
        document}]`` best first (cosine similarity = 1 - distance)."""
        col = self.collection(collection)
        embs = [list(map(float, v)) for v in embeddings]
        if not embs or n <= 0 or _matches_nothing(where):
            return [[] for _ in embs]
        res = col.query(
            query_embeddings=embs, n_results=int(n), where=where,
            include=["metadatas", "documents", "distances"],
        )
        out = []
        for qi in range(len(embs)):
            hits = []
            for j, pid in enumerate(res["ids"][qi]):
                dist = float(res["distances"][qi][j])
                hits.append({
                    "id": pid,
                    "distance": dist,
                    "similarity": 1.0 - dist,
                    "metadata": (res["metadatas"][qi][j] or {}),
                    "document": (res["documents"][qi][j] if res.get("documents") else None),
                })
            out.append(hits)
        return out

    # -- passages ------------------------------------------------------------------------------

    def paper_vectors(self, paper_id: str) -> dict:
        """Everything stored for one paper (ids, embeddings, metadatas, documents), so that a
        failed replace can put it back."""
        return self.get(where={"paper": paper_id}, include_embeddings=True)

    def delete_paper(self, paper_id: str, collection: str = PASSAGES) -> None:
        self.collection(collection).delete(where={"paper": paper_id})
        mark_written(self.settings)

    def restore(self, saved: dict, collection: str = PASSAGES) -> None:
        """Re-add what :meth:`paper_vectors` returned."""
        ids = list(saved.get("ids") or [])
        if not ids:
            return
        embs = saved.get("embeddings")
        # straight to the collection: restoring must not depend on the add that just failed
        add_in_batches(self.collection(collection), ids, [list(v) for v in embs],
                     list(saved["metadatas"]), list(saved["documents"]))
        mark_written(self.settings)

    def query_passages(self, embeddings, n: int = 10, where: dict | None = None) -> list[list[dict]]:
        """Passage neighbours; scope with ``where={"paper": {"$in": [...]}}``."""
        return self.query(embeddings, n, where=where, collection=PASSAGES)

    def paper_ids(self) -> set[str]:
        res = self.collection(PASSAGES).get(include=["metadatas"])
        return {m.get("paper") for m in res["metadatas"] or [] if m}


def add_in_batches(col, ids, embeddings, metadatas, documents) -> None:
    """Add rows to the Chroma collection ``col`` in chunks Chroma accepts (its max batch size);
    also for a collection opened without binding it to a model (ingest's recovery)."""
    for start in range(0, len(ids), _BATCH):
        end = start + _BATCH
        col.add(
            ids=list(ids[start:end]),
            embeddings=[list(map(float, v)) for v in embeddings[start:end]],
            metadatas=list(metadatas[start:end]),
            documents=list(documents[start:end]) if documents is not None else None,
        )


def open_vectors(settings, embedder=None, *, model_name: str | None = None, dim: int | None = None) -> VectorStore:
    """The wiki's :class:`VectorStore` for ``embedder`` (or an explicit model name + dim)."""
    if embedder is not None:
        model_name, dim = embedder.name, embedder.dim
    if not model_name or not dim:
        raise ValueError("open_vectors needs an embedder or model_name + dim")
    return VectorStore(settings, model_name, dim)


def _matches_nothing(where: dict | None) -> bool:
    """``{"paper": {"$in": []}}`` (scoped to no papers): Chroma rejects an empty ``$in``."""
    if not where:
        return False
    return any(isinstance(v, dict) and v.get("$in") == [] for v in where.values())


def scope_where(paper_ids: Sequence[str] | None) -> dict | None:
    """A Chroma ``where`` that restricts to some papers (``None`` = all)."""
    if paper_ids is None:
        return None
    ids = list(dict.fromkeys(paper_ids))
    if len(ids) == 1:
        return {"paper": ids[0]}
    return {"paper": {"$in": ids}}
