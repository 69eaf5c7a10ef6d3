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
    from onnx import TensorProto, helper, numpy_helper

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

    inits: list = []
    nodes: list = []

    def const(name: str, value) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, domain: str = "", **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        return out

    def weight(key: str) -> str:
        """A tensor of the checkpoint as an initializer, by reference when ``external``."""
        if external is None:
            return const(key, w[key])
        dtype, dims, offset, length = layout[prefix_of[key]]
        if dtype != "F32":
            return const(key, w[key].astype(np.float32))
        t = TensorProto(name=key, data_type=TensorProto.FLOAT, dims=dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", external), ("offset", str(offset)), ("length", str(length))):
            entry = t.external_data.add()
            entry.key, entry.value = k, v
        inits.append(t)
        return key

    def linear(x: str, prefix: str, out: str) -> str:
        if external is None:
            wt = const(prefix + ".weight.T", np.ascontiguousarray(w[prefix + ".weight"].T))
        else:
            wt = node("Transpose", [weight(prefix + ".weight")], prefix + ".weight.T",
                      perm=[1, 0])
        b = weight(prefix + ".bias")
        return node("Add", [node("MatMul", [x, wt], out + ".mm"), b], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        g = weight(prefix + ".weight")
        b = weight(prefix + ".bias")
        return node("LayerNormalization", [x, g, b], out, axis=-1, epsilon=eps)

    # --- embeddings
    word = weight("embeddings.word_embeddings.weight")
    pos = weight("embeddings.position_embeddings.weight")
    const("type0", w["embeddings.token_type_embeddings.weight"][0])
    const("i0", np.array(0, dtype=np.int64))
    const("i1", np.array(1, dtype=np.int64))
    const("one_f", np.array(1.0, dtype=np.float32))
    const("neg", np.array(np.finfo(np.float32).min, dtype=np.float32))
    shape = node("Shape", ["input_ids"], "ids_shape")
    seq = node("Gather", [shape, "i1"], "seq_len", axis=0)
    positions = node("Range", ["i0", seq, "i1"], "positions")
    emb = node("Add", [node("Gather", [word, "input_ids"], "e_word"),
                       node("Gather", [pos, positions], "e_pos")], "e_sum")
    emb = node("Add", [emb, "type0"], "e_sum_t")
    x = layer_norm(emb, "embeddings.LayerNorm", "emb_out")

    # --- additive attention mask: 0 where attended, float32.min where padded
    maskf = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inv = node("Sub", ["one_f", maskf], "mask_inv")
    bias = node("Mul", [inv, "neg"], "mask_add")  # [B, S]
    # [B, 1, 1, S]: broadcast over heads and query positions (MultiHeadAttention's
    # attention_bias and the plain Add alike)
    const("mask_axes", np.array([1, 2], dtype=np.int64))
    bias = node("Unsqueeze", [bias, "mask_axes"], "mask_4d")
    if fused:
        # MultiHeadAttention's key_padding_mask: int32 [batch, seq], 0 = padded
        kpm = node("Cast", ["attention_mask"], "mask_i32", to=TensorProto.INT32)
    else:
        const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
        const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
        const("scale", np.array(math.sqrt(head_dim), dtype=np.float32))

    const("half", np.array(0.5, dtype=np.float32))
    const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    for i in range(layers):
        p = f"encoder.layer.{i}"
        q = linear(x, f"{p}.attention.self.query", f"l{i}.q")
        k = linear(x, f"{p}.attention.self.key", f"l{i}.k")
        v = linear(x, f"{p}.attention.self.value", f"l{i}.v")
        if fused:
            ctx = node("MultiHeadAttention", [q, k, v, "", kpm], f"l{i}.ctx",
                       domain="com.microsoft", num_heads=heads)
        else:
            qh = node("Transpose", [node("Reshape", [q, "split_heads"], f"l{i}.qr")], f"l{i}.qt",
                      perm=[0, 2, 1, 3])
            kh = node("Transpose", [node("Reshape", [k, "split_heads"], f"l{i}.kr")], f"l{i}.kt",
                      perm=[0, 2, 3, 1])
            vh = node("Transpose", [node("Reshape", [v, "split_heads"], f"l{i}.vr")], f"l{i}.vt",
                      perm=[0, 2, 1, 3])
            scores = node("Div", [node("MatMul", [qh, kh], f"l{i}.qk"), "scale"], f"l{i}.sc")
            probs = node("Softmax", [node("Add", [scores, bias], f"l{i}.scm")], f"l{i}.p",
                         axis=-1)
            ctx = node("Transpose", [node("MatMul", [probs, vh], f"l{i}.pv")], f"l{i}.ctxt",
                       perm=[0, 2, 1, 3])
            ctx = node("Reshape", [ctx, "merge_heads"], f"l{i}.ctx")
        att = linear(ctx, f"{p}.attention.output.dense", f"l{i}.ao")
        x = layer_norm(node("Add", [att, x], f"l{i}.ar"), f"{p}.attention.output.LayerNorm",
                       f"l{i}.an")
        h = linear(x, f"{p}.intermediate.dense", f"l{i}.i")
        erf = node("Erf", [node("Div", [h, "sqrt2"], f"l{i}.gd")], f"l{i}.ge")
        gelu = node("Mul", [node("Mul", [h, "half"], f"l{i}.gh"),
                            node("Add", [erf, "one_f"], f"l{i}.g1")], f"l{i}.g")
        out = linear(gelu, f"{p}.output.dense", f"l{i}.o")
        x = layer_norm(node("Add", [out, x], f"l{i}.or"), f"{p}.output.LayerNorm",
                       f"l{i}.on")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="out"))

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])
    last = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                         ["batch", "seq", hidden])
    graph = helper.make_graph(nodes, "bert", [ids, mask], [last], initializer=inits)
    imports = [helper.make_opsetid("", opset)]
    if fused:
        imports.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=imports, producer_name="episteme")
    model.ir_version = 8
    if not fused and external is None:
        onnx.checker.check_model(model)
    return model
