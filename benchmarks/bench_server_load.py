"""Bounded load test of the HTTP server on loopback: concurrent chat clients while papers are
ingested concurrently.  Prints a markdown report (latency percentiles, errors, and the
"nothing lost" checks) -- commit its output to benchmarks/RESULTS-server.md.

    .venv/bin/python benchmarks/bench_server_load.py                    # 4 x 50 chats + 2 ingests
    .venv/bin/python benchmarks/bench_server_load.py --clients 2 --questions 5

The server runs as a real ``episteme serve`` process on 127.0.0.1 (free port) over a fresh
temporary wiki.  Setup ingests two papers (Attention, GAN) through ``POST /ingest`` so chat has a
wiki to answer from; then the load phase starts ``--clients`` chat clients (each asks
``--questions`` questions, one after another) and, at the same time, ``--ingests`` concurrent
uploads of further papers.  Checks afterwards (all must hold): zero HTTP errors; every chat
response has the answer/sources keys; every uploaded paper is in raw/, in SQLite and cited in
index.json by all its new sections; every section written during setup is still there.

No network is used; the LLM key is removed from the server's environment, so the chat pipeline
runs the way it runs offline.  ``run_load`` is reused by tests/test_server_load.py.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared")).resolve()
PAPERS = SHARED / "data" / "papers"
SETUP_PAPERS = ("attention_1706.03762v5.pdf", "gan_1406.2661v1.pdf")
LOAD_PAPERS = ("bahdanau_1409.0473v7.pdf", "word2vec_explained_1411.2738v4.pdf",
               "resnet_1512.03385v1.pdf", "bert_1810.04805v2.pdf")

QUESTIONS = [
    "How does multi-head attention work?",
    "What is scaled dot-product attention and why is it scaled?",
    "Why did the authors replace recurrence with self-attention?",
    "How are positional encodings computed in the Transformer?",
    "What BLEU score did the Transformer reach on English-to-German translation?",
    "What optimizer and learning rate schedule trained the Transformer?",
    "Which regularization methods did the Transformer use?",
    "How many layers do the encoder and decoder stacks have?",
    "What is label smoothing and what did it do to perplexity?",
    "How long did training the big Transformer model take?",
    "What is a generative adversarial network?",
    "What are the generator and the discriminator trained to do?",
    "What is the global optimum of the GAN minimax game?",
    "Why can the generator's gradient vanish early in training?",
    "What are the disadvantages of adversarial nets?",
    "How does the GAN paper evaluate its samples with Parzen windows?",
    "Does Algorithm 1 converge, and under which assumptions?",
    "What is the computational cost of self-attention per layer?",
    "How do GANs differ from Boltzmann machines?",
    "Which datasets were used to train generative adversarial nets?",
    "What does the decoder's masking prevent?",
    "What is the dimension of the model's keys and values?",
    "How does attention relate queries, keys and values?",
    "What is the role of the feed-forward network in each layer?",
    "Can generative adversarial nets be used for semi-supervised learning?",
]


# ------------------------------------------------------------------------------ HTTP helpers


def _request(method: str, url: str, data: bytes | None = None, headers: dict | None = None,
             timeout: float = 900) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        return status, json.loads(raw or b"{}")
    except ValueError:
        return status, {"_raw": raw[:500].decode("utf-8", "replace")}


def upload(base: str, path: Path, name: str | None = None) -> tuple[int, dict]:
    boundary = "episteme-bench-boundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{name or path.name}\"\r\nContent-Type: application/pdf\r\n\r\n").encode()
    body = head + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    return _request("POST", f"{base}/ingest", body,
                    {"Content-Type": f"multipart/form-data; boundary={boundary}"})


def chat(base: str, query: str) -> tuple[int, dict]:
    return _request("POST", f"{base}/chat", json.dumps({"query": query}).encode(),
                    {"Content-Type": "application/json"})


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# ---------------------------------------------------------------------------------- the load


def run_load(base: str, wiki: Path, *, clients: int, questions: int, ingest_pdfs: list[Path],
             question_list: list[str] | None = None) -> dict:
    """Run ``clients`` chat clients (``questions`` each) and one upload per PDF in
    ``ingest_pdfs``, all at once.  Returns latencies, errors and the consistency checks."""
    qs = question_list or QUESTIONS
    before = _index(wiki)
    start = threading.Barrier(clients + len(ingest_pdfs))
    errors: list[str] = []
    chat_lat: list[float] = []
    chat_bad: list[str] = []
    ingest_res: list[dict] = []
    lock = threading.Lock()

    def chat_client(c: int) -> None:
        start.wait()
        for i in range(questions):
            q = qs[(c * 7 + i) % len(qs)]
            t = time.perf_counter()
            status, body = chat(base, q)
            dt = time.perf_counter() - t
            with lock:
                if status != 200:
                    errors.append(f"chat {status}: {body.get('error', body)}")
                    continue
                chat_lat.append(dt)
                missing = {"answer", "sources", "wiki_sections_used", "unsupported_claims"} - set(body)
                if missing:
                    chat_bad.append(f"{q!r}: missing {sorted(missing)}")

    def ingester(pdf: Path) -> None:
        start.wait()
        t = time.perf_counter()
        status, body = upload(base, pdf)
        dt = time.perf_counter() - t
        with lock:
            if status != 200:
                errors.append(f"ingest {pdf.name} {status}: {body.get('error', body)}")
            else:
                ingest_res.append({**body, "_seconds": dt})

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(clients + len(ingest_pdfs)) as pool:
        futs = [pool.submit(chat_client, c) for c in range(clients)]
        futs += [pool.submit(ingester, p) for p in ingest_pdfs]
        for f in futs:
            f.result()
    wall = time.perf_counter() - t0
    return {
        "wall": wall,
        "errors": errors,
        "chat_latencies": chat_lat,
        "chat_bad": chat_bad,
        "ingests": ingest_res,
        "lost": check_nothing_lost(wiki, before, ingest_res),
    }


def _index(wiki: Path) -> dict[str, list[str]]:
    try:
        return json.loads((wiki / "index.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def check_nothing_lost(wiki: Path, before: dict[str, list[str]], ingests: list[dict]) -> list[str]:
    """Every section that existed before is still there; every uploaded paper is in raw/ and
    SQLite, and each of its new sections is in index.json citing it and in a page file."""
    import sqlite3

    problems: list[str] = []
    after = _index(wiki)
    for sid, srcs in before.items():
        if sid not in after:
            problems.append(f"{sid} disappeared from index.json")
        elif not set(srcs) <= set(after[sid]):
            problems.append(f"{sid} lost sources {sorted(set(srcs) - set(after[sid]))}")
    db = wiki / ".episteme" / "sections.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        papers = {r[0] for r in con.execute("SELECT id FROM papers")}
    finally:
        con.close()
    page_text = "\n".join(p.read_text(encoding="utf-8") for p in wiki.rglob("*.md")
                          if ".episteme" not in p.parts and "raw" not in p.parts)
    for res in ingests:
        pid = res["paper"]
        if not (wiki / "raw" / pid).is_file():
            problems.append(f"raw/{pid} missing")
        if pid not in papers:
            problems.append(f"{pid} missing from SQLite")
        for sid in res.get("new_sections", []):
            if pid not in after.get(sid, []):
                problems.append(f"{sid} of {pid} not in index.json")
            if f'"id": "{sid}"' not in page_text:
                problems.append(f"{sid} of {pid} not in any page")
        for page in res.get("wiki_pages_updated", []):
            if not (wiki / page).is_file():
                problems.append(f"page {page} of {pid} missing")
    return problems


# --------------------------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(wiki: Path, port: int, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "LLM_API_KEY", "EPISTEME_TOKEN", "WIKI_PATH",
                        "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "episteme.cli", "serve", "--wiki", str(wiki), "--port", str(port),
         "--log-level", "warning", "--write-mode", "extractive"],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env, cwd=str(wiki.parent),  # noqa: SIM115
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-2000:]}")
        try:
            status, _ = _request("GET", f"http://127.0.0.1:{port}/health", timeout=5)
            if status == 200:
                return proc
        except OSError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start in 180 s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--ingests", type=int, default=2, choices=range(0, len(LOAD_PAPERS) + 1))
    ap.add_argument("--baseline", type=int, default=20,
                    help="sequential single-client questions before the load phase")
    ap.add_argument("--keep", action="store_true", help="keep the temporary wiki")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="episteme-load-"))
    wiki = tmp / "wiki"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(wiki, port, tmp / "server.log")
    try:
        t = time.perf_counter()
        for name in SETUP_PAPERS:
            status, body = upload(base, PAPERS / name)
            if status != 200:
                raise RuntimeError(f"setup ingest of {name} failed: {status} {body}")
        setup_s = time.perf_counter() - t
        # warm-up question (first chat builds the query engine's indexes)
        t = time.perf_counter()
        status, body = chat(base, QUESTIONS[0])
        first_chat = time.perf_counter() - t
        if status != 200:
            raise RuntimeError(f"warm-up chat failed: {status} {body}")
        # baseline: one client, nothing else running (what a single user sees)
        base_lat = []
        for q in QUESTIONS[: args.baseline]:
            t = time.perf_counter()
            status, body = chat(base, q)
            if status != 200:
                raise RuntimeError(f"baseline chat failed: {status} {body}")
            base_lat.append(time.perf_counter() - t)
        load_before = os.getloadavg()[0]
        res = run_load(base, wiki, clients=args.clients, questions=args.questions,
                       ingest_pdfs=[PAPERS / n for n in LOAD_PAPERS[: args.ingests]])
        load_after = os.getloadavg()[0]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    lat = res["chat_latencies"]
    ok = not res["errors"] and not res["lost"] and not res["chat_bad"] and \
        len(lat) == args.clients * args.questions and len(res["ingests"]) == args.ingests
    print(f"# Server load test ({time.strftime('%Y-%m-%d')})\n")
    print(f"Machine: {os.cpu_count()} cores (`nproc` {len(os.sched_getaffinity(0))}), "
          f"Python {platform.python_version()}, {platform.system()} {platform.machine()}; "
          f"server: `episteme serve` on 127.0.0.1 (one uvicorn process), extractive writer, "
          f"no LLM key (offline chat).\n")
    print(f"Command: `.venv/bin/python benchmarks/bench_server_load.py --clients {args.clients} "
          f"--questions {args.questions} --ingests {args.ingests} --baseline {args.baseline}`\n")
    print("| what | value |\n|---|---|")
    print(f"| setup: ingest + write {len(SETUP_PAPERS)} papers (sequential) | {setup_s:.1f} s |")
    print(f"| first chat (warm-up) | {first_chat:.2f} s |")
    if base_lat:
        print(f"| baseline: 1 client, no ingest, {len(base_lat)} questions: p50 / p95 | "
              f"{pct(base_lat, 50):.3f} / {pct(base_lat, 95):.3f} s |")
    print(f"| machine load average (1 min) before / after the load phase | "
          f"{load_before:.1f} / {load_after:.1f} |")
    print(f"| load phase wall time ({args.clients} chat clients + {args.ingests} ingests at once) | "
          f"{res['wall']:.1f} s |")
    print(f"| chat requests | {len(lat)} of {args.clients * args.questions} "
          f"({args.clients} clients x {args.questions}) |")
    if lat:
        print(f"| chat latency p50 / p95 / max | {pct(lat, 50):.3f} / {pct(lat, 95):.3f} / "
              f"{max(lat):.3f} s |")
        print(f"| chat latency mean | {statistics.mean(lat):.3f} s |")
        print(f"| chat throughput | {len(lat) / res['wall']:.2f} req/s |")
    for r in res["ingests"]:
        print(f"| ingest {r['paper']} (concurrent) | {r['_seconds']:.1f} s, "
              f"{r['sections_indexed']} sections, {len(r['new_sections'])} new wiki sections, "
              f"{len(r['wiki_pages_updated'])} pages |")
    print(f"| HTTP errors | {len(res['errors'])} |")
    print(f"| malformed chat responses | {len(res['chat_bad'])} |")
    print(f"| lost writes (index.json / pages / SQLite / raw) | {len(res['lost'])} |")
    print(f"| **result** | **{'PASS' if ok else 'FAIL'}** |")
    for e in (res["errors"] + res["chat_bad"] + res["lost"])[:20]:
        print(f"\n- {e}")
    if args.keep:
        print(f"\n(wiki kept in {wiki})")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
