"""Session fixtures for tests that need real stores: the embedder, and a wiki with real papers
already ingested (raw/ + SQLite + Chroma).

Ingesting costs seconds per paper, so the wiki is built once into a cache folder keyed by the
papers' sha256 and the source of the package (any code change rebuilds it), under a file lock so
pytest-xdist workers share one build; each test then gets its own copy (``ingested_wiki``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
INGEST_PAPERS = ("attention_1706.03762v5.pdf", "gan_1406.2661v1.pdf")


def wiki_settings(wiki: Path, **overrides):
    """Settings for a test wiki that ignore the caller's environment and ``.env``."""
    from episteme.config import load_settings

    return load_settings(wiki, env={}, dotenv=None, **overrides)


def _cache_key(papers: list[Path]) -> str:
    h = hashlib.sha256()
    for p in papers:
        h.update(p.name.encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())
    pkg = REPO / "plugin" / "episteme"
    # every module and data file of the package: what ingest stores and what the writer writes
    # depend on more modules than anyone keeps a list of (a hand-kept list missed the sentence
    # vectors' module and the starter schema, and served a stale wiki); the static UI does not
    sources = [p for p in pkg.rglob("*") if p.is_file() and p.suffix in (".py", ".md", ".json")
               and "__pycache__" not in p.parts and "static" not in p.parts]
    for src in sorted(sources):
        h.update(str(src.relative_to(REPO)).encode())
        h.update(src.read_bytes())
    return h.hexdigest()[:20]


def cache_root() -> Path:
    """Where built test fixtures are kept between runs (``$EPISTEME_TEST_CACHE``)."""
    root = Path(os.environ.get("EPISTEME_TEST_CACHE", Path(tempfile.gettempdir()) / "episteme-test-cache"))
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def cached_build(name: str, done: str) -> Iterator[Path | None]:
    """Build ``<cache>/<name>`` once, whichever test worker gets there first (a file lock).

    Yields ``None`` when the folder is complete already (it holds ``done``), else a fresh
    build folder for the block to fill, ``done`` included; it replaces ``<cache>/<name>`` when
    the block ends without an error.  ``name`` is ``<kind>-<key of the code and inputs>``:
    folders of the same kind and another key, a day old (other sessions may still use them),
    are removed then."""
    import fcntl  # (here: the light suite imports this module under a stand-in without fcntl)

    root = cache_root()
    target = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / done).exists():
            yield None
            return
        build = root / f".{name}.{os.getpid()}.build"
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir()
        yield build
        shutil.rmtree(target, ignore_errors=True)
        os.replace(build, target)
        now = time.time()
        for old in root.glob(name.split("-", 1)[0] + "-*"):
            if old != target and old.is_dir() and now - old.stat().st_mtime > 86400:
                shutil.rmtree(old, ignore_errors=True)


@pytest.fixture(scope="session")
def embedder():
    """The default embedder (all-MiniLM-L6-v2 on onnxruntime), loaded once per worker."""
    from episteme.stores.embedding import load_embedder

    return load_embedder()


@pytest.fixture(scope="session")
def ingested_template(papers_dir: Path) -> Path:
    """A cached folder ``<key>/`` with ``wiki/`` (ingested papers) and ``ingest.json`` (what
    ``episteme ingest`` printed).  Read-only: copy it (``ingested_wiki``) before writing."""
    papers = [papers_dir / name for name in INGEST_PAPERS]
    name = f"ingested-{_cache_key(papers)}"
    with cached_build(name, "ingest.json") as build:
        if build is not None:
            # A separate process: no Chroma client of this worker stays open on the template.
            proc = subprocess.run(
                [sys.executable, "-m", "episteme.cli", "ingest", *map(str, papers),
                 "--wiki", str(build / "wiki"), "--no-progress"],
                capture_output=True, text=True, timeout=600,
                env={k: v for k, v in os.environ.items()
                     if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT",
                                  "EMBEDDING_MODEL")},
            )
            if proc.returncode != 0:
                raise RuntimeError(f"building the ingested test wiki failed:\n{proc.stderr}")
            (build / "ingest.json").write_text(proc.stdout, encoding="utf-8")
            shutil.rmtree(build / "wiki" / ".episteme" / "tmp", ignore_errors=True)
    return cache_root() / name


@pytest.fixture(scope="session")
def ingested_papers(ingested_template: Path) -> dict[str, dict]:
    """paper id -> the JSON ``episteme ingest`` printed for it."""
    data = json.loads((ingested_template / "ingest.json").read_text(encoding="utf-8"))
    items = data.get("papers", [data])
    return {d["paper"]: d for d in items}


@pytest.fixture
def ingested_wiki(ingested_template: Path, tmp_path: Path) -> Path:
    """A private copy of the ingested wiki (Attention + GAN): ``wiki_settings(path)`` opens it."""
    dest = tmp_path / "wiki"
    shutil.copytree(ingested_template / "wiki", dest)
    return dest
