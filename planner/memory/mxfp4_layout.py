"""MXFP4 experts as vLLM lays them out in GPU memory: padded to its MoE kernel's tile.

vLLM's Mxfp4MoEMethod.create_weights (vllm/model_executor/layers/quantization/mxfp4.py @007d5005) allocates
w13 [E, 2 × I', H' / 2] and w2 [E, H', I' / 2] uint8 with E8M0 scales per 32 and BF16 biases, where I' is the
expert width per MoE-TP rank and H' the hidden size after padding:
    Marlin (GPUs without FP4 tensor cores: Hopper, Ada, Ampere; "n % 256 == 0 and k % 128 == 0"):
        I' = round_up(I / MoE-TP, 128), H' = round_up(H, 256)
Marlin's repack (marlin_utils_fp4.prepare_moe_fp4_layer_for_marlin) keeps those bytes (FP4 packed, E8M0 scales).
gpt-oss-120b (H = I = 2,880): I' = 2,944, H' = 3,072, so its experts take 1.0904 × their checkpoint bytes:
56.80 → 61.93 GiB, and vLLM on an H100 logs 'Model loading took 65.9651 GiB' (vllm-project/vllm#23278) against
65.84 predicted. Other backends (FlashInfer on Blackwell, Triton kernels, ROCm) and other engines are not
modelled here (factor 1): no load size was measured for them.
"""

from __future__ import annotations

from planner.core.model_spec import ModelSpec
from planner.core.precision import WeightPrecision

MARLIN_FAMILIES = ("hopper", "ada", "ampere")  # vLLM logs "leveraging the Marlin kernel" on these
MARLIN_K_TILE, MARLIN_N_TILE = 128, 256  # the expert width (k of down_proj), the hidden size (n of down_proj)


def round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def expert_padding_factor(model: ModelSpec, precision: WeightPrecision, engine: str, family: str, moe_tp: int) -> float:
    """Bytes vLLM allocates for the MXFP4 routed experts / their checkpoint bytes: (I' × H') / (I / MoE-TP × H)."""
    if engine != "vllm" or precision.id != "mxfp4" or not model.is_moe or family not in MARLIN_FAMILIES:
        return 1.0
    width = model.moe_intermediate_size // moe_tp
    hidden = model.hidden_size
    return round_up(width, MARLIN_K_TILE) * round_up(hidden, MARLIN_N_TILE) / (width * hidden)
