"""Passage vectors for the tracer, as one numpy matrix per paper, cached beside the stores.

Why not query Chroma for every trace: importing ``chromadb`` and opening its client costs
2-3 s on this 2-core machine, more than the whole budget of a cold ``trace.py`` (3 s).  The
tracer needs exact nearest neighbours among a *few* papers' passages (the answer's sources),
which is a small matrix product; so each paper's vectors are read from Chroma once (with a
``where`` on the paper), written to ``<wiki>/.episteme/trace_vectors/<paper>.<sha>.npz`` and
memory-mapped from then on.  A brute-force product over the scoped papers is exact, where an
HNSW search under a ``where`` filter can miss neighbours.

The file name carries the paper's sha256 and the embedding model, so re-ingesting a changed
PDF, ``rebuild`` with another model, or ``remove`` simply makes the old file unused (stale
files of removed papers are deleted on the next load).  The folder can be deleted at any time.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading
from pathlib import Path

from ..errors import EpistemeError
from ..fsutil import atomic_write_bytes

DIRNAME = "trace_vectors"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class PaperMatrices:
    """Per-paper ``(ids, kinds, vectors)`` loaded from the cache or built from Chroma."""

    def __init__(self, settings, embedder, vectors_factory):
        self.settings = settings
        self.embedder = embedder
        self._vectors_factory = vectors_factory  # () -> VectorStore, called only on a miss
        self.folder = Path(settings.data_dir) / DIRNAME
        self._loaded: dict[str, tuple[str, list[str], list[str], object]] = {}
        self._lock = threading.Lock()

    def _file(self, paper_id: str, sha: str) -> Path:
        model = re.sub(r"[^A-Za-z0-9_-]+", "_", self.embedder.name)
        return self.folder / f"{_SAFE.sub('_', paper_id)}.{sha[:16]}.{model}.npz"

    def get(self, papers: dict[str, str]) -> dict[str, tuple[list[str], list[str], object]]:
        """``{paper id: sha256}`` → ``{paper id: (passage ids, kinds, float32 matrix)}``."""
        import numpy as np

        out = {}
        with self._lock:
            for pid, sha in papers.items():
                hit = self._loaded.get(pid)
                if hit is not None and hit[0] == sha:
                    out[pid] = hit[1:]
                    continue
                path = self._file(pid, sha)
                data = None
                if path.is_file():
                    try:
                        with np.load(path, allow_pickle=False) as z:
                            data = (list(z["ids"]), list(z["kinds"]), np.asarray(z["vectors"], dtype=np.float32))
                    except (OSError, ValueError, KeyError):
                        data = None
                if data is None or (len(data[0]) and data[2].shape[1] != self.embedder.dim):
                    data = self._build(pid, path)
                self._loaded[pid] = (sha, *data)
                out[pid] = data
        return out

    def _build(self, paper_id: str, path: Path):
        import numpy as np

        vectors = self._vectors_factory()
        res = vectors.get(where={"paper": paper_id}, include_embeddings=True)
        ids = list(res.get("ids") or [])
        embs = res.get("embeddings")
        metas = res.get("metadatas") or [{} for _ in ids]
        if not ids:
            raise EpistemeError(
                f"Chroma holds no vectors for {paper_id} although SQLite lists it: run "
                "`episteme rebuild` to re-embed the papers"
            )
        order = sorted(range(len(ids)), key=lambda i: ids[i])
        ids = [ids[i] for i in order]
        kinds = [str((metas[i] or {}).get("kind") or "") for i in order]
        mat = np.asarray([embs[i] for i in order], dtype=np.float32)
        buf = io.BytesIO()
        np.savez(buf, ids=np.asarray(ids), kinds=np.asarray(kinds), vectors=mat)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, buf.getvalue())
            self._drop_stale(paper_id, keep=path)
        except OSError:
            pass  # a read-only wiki still traces, just without the cache
        return ids, kinds, mat

    def _drop_stale(self, paper_id: str, keep: Path) -> None:
        prefix = f"{_SAFE.sub('_', paper_id)}."
        for f in self.folder.glob(f"{prefix}*.npz"):
            if f != keep and f.name[len(prefix):].count(".") == 2:
                with contextlib.suppress(OSError):
                    os.unlink(f)

    def forget(self) -> None:
        with self._lock:
            self._loaded.clear()
