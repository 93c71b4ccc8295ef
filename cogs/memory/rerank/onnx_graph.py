"""A Qwen3ForCausalLM written out as one ONNX graph for reranking: tokens after a past KV cache in, the present KV
cache and the "no"/"yes" logits at chosen positions out. Weights go to one external file, written tensor by tensor."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

OPSET = 17
GRAPH_FILE, WEIGHTS_FILE = "model.onnx", "weights.bin"
HEAD_NODE = "head"
# Offsets in the weights file are page-aligned so ONNX Runtime can map them instead of copying.
ALIGNMENT = 4096
# RoPE variants whose frequencies do not depend on the sequence length (those are exported as constants).
STATIC_ROPE_TYPES = frozenset({"default", "linear", "yarn", "llama3"})
# Graph names the runtime side feeds and reads.
INPUT_IDS, POSITION_IDS, ATTENTION_BIAS, LAST_INDEX, LOGITS = (
    "input_ids", "position_ids", "attention_bias", "last_index", "logits")


def past_names(layer: int) -> tuple[str, str]:
    return f"past_key_{layer}", f"past_value_{layer}"


def present_names(layer: int) -> tuple[str, str]:
    return f"present_key_{layer}", f"present_value_{layer}"


def check_exportable(config: Any) -> None:
    """Raise ValueError unless `config` is a Qwen3 decoder this graph reproduces exactly."""
    rope = getattr(config, "rope_parameters", None) or {"rope_type": "default"}
    problems = []
    if config.model_type != "qwen3":
        problems.append(f"model_type {config.model_type!r} (only 'qwen3')")
    if config.hidden_act != "silu":
        problems.append(f"hidden_act {config.hidden_act!r}")
    if rope.get("rope_type", "default") not in STATIC_ROPE_TYPES:
        problems.append(f"rope_type {rope.get('rope_type')!r}")
    if getattr(config, "use_sliding_window", False):
        problems.append("sliding-window attention")
    if problems:
        raise ValueError("cannot export to ONNX: " + ", ".join(problems))


class _Writer:
    """Collects nodes and initializers; initializer data goes straight to the weights file."""

    def __init__(self, weights: Any) -> None:
        import onnx

        self.onnx = onnx
        self.weights = weights
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._names: set[str] = set()
        self._count = 0

    def tensor(self, name: str, array: np.ndarray) -> str:
        """An initializer; a name already written (a shared constant) is reused as it is."""
        if name in self._names:
            return name
        self._names.add(name)
        onnx = self.onnx
        array = np.ascontiguousarray(array)
        tensor = onnx.TensorProto(name=name, dims=list(array.shape),
                                  data_type=onnx.helper.np_dtype_to_tensor_dtype(array.dtype))
        if array.nbytes < 1024:  # small constants (shapes, eps) stay in the graph file
            tensor.raw_data = array.tobytes()
        else:
            offset = -self.weights.tell() % ALIGNMENT + self.weights.tell()
            self.weights.seek(offset)
            self.weights.write(array.tobytes())
            tensor.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", WEIGHTS_FILE), ("offset", str(offset)), ("length", str(array.nbytes))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
        self.initializers.append(tensor)
        return name

    def const(self, name: str, values: list[int] | list[float], dtype: type = np.int64) -> str:
        return self.tensor(name, np.asarray(values, dtype=dtype))

    def node(self, op: str, inputs: list[str], name: str | None = None, **attrs: Any) -> str:
        """A node with one output; returns the output's name."""
        [output] = self.node_outputs(op, inputs, 1, name, **attrs)
        return output

    def node_outputs(self, op: str, inputs: list[str], n_outputs: int, name: str | None = None,
                     **attrs: Any) -> list[str]:
        """A node with ``n_outputs`` outputs (a Split); returns their names."""
        self._count += 1
        name = name or f"{op}_{self._count}"
        outputs = [f"{name}_out{i}" for i in range(n_outputs)]
        self.nodes.append(self.onnx.helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to("cpu").float().numpy()


def _rms_norm(w: _Writer, x: str, weight: str, eps: str) -> str:
    # The pattern ONNX Runtime fuses into SimplifiedLayerNormalization: x / sqrt(mean(x^2) + eps) * weight.
    squared = w.node("Pow", [x, w.const("two", [2.0], np.float32)])
    mean = w.node("ReduceMean", [squared], axes=[-1], keepdims=1)
    root = w.node("Sqrt", [w.node("Add", [mean, eps])])
    return w.node("Mul", [w.node("Div", [x, root]), weight])


def _linear(w: _Writer, x: str, modules: list[Any], name: str) -> list[str]:
    """x @ W for the Linear `modules` side by side: one GEMM (fused weights), split into their outputs."""
    weight = np.concatenate([_numpy(m.weight).T for m in modules], axis=1)
    out = w.node("MatMul", [x, w.tensor(f"{name}.weight_t", weight)], name=name)
    if modules[0].bias is not None:
        out = w.node("Add", [out, w.tensor(f"{name}.bias", np.concatenate([_numpy(m.bias) for m in modules]))])
    if len(modules) == 1:
        return [out]
    sizes = [m.weight.shape[0] for m in modules]
    return w.node_outputs("Split", [out, w.const(f"split_{'_'.join(map(str, sizes))}", sizes)], len(sizes),
                          axis=-1)


def _rope(w: _Writer, x: str, cos: str, sin: str, half: int) -> str:
    first, second = w.node_outputs("Split", [x, w.const(f"split_{half}_{half}", [half, half])], 2, axis=-1)
    rotated = w.node("Concat", [w.node("Neg", [second]), first], axis=-1)
    return w.node("Add", [w.node("Mul", [x, cos]), w.node("Mul", [rotated, sin])])


def _attention(w: _Writer, layer: Any, i: int, x: str, tables: tuple[str, str, str], shapes: dict[str, int],
               eps: str) -> str:
    """Self-attention over past + these tokens; `tables` is (cos, sin, the mask tiled for grouped query heads)."""
    heads, kv_heads, head_dim = shapes["heads"], shapes["kv_heads"], shapes["head_dim"]
    cos, sin, bias = tables
    attn, p = layer.self_attn, f"layers.{i}.self_attn"
    q, k, v = _linear(w, x, [attn.q_proj, attn.k_proj, attn.v_proj], f"{p}.qkv_proj")
    q = _rms_norm(w, w.node("Reshape", [q, w.const("q_shape", [0, heads, head_dim])]),
                  w.tensor(f"{p}.q_norm", _numpy(attn.q_norm.weight)), eps)
    k = _rms_norm(w, w.node("Reshape", [k, w.const("kv_shape", [0, kv_heads, head_dim])]),
                  w.tensor(f"{p}.k_norm", _numpy(attn.k_norm.weight)), eps)
    v = w.node("Reshape", [v, "kv_shape"])
    q = _rope(w, w.node("Transpose", [q], perm=[1, 0, 2]), cos, sin, head_dim // 2)   # [heads, T, d]
    k = _rope(w, w.node("Transpose", [k], perm=[1, 0, 2]), cos, sin, head_dim // 2)   # [kv_heads, T, d]
    v = w.node("Transpose", [v], perm=[1, 0, 2])
    past_key, past_value = past_names(i)
    present_key, present_value = present_names(i)
    w.nodes.append(w.onnx.helper.make_node("Concat", [past_key, k], [present_key], axis=1, name=present_key))
    w.nodes.append(w.onnx.helper.make_node("Concat", [past_value, v], [present_value], axis=1, name=present_value))
    # Grouped-query attention without repeating K/V: the query heads of one KV head are stacked along the rows
    # ([kv_heads, rep * T, d]), which is why the mask comes tiled `rep` times.
    q = w.node("Mul", [q, w.const("attn_scale", [head_dim ** -0.5], np.float32)])
    grouped = w.node("Reshape", [q, w.const("grouped_q", [kv_heads, -1, head_dim])])
    keys_t = w.node("Transpose", [present_key], perm=[0, 2, 1])
    scores = w.node("MatMul", [grouped, keys_t], name=f"{p}.scores")                    # [kv, rep*T, S]
    probs = w.node("Softmax", [w.node("Add", [scores, bias])], axis=-1)
    context = w.node("MatMul", [probs, present_value], name=f"{p}.context")             # [kv, rep*T, d]
    context = w.node("Reshape", [context, w.const("context_heads", [heads, -1, head_dim])])
    context = w.node("Reshape", [w.node("Transpose", [context], perm=[1, 0, 2]),
                                 w.const("context_flat", [0, heads * head_dim])])
    return _linear(w, context, [attn.o_proj], f"{p}.o_proj")[0]


def _mlp(w: _Writer, layer: Any, i: int, x: str) -> str:
    mlp, p = layer.mlp, f"layers.{i}.mlp"
    gate, up = _linear(w, x, [mlp.gate_proj, mlp.up_proj], f"{p}.gate_up_proj")
    act = w.node("Mul", [w.node("Mul", [gate, w.node("Sigmoid", [gate])]), up])
    return _linear(w, act, [mlp.down_proj], f"{p}.down_proj")[0]


def _rope_tables(w: _Writer, rotary: Any) -> tuple[str, str]:
    inv_freq = _numpy(rotary.inv_freq)
    positions = w.node("Cast", [POSITION_IDS], to=w.onnx.TensorProto.FLOAT)
    freqs = w.node("Mul", [w.node("Unsqueeze", [positions, w.const("axis_last", [-1])]),
                           w.tensor("rope_inv_freq", inv_freq)])
    emb = w.node("Concat", [freqs, freqs], axis=-1)                                     # [T, d]
    cos, sin = w.node("Cos", [emb]), w.node("Sin", [emb])
    if rotary.attention_scaling != 1.0:
        scale = w.const("rope_scaling", [rotary.attention_scaling], np.float32)
        cos, sin = w.node("Mul", [cos, scale]), w.node("Mul", [sin, scale])
    return cos, sin


def export_qwen3(model: Any, target: Path, yes_id: int, no_id: int,
                 progress: Callable[[int, int], None] | None = None) -> None:
    """Write `target/model.onnx` and `target/weights.bin` for a float32 Qwen3ForCausalLM (in eval mode)."""
    import onnx
    from onnx import TensorProto, helper

    config = model.config
    check_exportable(config)
    shapes = {"heads": config.num_attention_heads, "kv_heads": config.num_key_value_heads,
              "head_dim": getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads}
    base, n_layers = model.model, config.num_hidden_layers
    with (target / WEIGHTS_FILE).open("wb") as weights:
        w = _Writer(weights)
        eps = w.const("rms_eps", [config.rms_norm_eps], np.float32)
        x = w.node("Gather", [w.tensor("embed_tokens", _numpy(base.embed_tokens.weight)), INPUT_IDS], axis=0)
        cos, sin = _rope_tables(w, base.rotary_emb)
        rep = shapes["heads"] // shapes["kv_heads"]
        bias = w.node("Tile", [ATTENTION_BIAS, w.const("bias_tiles", [rep, 1])])
        for i, layer in enumerate(base.layers):
            h = _rms_norm(w, x, w.tensor(f"layers.{i}.input_norm", _numpy(layer.input_layernorm.weight)), eps)
            x = w.node("Add", [x, _attention(w, layer, i, h, (cos, sin, bias), shapes, eps)])
            h = _rms_norm(w, x, w.tensor(f"layers.{i}.post_norm", _numpy(layer.post_attention_layernorm.weight)),
                          eps)
            x = w.node("Add", [x, _mlp(w, layer, i, h)])
            if progress is not None:
                progress(i + 1, n_layers)
        last = w.node("Gather", [x, LAST_INDEX], axis=0)
        last = _rms_norm(w, last, w.tensor("final_norm", _numpy(base.norm.weight)), eps)
        head = _numpy(model.get_output_embeddings().weight[[no_id, yes_id]]).T           # [hidden, 2]
        w.nodes.append(helper.make_node("MatMul", [last, w.tensor("head_no_yes", head)], [LOGITS], name=HEAD_NODE))

    kv_shape = [shapes["kv_heads"], "past", shapes["head_dim"]]
    present_shape = [shapes["kv_heads"], "total", shapes["head_dim"]]
    inputs = [helper.make_tensor_value_info(INPUT_IDS, TensorProto.INT64, ["tokens"]),
              helper.make_tensor_value_info(POSITION_IDS, TensorProto.INT64, ["tokens"]),
              helper.make_tensor_value_info(ATTENTION_BIAS, TensorProto.FLOAT, ["tokens", "total"]),
              helper.make_tensor_value_info(LAST_INDEX, TensorProto.INT64, ["scored"])]
    outputs = [helper.make_tensor_value_info(LOGITS, TensorProto.FLOAT, ["scored", 2])]
    for i in range(n_layers):
        inputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, kv_shape) for name in past_names(i)]
        outputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, present_shape)
                    for name in present_names(i)]
    graph = helper.make_graph(w.nodes, "qwen3_reranker", inputs, outputs, initializer=w.initializers)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="discord-memory-bot")
    proto.ir_version = 8
    onnx.save_model(proto, str(target / GRAPH_FILE))
