"""Run one command as an agent would and record what it cost (issue 34/31 measurement).

Usage: python benchmarks/agent_call.py LOG.jsonl TAG -- CMD ... [< stdin]

Prints the command's stdout (what the agent reads) unchanged, and appends one JSON line to
LOG.jsonl: tag, command, stdin bytes, stdout and stderr bytes, tokens (~bytes/4), seconds, exit.
Used to write benchmarks/RESULTS-agent-path.md; every call is a fresh process, as in Claude Code.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    """Run argv after `--`, echo its output, log its cost."""
    log, tag = argv[0], argv[1]
    cmd = argv[argv.index("--") + 1 :]
    stdin = b"" if sys.stdin.isatty() else sys.stdin.buffer.read()
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, check=False)
    secs = time.perf_counter() - start
    sys.stdout.buffer.write(proc.stdout)
    sys.stderr.buffer.write(proc.stderr)
    rec = {"tag": tag, "cmd": " ".join(cmd), "stdin_bytes": len(stdin),
           "stdout_bytes": len(proc.stdout), "stderr_bytes": len(proc.stderr),
           "tokens": (len(proc.stdout) + len(proc.stderr)) // 4,
           "seconds": round(secs, 2), "exit": proc.returncode}
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
