"""Today's open models: parameters against the model cards, per-request KV and state bytes by hand for one
model of each layer kind, checkpoint formats, vLLM's hybrid pool layout and the limit that binds."""

from __future__ import annotations

import pytest

from planner.core.catalog import get_model, get_weight_precision, model_presets
from planner.core.errors import InputError
from planner.core.hf_config import model_from_hf_config
from planner.core.params import count_params
from planner.memory import layer_groups as lg
from planner.memory import sizes as memory

GIB = 2**30


# ---- parameters against the model cards, with each card's convention ------------------------------------------


def test_gpt_oss_120b_as_openai_counts_it():
    # OpenAI gpt-oss model card, table 1: 116.83 B total, 5.13 B active per token; "active" leaves out the input
    # embedding (a lookup) but keeps the unembedding. Checkpoint 60.8 GiB (MXFP4 experts, BF16 the rest).
    p = count_params(get_model("openai/gpt-oss-120b"))
    assert p.total / 1e9 == pytest.approx(116.83, abs=0.005)
    assert p.active_without_input_embedding / 1e9 == pytest.approx(5.13, abs=0.005)
    weights = memory.weight_bytes(get_model("openai/gpt-oss-120b"), get_weight_precision("mxfp4"))
    assert weights / GIB == pytest.approx(60.8, rel=0.01)


def test_gpt_oss_20b_as_openai_counts_it():
    p = count_params(get_model("openai/gpt-oss-20b"))  # card: 20.91 B total, 3.61 B active, 12.8 GiB checkpoint
    assert p.total / 1e9 == pytest.approx(20.91, abs=0.005)
    assert p.active_without_input_embedding / 1e9 == pytest.approx(3.61, abs=0.005)
    weights = memory.weight_bytes(get_model("openai/gpt-oss-20b"), get_weight_precision("mxfp4"))
    assert weights / GIB == pytest.approx(12.8, rel=0.02)


def test_deepseek_v3_2_with_its_mtp_module_is_685b():
    # DeepSeek-V3 README: "685B ... 671B of the Main Model weights and 14B of the Multi-Token Prediction (MTP) Module";
    # the published checkpoint stores the MTP layer with its own embedding and head. V3.2 adds the indexer.
    p = count_params(get_model("deepseek-ai/DeepSeek-V3.2"))
    assert p.checkpoint_total / 1e9 == pytest.approx(685, rel=0.002)
    assert p.mtp / 1e9 == pytest.approx(14, rel=0.05)
    assert p.total / 1e9 == pytest.approx(671 + 0.85, rel=0.001)  # main model + 61 lightning indexers


@pytest.mark.parametrize(
    ("preset", "total_b", "active_b", "rel"),
    [
        ("mistralai/Mixtral-8x22B-v0.1", 141, 39, 0.01),  # Mistral: "141B parameters, 39B active" (both embeddings)
        ("nvidia/Nemotron-H-56B-Base-8K", 56, None, 0.01),  # NVIDIA Nemotron-H report: 56B (both embeddings)
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", 400, 17, 0.02),  # Meta: 400B total, 17B active
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", 120, 12, 0.07),  # "120B total, 12B active" (rounded down)
        ("XiaomiMiMo/MiMo-V2-Flash", 309, 15, 0.03),  # Xiaomi: "309B total, 15B active"
        ("deepseek-ai/DeepSeek-V4-Flash", 284, 13, 0.03),  # DeepSeek: 284B total, 13B activated
    ],
)
def test_total_and_active_against_the_card(preset, total_b, active_b, rel):
    p = count_params(get_model(preset))
    assert p.total / 1e9 == pytest.approx(total_b, rel=rel)
    if active_b:
        assert p.active / 1e9 == pytest.approx(active_b, rel=rel)


def test_qwen3_5_397b_counts_its_vision_tower():
    # Qwen: "397B total, 17B activated"; the checkpoint is the multimodal model, so the total includes the 27-block
    # vision tower counted from vision_config (0.46 B, labelled), which a text token does not activate.
    p = count_params(get_model("Qwen/Qwen3.5-397B-A17B"))
    assert p.total / 1e9 == pytest.approx(397, rel=0.002)
    assert p.active / 1e9 == pytest.approx(17, rel=0.03)
    assert p.breakdown["vision"] == p.vision and 0.4e9 < p.vision < 0.5e9


def test_llama_4_scout_text_model_and_the_card():
    # Meta: Scout 109B total, 17B active: the card counts the vision encoder, which this config copy (text_config
    # only, data/models/SOURCES.md) does not describe; the text model is 107.8 B, 1.1 % under the card.
    p = count_params(get_model("meta-llama/Llama-4-Scout-17B-16E-Instruct"))
    assert p.vision == 0
    assert p.total / 1e9 == pytest.approx(109, rel=0.015)
    assert p.total < 109e9
    assert p.active / 1e9 == pytest.approx(17, rel=0.02)


# ---- per-request KV and state bytes by hand, one model per layer kind ------------------------------------------


def test_full_and_sliding_gpt_oss_120b():
    m = get_model("openai/gpt-oss-120b")  # 18 full + 18 sliding (128) layers, 8 KV heads × 64, BF16 cache
    per_layer_token = 2 * 8 * 64 * 2  # 2,048 B
    assert memory.kv_bytes_per_request(m, 2, 32_768) == 18 * per_layer_token * 32_768 + 18 * per_layer_token * 128
    # the figure: the full-attention layers alone hold 1.21 GB at 32k (not 9.4 MB)
    assert memory.kv_bytes_per_request(m, 2, 32_768) / 1e9 == pytest.approx(1.213, abs=0.001)


def test_linear_attention_state_qwen3_5_397b():
    m = get_model("Qwen/Qwen3.5-397B-A17B")  # 45 Gated DeltaNet + 15 full-attention layers
    conv = (2 * 16 * 128 + 64 * 128) * (4 - 1) * 2  # q, k, v channels × (kernel − 1) × BF16 = 73,728 B
    recurrent = 64 * 128 * 128 * 4  # value heads × k dim × v dim × FP32 (mamba_ssm_dtype) = 4,194,304 B
    assert lg.state_bytes_per_request(m) == 45 * (conv + recurrent)
    assert memory.kv_bytes_per_request(m, 2, 8192) == 45 * (conv + recurrent) + 15 * (2 * 2 * 256 * 2) * 8192
    assert lg.state_bytes_per_request(m, tp=8) == 45 * (conv + recurrent) / 8  # heads and channels split by TP


def test_mamba_2_state_nemotron_h_56b():
    m = get_model("nvidia/Nemotron-H-56B-Base-8K")  # 54 Mamba-2 + 10 attention blocks (of 118)
    conv = (256 * 64 + 2 * 8 * 256) * 3 * 2  # (d_inner + 2 · n_groups · d_state) × (kernel − 1) × BF16
    ssm = 256 * 64 * 256 * 2  # heads × head_dim × d_state × BF16 (no ssm dtype in the config)
    assert lg.state_bytes_per_request(m) == 54 * (conv + ssm)
    assert memory.kv_bytes_per_token(m, 2) == 10 * 2 * 8 * 128 * 2  # not 118 layers' worth (the issue's 483,328)


def test_chunked_attention_llama_4_scout():
    m = get_model("meta-llama/Llama-4-Scout-17B-16E-Instruct")  # 36 chunked (8,192) + 12 global NoPE layers
    per_layer_token = 2 * 8 * 128 * 2
    assert memory.kv_bytes_per_request(m, 2, 100_000) == per_layer_token * (12 * 100_000 + 36 * 8192)


def test_mla_with_sparse_indexer_deepseek_v3_2():
    m = get_model("deepseek-ai/DeepSeek-V3.2")
    # MLA latent (512 + 64) × BF16 + the indexer's 128 FP8 values and one FP32 scale (vLLM DeepseekV32IndexerCache)
    assert memory.kv_bytes_per_token(m, 2) == 61 * ((512 + 64) * 2 + 128 + 4)
    assert memory.kv_bytes_per_token(m, 2, tp=8) == memory.kv_bytes_per_token(m, 2)  # latent and keys replicated


def test_gemma_4_global_layers_cache_k_only():
    m = get_model("google/gemma-4-26B-A4B")  # 25 sliding (1,024; 8 KV heads × 256) + 5 global (2 × 512, K = V)
    assert memory.kv_bytes_per_request(m, 2, 32_768) == 25 * 2 * 8 * 256 * 2 * 1024 + 5 * 2 * 512 * 2 * 32_768


# ---- vLLM's hybrid layout --------------------------------------------------------------------------------------


def test_vllm_groups_gpt_oss_into_two_groups_of_18():
    pool = lg.hybrid_pool(get_model("openai/gpt-oss-120b"), 2, 10 * GIB, tp=1, block_size=16)
    assert (pool.group_size, pool.num_groups) == (18, 2)
    assert pool.page_bytes == 16 * 2048
    assert pool.num_blocks == 10 * GIB // (16 * 2048 * 18)
    # a 32k request: 2,048 blocks of full attention + the sliding cap cdiv(127 + 8,192, 16) + 1 = 521
    assert pool.blocks_per_request(32_768, 8192, 32_768) == 2048 + 521


def test_vllm_pads_mamba_state_to_a_larger_attention_block():
    m = get_model("Qwen/Qwen3.5-397B-A17B")
    pool = lg.hybrid_pool(m, 2, 50 * GIB, tp=8, block_size=16)
    state_page = (12288 // 8) * 3 * 2 + 8 * 128 * 128 * 4  # 533,504 B per layer per request at TP 8
    attn_token = 1 * 256 * 2 * 2  # 2 KV heads / 8 → 1 head replicated, K and V, BF16 = 1,024 B
    block = 16 * -(-state_page // (16 * attn_token))  # 16 × 33 = 528 tokens
    assert {s.block_size for s in pool.specs if s.kind == "full"} == {block}
    assert pool.page_bytes == block * attn_token
    assert (pool.group_size, pool.num_groups) == (15, 4)  # 45 linear → 3 groups of 15, 15 full → 1


def test_binding_limit_names_the_smaller():
    assert lg.binding_limit(256, 40, "state_slots", True) == ("state_slots", 40)
    assert lg.binding_limit(16, 40, "kv_tokens", True) == ("max_num_seqs", 16)
    assert lg.binding_limit(16, 40, "kv_tokens", False) == ("weights", 0)


def test_memory_plan_names_state_slots_for_short_requests_of_a_hybrid_model():
    from planner.core.scenario import Scenario, resolve
    from planner.core.specs import Deployment
    from planner.memory.plan import plan_memory

    dep = Deployment(num_gpus=8, tensor_parallel_size=8, max_model_len=32_768, max_num_seqs=4096)
    plan = plan_memory(
        resolve(Scenario(model="Qwen/Qwen3.5-397B-A17B", gpu="H200", deployment=dep, context_tokens=512))
    )
    assert plan.binding_limit == "state_slots"  # 512 tokens: one KV block each, three state pages each
    assert plan.to_dict()["binding_limit"] == "state_slots"
    assert [k["kind"] for k in plan.to_dict()["layer_kinds"]] == ["linear", "full"]


# ---- reading -----------------------------------------------------------------------------------------------------


def test_every_shipped_config_loads_with_its_layer_kinds():
    kinds = {p: {g.kind for g in get_model(p).layer_groups} for p in model_presets()}
    assert kinds["openai/gpt-oss-120b"] == {"full", "sliding"}
    assert kinds["Qwen/Qwen3.5-27B"] == {"full", "linear"}
    assert kinds["nvidia/Nemotron-H-56B-Base-8K"] == {"full", "mamba"}
    assert kinds["meta-llama/Llama-4-Maverick-17B-128E-Instruct"] == {"full", "chunked"}
    assert kinds["XiaomiMiMo/MiMo-V2-Flash"] == {"full", "sliding"}


def test_a_hybrid_config_missing_a_state_field_names_it():
    cfg = {
        "model_type": "qwen3_next",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
        "layer_types": ["linear_attention", "full_attention"],
    }
    with pytest.raises(InputError) as err:
        model_from_hf_config(cfg)
    assert err.value.field == "config.json: linear_num_key_heads"


def test_checkpoint_formats_per_tensor_group():
    oss = get_model("openai/gpt-oss-120b")
    assert oss.quantized_weights == "mxfp4" and oss.quantized_groups["attention"] == "bf16"
    assert get_weight_precision("mxfp4").bits_per_weight == 4 + 8 / 32  # E2M1 + E8M0 per 32
    assert get_weight_precision("nvfp4").bits_per_weight == 4 + 8 / 16  # E2M1 + E4M3 per 16 (+ FP32 per tensor)
    nemotron = get_model("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")  # hf_quant_config.json beside config
    assert (nemotron.quantized_weights, nemotron.kv_cache_quant) == ("fp8", "fp8")
    assert get_weight_precision("mxfp4").support_on("blackwell") == "native"
    assert get_weight_precision("mxfp4").support_on("hopper") == "weight-only"
    assert get_weight_precision("nvfp4").support_on("cdna3") == "unsupported"


def test_architecture_summary():
    assert lg.architecture_summary(get_model("Qwen/Qwen3.5-397B-A17B")).startswith(
        "MoE 512 experts, 10 active + 1 shared · 45 linear attention + 15 full attention of 60 layers"
    )
    assert "54 Mamba-2 + 10 full attention of 64 layers" in lg.architecture_summary(
        get_model("nvidia/Nemotron-H-56B-Base-8K")
    )


def test_sglang_state_pool_caps_max_running_requests():
    # SGLang (model_runner_kv_cache_mixin.py @ 001ccef0): 0.9 / 1.9 of the memory left to the FP32 state pool, the
    # rest to the 15 full-attention layers' KV; max_running_requests capped at state slots // 3 (radix cache on).
    m = get_model("Qwen/Qwen3.5-397B-A17B")
    rest = 40 * GIB
    state = 45 * ((12288 // 8) * 3 * 2 + 8 * 128 * 128 * 4)  # per request at TP 8: 24,007,680 B
    slots = int(rest * 0.9 / 1.9 // state)
    pool = lg.sglang_hybrid_pool(m, 2, rest, tp=8, context_len=262_144)
    assert pool.state_slots == slots == 847
    assert pool.kv_tokens == int((rest - slots * state) // (15 * 1024))
    assert pool.max_running_requests == slots // 3 == 282  # below SGLang's default of 2,875 from the KV tokens
    assert pool.binding_limit == "state_slots"
    assert lg.sglang_hybrid_pool(m, 2, rest, 8, 262_144, max_running_requests=64).binding_limit == "max_num_seqs"
