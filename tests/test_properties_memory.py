"""Property tests (hypothesis) over the memory model and the HF config parser.

Memory: the primer's formulas hold for any architecture; more GPU memory never lowers how many requests fit
(textbook or vLLM's pool); longer requests never fit more; fewer bits never weigh more; TP never loses KV bytes.
Parser: any dict, any text, gives a ModelSpec or an InputError that names a config.json field; never another
exception (the sidebar shows InputError and would show anything else as a traceback).
"""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from planner.core.catalog import kv_precisions, model_presets, weight_precisions
from planner.core.errors import InputError
from planner.core.hf_config import model_from_hf_config, parse_config_text
from planner.core.model_spec import ModelSpec
from planner.core.precision import resolve_kv_bytes
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.memory import sizes as memory
from planner.memory.plan import plan_memory
from planner.memory.sliding_window import request_blocks

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WEIGHTS = sorted(weight_precisions())
KVS = sorted(kv_precisions())


@st.composite
def model_specs(draw, mla: bool = False, window: bool = True) -> ModelSpec:
    """Dense/GQA/MQA (optionally sliding-window or MoE) architectures over a wide range of sizes."""
    kv_heads = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    heads = kv_heads * draw(st.sampled_from([1, 2, 4, 8]))
    head_dim = draw(st.sampled_from([32, 64, 80, 96, 128, 256]))
    layers = draw(st.integers(1, 128))
    fields = dict(
        name="random",
        hidden_size=heads * head_dim,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=draw(st.integers(64, 65536)),
        vocab_size=draw(st.integers(1, 262144)),
        max_position_embeddings=draw(st.integers(128, 1 << 20)),
    )
    if window and draw(st.booleans()):
        fields.update(sliding_window=draw(st.integers(1, 1 << 16)), num_sliding_layers=draw(st.integers(0, layers)))
    if draw(st.booleans()):
        experts = draw(st.integers(2, 64))
        fields.update(
            num_experts=experts,
            num_experts_per_tok=draw(st.integers(1, experts)),
            moe_intermediate_size=draw(st.integers(64, 16384)),
        )
    if mla:
        fields.update(
            kv_lora_rank=draw(st.integers(1, 1024)),
            qk_rope_head_dim=draw(st.integers(1, 128)),
            qk_nope_head_dim=draw(st.integers(1, 256)),
            v_head_dim=draw(st.integers(1, 256)),
        )
    return ModelSpec(**fields)


@SETTINGS
@given(model_specs(window=False), st.sampled_from([1.0, 2.0, 4.0]), st.integers(1, 1 << 20))
def test_kv_formula_is_the_primers(model, kv_bytes, tokens):
    per_token = memory.kv_bytes_per_token(model, kv_bytes)
    assert per_token == 2 * model.num_layers * model.num_kv_heads * model.head_dim * kv_bytes  # primer §3
    assert memory.kv_bytes_per_request(model, kv_bytes, tokens) == per_token * tokens


@SETTINGS
@given(model_specs(), st.sampled_from([1.0, 2.0]), st.integers(1, 1 << 20), st.integers(0, 1 << 20))
def test_longer_requests_never_hold_less_kv(model, kv_bytes, tokens, extra):
    assert memory.kv_bytes_per_request(model, kv_bytes, tokens + extra) >= memory.kv_bytes_per_request(
        model, kv_bytes, tokens
    )


@SETTINGS
@given(st.floats(0, 1e13), st.floats(0, 1e13), st.floats(0, 1e13), st.floats(1, 1e12), st.floats(0, 1e12))
def test_textbook_fit_is_monotone(gpu_bytes, more_gpu, weights, request, more_request):
    fit = memory.textbook_max_requests(gpu_bytes, weights, request)
    assert fit >= 0
    assert memory.textbook_max_requests(gpu_bytes + more_gpu, weights, request) >= fit  # more memory: never fewer
    assert memory.textbook_max_requests(gpu_bytes, weights, request + more_request) <= fit  # bigger requests
    assert fit * request <= max(gpu_bytes - weights, 0) + 1e-6 * gpu_bytes  # the requests do fit


@SETTINGS
@given(model_specs(), st.sampled_from(WEIGHTS), st.sampled_from(WEIGHTS))
def test_fewer_bits_never_weigh_more(model, a, b):
    pa, pb = weight_precisions()[a], weight_precisions()[b]
    assume(pa.bits_per_weight <= pb.bits_per_weight)
    assume(pa.keeps_embeddings_16bit == pb.keeps_embeddings_16bit or not pa.keeps_embeddings_16bit)
    assert memory.weight_bytes(model, pa) <= memory.weight_bytes(model, pb) * (1 + 1e-12)


@SETTINGS
@given(model_specs(), st.sampled_from([1, 2, 4, 8]))
def test_tensor_parallel_never_loses_kv_bytes(model, tp):
    whole = memory.kv_bytes_per_token(model, 2.0)
    per_gpu = memory.kv_bytes_per_token(model, 2.0, tp)
    assert per_gpu * tp >= whole  # heads are split or replicated, never dropped
    if model.num_kv_heads % tp == 0:
        assert per_gpu * tp == whole


@st.composite
def scenarios(draw) -> Scenario:
    presets = sorted(model_presets())
    dep = Deployment(
        weights=draw(st.sampled_from(WEIGHTS)),
        kv_cache_dtype=draw(st.sampled_from(KVS)),
        gpu_memory_utilization=draw(st.floats(0.5, 0.99)),
        max_model_len=draw(st.sampled_from([None, 512, 2048, 8192, 32768])),
        block_size=draw(st.sampled_from([8, 16, 32])),
        max_num_seqs=draw(st.integers(1, 1024)),
        max_num_batched_tokens=draw(st.integers(256, 65536)),
        enforce_eager=draw(st.booleans()),
    )
    return Scenario(
        model=draw(st.sampled_from(presets)),
        gpu="H100-SXM",
        deployment=dep,
        gpu_memory_gb=draw(st.floats(4, 400)),
        context_tokens=draw(st.integers(1, 65536)),
    )


@settings(max_examples=40, deadline=None)
@given(scenarios(), st.floats(0.5, 400))
def test_more_gpu_memory_never_lowers_concurrency(scenario, extra_gb):
    small = plan_memory(resolve(scenario))
    big = plan_memory(resolve(scenario.model_copy(update={"gpu_memory_gb": scenario.gpu_memory_gb + extra_gb})))
    assert big.textbook_max_requests >= small.textbook_max_requests
    assert big.num_gpu_blocks >= small.num_gpu_blocks
    assert big.max_concurrency >= small.max_concurrency
    assert big.paged_max_requests >= small.paged_max_requests
    assert small.num_gpu_blocks >= 0 and small.max_concurrency >= 0 and small.textbook_max_requests >= 0


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_plan_is_consistent(scenario):
    r = resolve(scenario)
    plan = plan_memory(r)
    assert plan.kv_cache_tokens == plan.num_gpu_blocks * r.deployment.block_size
    dep = r.deployment  # vLLM V1's log: blocks / blocks per max_model_len request (sliding windows capped)
    if r.model.layer_groups:  # vLLM's hybrid layout: its blocks over a max_model_len request's blocks of all groups
        h = plan.hybrid
        assert math.isclose(plan.max_concurrency, h.pool.num_blocks / h.blocks_per_max_request)
        assert plan.paged_max_requests == h.pool.num_blocks // h.blocks_per_request
    elif r.model.sliding_window and r.model.num_sliding_layers:
        per_request = request_blocks(
            r.model, r.max_model_len, dep.max_num_batched_tokens, r.max_model_len, dep.block_size
        )
        assert math.isclose(plan.max_concurrency, plan.num_gpu_blocks / per_request)
    else:
        assert math.isclose(plan.max_concurrency, plan.kv_cache_tokens / r.max_model_len)
    assert plan.weight_bytes == memory.weight_bytes(r.model, r.weights)
    assert r.kv_bytes == resolve_kv_bytes(r.kv, r.weights)
    assert all(math.isfinite(v) for v in (plan.weight_bytes, plan.kv_bytes_per_request, plan.kv_pool_bytes_per_gpu))


# --- the config.json parser: random input ------------------------------------------------------------------

KNOWN_KEYS = [
    "hidden_size",
    "n_embd",
    "d_model",
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "num_attention_heads",
    "n_head",
    "num_key_value_heads",
    "num_kv_heads",
    "n_head_kv",
    "head_dim",
    "intermediate_size",
    "ffn_hidden_size",
    "n_inner",
    "vocab_size",
    "max_position_embeddings",
    "max_seq_len",
    "n_positions",
    "tie_word_embeddings",
    "torch_dtype",
    "model_type",
    "sliding_window",
    "use_sliding_window",
    "multi_query",
    "new_decoder_architecture",
    "parallel_attn",
    "bias",
    "attention_bias",
    "mlp_bias",
    "num_local_experts",
    "num_experts",
    "n_routed_experts",
    "num_experts_per_tok",
    "n_shared_experts",
    "first_k_dense_replace",
    "moe_intermediate_size",
    "mlp_only_layers",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "_name_or_path",
]
MODEL_TYPES = [
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "gemma2",
    "phi3",
    "mixtral",
    "deepseek_v2",
    "falcon",
    "RefinedWeb",
    "RefinedWebModel",
    "",
    "unknown",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10),
    st.integers(1, 1 << 16),
    st.integers(-(1 << 70), 1 << 70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(MODEL_TYPES),
    st.sampled_from(["4096", "1e3", "32"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
VALID = json.loads((next(iter(model_presets().values()))).read_text())


def check_parse(fn, *args) -> None:
    try:
        spec = fn(*args)
    except InputError as err:
        assert err.field and err.field.startswith("config.json"), f"field not named: {err.field!r}"
        assert err.message and "\n" not in err.message, err.message
    else:
        assert isinstance(spec, ModelSpec)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=8), values, max_size=20))
def test_random_config_dicts_raise_only_input_errors(cfg):
    check_parse(model_from_hf_config, cfg)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(KNOWN_KEYS), values, max_size=8))
def test_mutated_real_configs_raise_only_input_errors(changes):
    """A published config with some keys replaced by junk: the nearest thing to a user's edited file."""
    check_parse(model_from_hf_config, {**VALID, **changes})


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300),
        st.builds(json.dumps, st.dictionaries(st.sampled_from(KNOWN_KEYS), values, max_size=10)),
    )
)
def test_random_config_text_raises_only_input_errors(text):
    check_parse(parse_config_text, text)
