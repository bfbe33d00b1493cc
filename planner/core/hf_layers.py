"""Per-layer token-mixing kinds from a Hugging Face config: which layers attend over every token, which over a
window or a chunk, which keep a recurrent state (linear attention, Mamba-2), and the geometry each kind caches.

How each family spells it (the configs in data/models/, sources in data/models/SOURCES.md):
- `layer_types` (gpt-oss, Gemma-3/4, Qwen3-Next/3.5, Step-3.x): "full_attention" | "sliding_attention" |
  "linear_attention" | "chunked_attention" per layer; Qwen3.5 also states `full_attention_interval`.
- `hybrid_override_pattern` (Nemotron-H): one character per block, M = Mamba-2, * = attention, - = MLP, E = MoE.
- `hybrid_layer_pattern` (MiMo-V2-Flash): 1 = sliding window, 0 = full attention, with `swa_*` head geometry.
- Llama-4: `attention_chunk_size` on the RoPE layers; every `no_rope_layer_interval`-th layer (default 4) is a
  global NoPE layer (transformers Llama4TextConfig.no_rope_layers; vLLM uses chunked local attention elsewhere).
- DeepSeek-V3.2 (`index_n_heads`, `index_head_dim`): MLA plus the lightning indexer's key per token.
- DeepSeek-V4 (`compress_ratios`, `sliding_window`): every layer keeps a 128-token window of uncompressed entries;
  layers with ratio r > 0 also keep one compressed entry per r tokens (r = 4 with the indexer, r = 128 without).

Returns () for a model with one uniform attention kind, so older presets keep their exact figures.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from planner.core.errors import InputError
from planner.core.model_spec import LayerGroup

LAYER_TYPE_KINDS = {
    "full_attention": "full",
    "attention": "full",
    "global": "full",
    "sliding_attention": "sliding",
    "sliding_window_attention": "sliding",
    "local": "sliding",
    "chunked_attention": "chunked",
    "linear_attention": "linear",
    "mamba": "mamba",
}
DTYPE_BYTES = {"float32": 4.0, "fp32": 4.0, "bfloat16": 2.0, "float16": 2.0, "auto": None, None: None}


def _kinds_from_list(values: Any, key: str, source: str, num_layers: int, mapping: dict) -> list[str]:
    if not isinstance(values, list) or len(values) < num_layers:
        raise InputError(f"{source}: {key}", f"must be a list with one entry per layer ({num_layers})")
    kinds = []
    for v in values[:num_layers]:
        if v not in mapping:
            raise InputError(f"{source}: {key}", f"unknown layer kind {v!r}; known: {', '.join(map(str, mapping))}")
        kinds.append(mapping[v])
    return kinds


def _state_dtype(cfg: dict) -> float | None:
    for key in ("mamba_ssm_dtype", "mamba_ssm_cache_dtype"):
        if cfg.get(key) is not None:
            return DTYPE_BYTES.get(str(cfg[key]))
    return None


def _attention(cfg: dict, kind: str, count: int, source: str, **extra) -> LayerGroup:
    heads = int(cfg.get("num_attention_heads") or 0)
    fields = dict(
        kind=kind,
        count=count,
        num_heads=heads,
        num_kv_heads=int(cfg.get("num_key_value_heads") or heads),
        head_dim=int(cfg.get("head_dim") or cfg.get("attention_head_dim") or cfg["hidden_size"] // heads),
        output_gate=bool(cfg.get("attn_output_gate")),
        sinks=cfg.get("model_type") == "gpt_oss",
    )
    if kind in ("sliding", "chunked"):
        window = cfg.get("attention_chunk_size") if kind == "chunked" else cfg.get("sliding_window")
        if not window:
            key = "attention_chunk_size" if kind == "chunked" else "sliding_window"
            raise InputError(f"{source}: {key}", "missing")
        fields["window"] = int(window)
    fields.update(extra)
    return LayerGroup(**fields)


def _linear(cfg: dict, count: int) -> LayerGroup:
    """Gated DeltaNet (Qwen3-Next/3.5): conv over q, k, v channels; state num_v_heads × k_dim × v_dim."""
    k_heads, v_heads = int(cfg["linear_num_key_heads"]), int(cfg["linear_num_value_heads"])
    k_dim, v_dim = int(cfg["linear_key_head_dim"]), int(cfg["linear_value_head_dim"])
    return LayerGroup(
        kind="linear",
        count=count,
        state_heads=v_heads,
        state_key_dim=k_dim,
        state_value_dim=v_dim,
        num_groups=k_heads,
        conv_channels=2 * k_heads * k_dim + v_heads * v_dim,
        conv_kernel=int(cfg.get("linear_conv_kernel_dim", 4)),
        state_dtype_bytes=_state_dtype(cfg),
    )


def _mamba(cfg: dict, count: int) -> LayerGroup:
    """Mamba-2 (Nemotron-H): conv over x, B, C (d_inner + 2·n_groups·d_state); state heads × head_dim × d_state."""
    heads, head_dim = int(cfg["mamba_num_heads"]), int(cfg["mamba_head_dim"])
    groups, d_state = int(cfg.get("n_groups", 1)), int(cfg["ssm_state_size"])
    return LayerGroup(
        kind="mamba",
        count=count,
        state_heads=heads,
        state_key_dim=d_state,
        state_value_dim=head_dim,
        num_groups=groups,
        conv_channels=heads * head_dim + 2 * groups * d_state,
        conv_kernel=int(cfg.get("conv_kernel", 4)),
        state_dtype_bytes=_state_dtype(cfg),
    )


def _grouped(kinds: list[str], make) -> tuple[LayerGroup, ...]:
    counts = Counter(kinds)
    return tuple(make(kind, counts[kind]) for kind in dict.fromkeys(kinds))


def layer_groups(cfg: dict, model_type: str, num_layers: int, source: str) -> tuple[LayerGroup, ...]:
    """The token-mixing layer groups of a (text) config; () when every layer is the same attention kind."""
    try:
        return _layer_groups(cfg, model_type, num_layers, source)
    except KeyError as err:
        raise InputError(f"{source}: {err.args[0]}", "missing (required to size the model's layers)") from None


def _layer_groups(cfg: dict, model_type: str, num_layers: int, source: str) -> tuple[LayerGroup, ...]:
    if model_type == "deepseek_v4":
        return _deepseek_v4(cfg, num_layers, source)
    if cfg.get("index_head_dim") and cfg.get("kv_lora_rank"):  # DeepSeek-V3.2: MLA + lightning indexer
        return (
            LayerGroup(
                kind="full",
                count=num_layers,
                num_heads=int(cfg["num_attention_heads"]),
                latent_dim=int(cfg["kv_lora_rank"]) + int(cfg["qk_rope_head_dim"]),
                indexer_head_dim=int(cfg["index_head_dim"]),
                indexer_heads=int(cfg["index_n_heads"]),
            ),
        )
    if isinstance(cfg.get("hybrid_override_pattern"), str):
        pattern = cfg["hybrid_override_pattern"]
        if len(pattern) != num_layers:
            raise InputError(f"{source}: hybrid_override_pattern", f"has {len(pattern)} blocks, not {num_layers}")
        kinds = [{"M": "mamba", "*": "full"}[c] for c in pattern if c in "M*"]
        return _grouped(kinds, lambda k, n: _mamba(cfg, n) if k == "mamba" else _attention(cfg, "full", n, source))
    if isinstance(cfg.get("hybrid_layer_pattern"), list):  # MiMo-V2-Flash
        kinds = _kinds_from_list(
            cfg["hybrid_layer_pattern"], "hybrid_layer_pattern", source, num_layers, {0: "full", 1: "sliding"}
        )
        sink = bool(cfg.get("add_swa_attention_sink_bias"))

        def make(kind: str, n: int) -> LayerGroup:
            if kind == "full":
                return _attention(cfg, "full", n, source, v_head_dim=int(cfg.get("v_head_dim") or 0))
            swa = {
                "num_attention_heads": cfg.get("swa_num_attention_heads", cfg["num_attention_heads"]),
                "num_key_value_heads": cfg.get("swa_num_key_value_heads", cfg.get("num_key_value_heads")),
                "head_dim": cfg.get("swa_head_dim", cfg.get("head_dim")),
                "hidden_size": cfg["hidden_size"],
                "sliding_window": cfg.get("sliding_window") or cfg.get("sliding_window_size"),
            }
            return _attention(swa, "sliding", n, source, v_head_dim=int(cfg.get("swa_v_head_dim") or 0), sinks=sink)

        return _grouped(kinds, make)
    if "layer_types" in cfg:
        kinds = _kinds_from_list(cfg["layer_types"], "layer_types", source, num_layers, LAYER_TYPE_KINDS)
    elif model_type in ("llama4", "llama4_text") and cfg.get("attention_chunk_size"):
        interval = int(cfg.get("no_rope_layer_interval", 4))
        nope = cfg.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(num_layers)]
        kinds = ["chunked" if uses_rope else "full" for uses_rope in nope[:num_layers]]
    else:
        return ()
    if len(set(kinds)) == 1 and kinds[0] == "full":
        return ()

    def make(kind: str, n: int) -> LayerGroup:
        if kind == "linear":
            return _linear(cfg, n)
        if kind == "mamba":
            return _mamba(cfg, n)
        if kind == "full" and cfg.get("global_head_dim"):  # Gemma-4 global layers: own head size and KV heads
            return _attention(
                cfg,
                "full",
                n,
                source,
                head_dim=int(cfg["global_head_dim"]),
                num_kv_heads=int(cfg.get("num_global_key_value_heads") or cfg["num_key_value_heads"]),
                kv_shared=bool(cfg.get("attention_k_eq_v")),
            )
        return _attention(cfg, kind, n, source)

    return _grouped(kinds, make)


def _deepseek_v4(cfg: dict, num_layers: int, source: str) -> tuple[LayerGroup, ...]:
    """DeepSeek-V4: one K=V entry of head_dim values per cached position (a single shared head); a 128-token window
    in every layer, plus compressed entries (one per `ratio` tokens) in the layers whose compress_ratio is > 0."""
    ratios = cfg.get("compress_ratios")
    if not isinstance(ratios, list) or len(ratios) < num_layers:
        raise InputError(f"{source}: compress_ratios", f"must list one ratio per layer ({num_layers})")
    dim, heads = int(cfg["head_dim"]), int(cfg["num_attention_heads"])
    groups = [
        LayerGroup(
            kind="sliding",
            count=num_layers,
            window=int(cfg["sliding_window"]),
            num_heads=heads,
            latent_dim=dim,
            kv_shared=True,
            sinks=True,
        )
    ]
    for ratio, n in sorted(Counter(int(r) for r in ratios[:num_layers] if r).items()):
        indexer = ratio == min(r for r in ratios[:num_layers] if r)  # the finer compression is indexed (top-k)
        groups.append(
            LayerGroup(
                kind="full",
                count=n,
                num_heads=heads,
                latent_dim=dim,
                kv_shared=True,
                compress_ratio=ratio,
                indexer_head_dim=int(cfg["index_head_dim"]) if indexer else 0,
                indexer_heads=int(cfg["index_n_heads"]) if indexer else 0,
                shares_layers=True,
            )
        )
    return tuple(groups)
