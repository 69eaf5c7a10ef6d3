"""Helpers for the HTTP tests: a real uvicorn server on 127.0.0.1 (free port, in a thread of the
test process, so the warm embedder is shared), a cached wiki with real papers ingested *and*
written by the extractive writer, and small generated papers for concurrency tests.

Imported by tests/test_server*.py and tests/test_ui_browser.py (``from serverlive import ...``);
the fixtures defined here become available to a module that imports them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from ingested_wiki import cache_root, cached_build

REPO = Path(__file__).resolve().parent.parent
WRITTEN_PAPERS = ("attention_1706.03762v5.pdf", "gan_1406.2661v1.pdf")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """uvicorn serving ``create_app(settings, **app_kwargs)`` on a free loopback port."""

    def __init__(self, settings, **app_kwargs):
        import uvicorn
        from episteme.server.app import create_app

        self.settings = settings
        self.app = create_app(settings, **app_kwargs)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning",
                                access_log=False, lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="uvicorn-test", daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            if time.monotonic() > deadline:
                raise RuntimeError("the test server did not start within 120 s")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@contextlib.contextmanager
def serve_copy(template: Path, dest: Path, **settings):
    """A :class:`LiveServer` (extractive writer) over a private copy, at ``dest``, of the wiki
    of a template (``ingested_template``/``written_template``); ``settings`` as for
    ``wiki_settings``."""
    from ingested_wiki import wiki_settings

    shutil.copytree(template / "wiki", dest)
    with LiveServer(wiki_settings(dest, **settings), write_mode="extractive") as srv:
        yield srv


#: the question the "one true claim, one invented claim" answers are about
ATTENTION_Q = "How does multi-head attention work?"


def half_invented_answer(wiki: Path) -> tuple[str, str]:
    """``(section id, answer)``: the wiki's top section for :data:`ATTENTION_Q` and an answer
    citing it twice, once for what the Attention paper says (multi-head attention's
    projections) and once for an invented claim (the Transformer trained on the Moon): what a
    fake Claude answers to test that tracing supports the one and flags the other."""
    from episteme.query.chat import QueryEngine
    from ingested_wiki import wiki_settings

    engine = QueryEngine(wiki_settings(wiki))
    top = engine.retrieve(ATTENTION_Q)["sections"][0]["id"]
    engine.close()
    answer = (f"Multi-head attention linearly projects the queries, keys and values h times with "
              f"different, learned linear projections and performs the attention function in "
              f"parallel [{top}]. The Transformer was first trained on the Moon by 400 "
              f"astronauts using steam-powered abacus clusters in 1962 [{top}].")
    return top, answer


def request(method: str, url: str, *, data: bytes | None = None, headers: dict | None = None,
            timeout: float = 600) -> tuple[int, dict, dict]:
    """A plain HTTP request (urllib): (status, JSON body or {"_raw": text}, headers)."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw, hdrs = r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        status, raw, hdrs = e.code, e.read(), dict(e.headers)
    try:
        body = json.loads(raw.decode("utf-8")) if raw else {}
    except ValueError:
        body = {"_raw": raw.decode("utf-8", "replace")}
    return status, body, hdrs


def multipart(field: str, filename: str, content: bytes, ctype: str = "application/pdf") -> tuple[bytes, str]:
    """Encode one file field as multipart/form-data: (body, content type)."""
    boundary = "episteme-test-boundary-7f3a"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; "
            f"filename=\"{filename}\"\r\nContent-Type: {ctype}\r\n\r\n").encode()
    body = head + content + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def upload(base: str, filename: str, content: bytes, query: str = "", headers: dict | None = None,
           field: str = "file") -> tuple[int, dict, dict]:
    body, ctype = multipart(field, filename, content)
    return request("POST", f"{base}/ingest{query}", data=body,
                   headers={"Content-Type": ctype, **(headers or {})})


def post_json(base: str, path: str, payload, headers: dict | None = None) -> tuple[int, dict, dict]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return request("POST", base + path, data=data,
                   headers={"Content-Type": "application/json", **(headers or {})})


def wait_job(base: str, job_id: str, timeout: float = 600, seen: list | None = None) -> dict:
    """Poll ``GET /jobs/{id}`` until it finishes; every progress snapshot goes to ``seen``."""
    deadline = time.monotonic() + timeout
    while True:
        status, body, _ = request("GET", f"{base}/jobs/{job_id}")
        assert status == 200, body
        if seen is not None:
            seen.append(body["progress"])
        if body["status"] in ("done", "failed"):
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {body['status']} after {timeout} s")
        time.sleep(0.1)


def small_paper_pdf(path: Path, tag: str) -> Path:
    """A short generated paper (a few sections), distinct per ``tag``: cheap to ingest."""
    sys.path.insert(0, str(Path(__file__).parent))
    from pdfgen import Paper, Section, make_paper_pdf

    words = {
        "alpha": ("graph sparsification", "spectral", "edges"),
        "beta": ("protein folding", "residue", "contact maps"),
        "gamma": ("speech recognition", "acoustic", "phonemes"),
        "delta": ("image compression", "wavelet", "coefficients"),
    }
    topic, adj, noun = words.get(tag, (f"topic {tag}", "general", "items"))
    para = (f"We study {topic} with a {adj} method that keeps the important {noun} and drops "
            f"the rest. The method is simple to implement and runs in linear time. Experiments "
            f"on three benchmarks show that {topic} improves when the {noun} are chosen by their "
            f"{adj} scores, and the gains hold across model sizes and data sets.")
    paper = Paper(
        title=f"Notes on {topic.title()} ({tag})",
        authors=["Ada Example", "Ben Sample"],
        affiliations=["Example University"],
        abstract=f"This paper is about {topic}. " + para,
        sections=[
            Section("1", "Introduction", [para, para.replace("We study", "Prior work studied")]),
            Section("2", f"The {adj.title()} Method", [para.replace("We study", "Our method handles"), para]),
            Section("3", "Experiments", [para.replace("Experiments", "Results"), para]),
            Section("4", "Conclusion", [f"{topic.capitalize()} benefits from {adj} {noun}. " + para]),
        ],
        references=["A. Author. An older paper. 2001.", "B. Author. A newer one. 2020."],
    )
    return make_paper_pdf(path, paper)


@pytest.fixture(scope="session")
def written_template(ingested_template: Path) -> Path:
    """``<cache>/written-<key>/wiki``: the ingested Attention + GAN wiki with pages written by
    the extractive writer (``episteme ingest`` + ``write_paper``), built once per code version."""
    name = ingested_template.name.replace("ingested-", "written-", 1)
    with cached_build(name, "done") as build:
        if build is not None:
            shutil.copytree(ingested_template / "wiki", build / "wiki")
            code = (
                "import json, sys\n"
                "from episteme.config import load_settings\n"
                "from episteme.compile.writer import write_paper\n"
                "s = load_settings(sys.argv[1], env={}, dotenv=None)\n"
                "out = [write_paper(s, p, writer='extractive') for p in sys.argv[2:]]\n"
                "print(json.dumps(out))\n"
            )
            proc = subprocess.run(
                [sys.executable, "-c", code, str(build / "wiki"), *WRITTEN_PAPERS],
                capture_output=True, text=True, timeout=900,
                env={k: v for k, v in os.environ.items()
                     if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST",
                                  "CHROMA_PORT", "EMBEDDING_MODEL", "ANTHROPIC_API_KEY",
                                  "LLM_API_KEY")},
            )
            if proc.returncode != 0:
                raise RuntimeError(f"writing the test wiki failed:\n{proc.stderr}")
            (build / "write.json").write_text(proc.stdout, encoding="utf-8")
            (build / "done").write_text("ok", encoding="utf-8")
    return cache_root() / name


@pytest.fixture
def written_wiki(written_template: Path, tmp_path: Path) -> Path:
    """A private copy of the written wiki (Attention + GAN, ingested and written)."""
    dest = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", dest)
    with contextlib.suppress(FileNotFoundError):
        (dest / ".episteme" / "write.lock").unlink()
    return dest
