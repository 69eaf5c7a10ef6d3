"""A real ``chroma run`` server on 127.0.0.1 for the client/server tests, started and stopped
around a block (one starter for every test module that needs a server)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chroma_cli() -> str:
    """The venv's ``chroma`` command (beside this Python), else the one on PATH."""
    exe = Path(sys.executable).with_name("chroma")
    return str(exe) if exe.exists() else (shutil.which("chroma") or "chroma")


def wait_ready(proc: subprocess.Popen, port: int, log: Path, timeout: float) -> None:
    """Poll the heartbeat until it answers, the server dies, or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}/api/v2/heartbeat"
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"chroma run exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"chroma run did not become ready within {timeout:.0f} s")
        time.sleep(0.2)


@contextlib.contextmanager
def chroma_server(folder: Path) -> Iterator[tuple[str, int]]:
    """``(host, port)`` of a fresh server keeping its data under ``folder``; stopped (and the
    cached clients forgotten) when the block ends."""
    from episteme.stores.vectors import forget_clients

    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with open(folder / "server.log", "wb") as log:
        proc = subprocess.Popen([chroma_cli(), "run", "--path", str(folder / "db"), "--host",
                                 "127.0.0.1", "--port", str(port)], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(proc, port, folder / "server.log", timeout=60)
        yield "127.0.0.1", port
    finally:
        forget_clients()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
