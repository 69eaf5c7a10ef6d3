"""Build the ONNX graph of a BERT encoder straight from its ``model.safetensors`` -- no torch.

Why: the only reason the user's virtualenv needed torch (754 MB) was a one-time
``torch.onnx.export`` of all-MiniLM-L6-v2.  The encoder is small and fixed (embeddings, N
identical post-LayerNorm layers), so we write its graph ourselves with ``onnx.helper`` and take
the weights from the safetensors file (read with numpy: the format is an 8-byte header length,
a JSON header and raw little-endian arrays).

The graph computes exactly what Hugging Face's eager ``BertModel`` computes in float32:

- embeddings = LayerNorm(word[ids] + position[0..S) + token_type[0]) (token types are always
  0 for single sentences, so the type embedding is a constant row);
- per layer: Q/K/V projections, scores = Q·Kᵀ / sqrt(head_dim) + (1 - mask) * float32.min,
  softmax, context, output projection, residual + LayerNorm, then the feed-forward block with
  the exact (erf) GELU, residual + LayerNorm;
- output ``last_hidden_state`` [batch, seq, hidden]; pooling stays with the caller.

The attention is emitted as onnxruntime's fused ``com.microsoft.MultiHeadAttention`` when
``fused=True`` (measured faster on CPU: benchmarks/RESULTS-setup.md) and as plain ONNX ops
otherwise (portable to any ONNX runtime).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


def read_safetensors(path: Path) -> dict[str, Any]:
    """Every tensor of a ``.safetensors`` file as a numpy array (copied out of the file)."""
    import numpy as np

    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out: dict[str, Any] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        start, end = info["data_offsets"]
        arr = np.frombuffer(data, dtype=dtype, count=(end - start) // np.dtype(dtype).itemsize,
                            offset=base + start)
        out[name] = arr.reshape(info["shape"]).astype(dtype[1:] if dtype != "<f2" else "f4")
    return out


def safetensors_layout(path: Path) -> dict[str, tuple[str, list[int], int, int]]:
    """``name -> (dtype, shape, file offset, byte length)`` of every tensor in the file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    base = 8 + n
    return {k: (v["dtype"], v["shape"], base + v["data_offsets"][0],
                v["data_offsets"][1] - v["data_offsets"][0])
            for k, v in header.items() if k != "__metadata__"}


class _Graph:
    """The nodes and initializers of the graph being built, in the order they are added (the
    order is the graph's: the saved model is byte-identical build after build)."""

    def __init__(self, w: dict, layout: dict, prefix_of: dict, external: str | None, eps: float):
        from onnx import TensorProto, helper, numpy_helper

        self.w, self.layout, self.prefix_of, self.external, self.eps = w, layout, prefix_of, external, eps
        self.TensorProto, self.helper, self.numpy_helper = TensorProto, helper, numpy_helper
        self.inits: list = []
        self.nodes: list = []

    def const(self, name: str, value) -> str:
        import numpy as np

        self.inits.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, domain: str = "", **attrs) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        return out

    def weight(self, key: str) -> str:
        """A tensor of the checkpoint as an initializer, by reference when ``external``."""
        import numpy as np

        if self.external is None:
            return self.const(key, self.w[key])
        dtype, dims, offset, length = self.layout[self.prefix_of[key]]
        if dtype != "F32":
            return self.const(key, self.w[key].astype(np.float32))
        tp = self.TensorProto
        t = tp(name=key, data_type=tp.FLOAT, dims=dims)
        t.data_location = tp.EXTERNAL
        for k, v in (("location", self.external), ("offset", str(offset)), ("length", str(length))):
            entry = t.external_data.add()
            entry.key, entry.value = k, v
        self.inits.append(t)
        return key

    def linear(self, x: str, prefix: str, out: str) -> str:
        import numpy as np

        if self.external is None:
            wt = self.const(prefix + ".weight.T", np.ascontiguousarray(self.w[prefix + ".weight"].T))
        else:
            wt = self.node("Transpose", [self.weight(prefix + ".weight")], prefix + ".weight.T",
                           perm=[1, 0])
        b = self.weight(prefix + ".bias")
        return self.node("Add", [self.node("MatMul", [x, wt], out + ".mm"), b], out)

    def layer_norm(self, x: str, prefix: str, out: str) -> str:
        g = self.weight(prefix + ".weight")
        b = self.weight(prefix + ".bias")
        return self.node("LayerNormalization", [x, g, b], out, axis=-1, epsilon=self.eps)


def _embeddings(g: _Graph) -> str:
    """LayerNorm(word[ids] + position[0..S) + token_type[0]); the constants the rest uses."""
    import numpy as np

    word = g.weight("embeddings.word_embeddings.weight")
    pos = g.weight("embeddings.position_embeddings.weight")
    g.const("type0", g.w["embeddings.token_type_embeddings.weight"][0])
    g.const("i0", np.array(0, dtype=np.int64))
    g.const("i1", np.array(1, dtype=np.int64))
    g.const("one_f", np.array(1.0, dtype=np.float32))
    g.const("neg", np.array(np.finfo(np.float32).min, dtype=np.float32))
    shape = g.node("Shape", ["input_ids"], "ids_shape")
    seq = g.node("Gather", [shape, "i1"], "seq_len", axis=0)
    positions = g.node("Range", ["i0", seq, "i1"], "positions")
    emb = g.node("Add", [g.node("Gather", [word, "input_ids"], "e_word"),
                         g.node("Gather", [pos, positions], "e_pos")], "e_sum")
    emb = g.node("Add", [emb, "type0"], "e_sum_t")
    return g.layer_norm(emb, "embeddings.LayerNorm", "emb_out")


def _attention(g: _Graph, i: int, x: str, mask: str, *, fused: bool, heads: int) -> str:
    """Layer ``i``'s self-attention context (before its output projection)."""
    p = f"encoder.layer.{i}"
    q = g.linear(x, f"{p}.attention.self.query", f"l{i}.q")
    k = g.linear(x, f"{p}.attention.self.key", f"l{i}.k")
    v = g.linear(x, f"{p}.attention.self.value", f"l{i}.v")
    if fused:
        return g.node("MultiHeadAttention", [q, k, v, "", mask], f"l{i}.ctx",
                      domain="com.microsoft", num_heads=heads)
    qh = g.node("Transpose", [g.node("Reshape", [q, "split_heads"], f"l{i}.qr")], f"l{i}.qt",
                perm=[0, 2, 1, 3])
    kh = g.node("Transpose", [g.node("Reshape", [k, "split_heads"], f"l{i}.kr")], f"l{i}.kt",
                perm=[0, 2, 3, 1])
    vh = g.node("Transpose", [g.node("Reshape", [v, "split_heads"], f"l{i}.vr")], f"l{i}.vt",
                perm=[0, 2, 1, 3])
    scores = g.node("Div", [g.node("MatMul", [qh, kh], f"l{i}.qk"), "scale"], f"l{i}.sc")
    probs = g.node("Softmax", [g.node("Add", [scores, mask], f"l{i}.scm")], f"l{i}.p", axis=-1)
    ctx = g.node("Transpose", [g.node("MatMul", [probs, vh], f"l{i}.pv")], f"l{i}.ctxt",
                 perm=[0, 2, 1, 3])
    return g.node("Reshape", [ctx, "merge_heads"], f"l{i}.ctx")


def _layer(g: _Graph, i: int, x: str, mask: str, *, fused: bool, heads: int) -> str:
    """One post-LayerNorm encoder layer: attention, residual + LayerNorm, the feed-forward
    block with the exact (erf) GELU, residual + LayerNorm."""
    p = f"encoder.layer.{i}"
    ctx = _attention(g, i, x, mask, fused=fused, heads=heads)
    att = g.linear(ctx, f"{p}.attention.output.dense", f"l{i}.ao")
    x = g.layer_norm(g.node("Add", [att, x], f"l{i}.ar"), f"{p}.attention.output.LayerNorm",
                     f"l{i}.an")
    h = g.linear(x, f"{p}.intermediate.dense", f"l{i}.i")
    erf = g.node("Erf", [g.node("Div", [h, "sqrt2"], f"l{i}.gd")], f"l{i}.ge")
    gelu = g.node("Mul", [g.node("Mul", [h, "half"], f"l{i}.gh"),
                          g.node("Add", [erf, "one_f"], f"l{i}.g1")], f"l{i}.g")
    out = g.linear(gelu, f"{p}.output.dense", f"l{i}.o")
    return g.layer_norm(g.node("Add", [out, x], f"l{i}.or"), f"{p}.output.LayerNorm", f"l{i}.on")


def build_bert_onnx(model_dir: Path, *, fused: bool = True, opset: int = 17,
                    external: str | None = None):
    """The ``onnx.ModelProto`` of the BERT encoder in ``model_dir`` (config.json +
    model.safetensors).  Inputs ``input_ids`` and ``attention_mask`` (int64 [batch, seq]).

    ``external``: the file name, beside the saved graph, of (a link to) the model's
    safetensors.  The weight initializers then point into that file by offset (ONNX external
    data) instead of holding a copy: the graph file stays tiny and the venv does not carry the
    90 MB of weights twice.  The transposes a projection needs become Transpose nodes over the
    stored matrices, which onnxruntime folds once at session start."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    cfg = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    if cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu":
        raise ValueError(f"{model_dir}: not a BERT model with exact GELU")
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{model_dir}: only absolute position embeddings are supported")
    st_path = Path(model_dir) / "model.safetensors"
    w = read_safetensors(st_path)
    layout = safetensors_layout(st_path)
    prefix_of = {k.removeprefix("bert."): k for k in w}
    w = {k.removeprefix("bert."): v for k, v in w.items()}
    hidden = int(cfg["hidden_size"])
    heads = int(cfg["num_attention_heads"])
    head_dim = hidden // heads
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    layers = int(cfg["num_hidden_layers"])
    g = _Graph(w, layout, prefix_of, external, eps)

    x = _embeddings(g)
    # --- additive attention mask: 0 where attended, float32.min where padded
    maskf = g.node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inv = g.node("Sub", ["one_f", maskf], "mask_inv")
    bias = g.node("Mul", [inv, "neg"], "mask_add")  # [B, S]
    # [B, 1, 1, S]: broadcast over heads and query positions (MultiHeadAttention's
    # attention_bias and the plain Add alike)
    g.const("mask_axes", np.array([1, 2], dtype=np.int64))
    bias = g.node("Unsqueeze", [bias, "mask_axes"], "mask_4d")
    if fused:
        # MultiHeadAttention's key_padding_mask: int32 [batch, seq], 0 = padded
        mask = g.node("Cast", ["attention_mask"], "mask_i32", to=TensorProto.INT32)
    else:
        mask = bias
        g.const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
        g.const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
        g.const("scale", np.array(math.sqrt(head_dim), dtype=np.float32))

    g.const("half", np.array(0.5, dtype=np.float32))
    g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    for i in range(layers):
        x = _layer(g, i, x, mask, fused=fused, heads=heads)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="out"))

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    mask_in = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])
    last = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                         ["batch", "seq", hidden])
    graph = helper.make_graph(g.nodes, "bert", [ids, mask_in], [last], initializer=g.inits)
    imports = [helper.make_opsetid("", opset)]
    if fused:
        imports.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=imports, producer_name="episteme")
    model.ir_version = 8
    if not fused and external is None:
        onnx.checker.check_model(model)
    return model
