"""What a part reaches before any engine constant: its datasheet scaled by what microbenchmarks measured on it
(data/gpus.yaml achieved_*; the vendor median where it has none), and the engine's kernel path on it
(data/engines.yaml: FP16 accumulation on GeForce parts, no wgmma kernels on Hopper). planner.latency.perf_model
builds its ceilings on it; `notes` say it with every prediction."""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.gpu_spec import GPUSpec
from planner.core.scenario import Resolved

# Ampere-style mma.sync kernels on Hopper reach about 35/75 of what its warpgroup MMA (wgmma) kernels reach:
# FlashAttention-2 "only 35% utilization on the H100" vs FlashAttention-3 "up to 740 TFLOPs/s (75% utilization)"
# (Shah et al., FlashAttention-3, arXiv 2407.08608, abstract); Azure's FA2 runs: H100 33%, A100 58% of dense peak.
HOPPER_MMA_SYNC_FRACTION = 35 / 75


@dataclass(frozen=True)
class HardwareBasis:
    """What the model takes the part to reach before any engine constant (shown with every prediction)."""

    bandwidth_fraction: float  # stream bandwidth / datasheet
    bandwidth_measured: bool  # False: the vendor median (estimated)
    matmul_fraction: float  # large-GEMM FLOP/s / datasheet, in the compute dtype
    matmul_measured: bool
    attention_fraction: float  # the 16-bit figure (attention runs in 16 bits)
    kernel_fraction: float  # < 1 where the engine's kernels cannot use the part's fastest tensor-core path
    datasheet_flops: float  # dense FLOP/s of the compute dtype on the engine's path (GeForce FP16 accumulate: 2x)
    notes: tuple[str, ...] = ()


def hardware_basis(r: Resolved, compute_dtype: str, eng) -> HardwareBasis:
    """The part's measured fractions of its datasheet, and the engine's kernel path on it (data/engines.yaml)."""
    peak, _ = compute_peak_flops(r)
    acc16 = eng is not None and eng.fp16_accumulate and r.gpu.tflops_fp16_acc16 and compute_dtype in ("fp16", "bf16")
    if acc16:
        peak = r.gpu.tflops_fp16_acc16 * 1e12  # GeForce: FP16-accumulate tensor math runs at twice the rate
    bw, bw_measured = r.gpu.achieved_bandwidth()
    mm, mm_measured = r.gpu.achieved_matmul(compute_dtype)
    attn, _ = r.gpu.achieved_matmul("bf16")
    notes = [
        f"{r.gpu.id} reaches {bw:.0%} of its datasheet bandwidth ("
        + ("measured" if bw_measured else f"estimated: median of measured {r.gpu.vendor} parts")
        + f") and {mm:.0%} of its {compute_dtype} FLOP/s ("
        + (
            "measured"
            if compute_dtype in r.gpu.achieved_matmul_fraction
            else "its 16-bit measurement"
            if mm_measured
            else "estimated"
        )
        + ")"
    ]
    kernel = 1.0
    if eng is not None and not eng.hopper_wgmma and r.gpu.family == "hopper":
        kernel = HOPPER_MMA_SYNC_FRACTION
        notes.append(f"{eng.label} kernels use mma.sync, not Hopper's wgmma: {kernel:.2f} of the tensor-core rate")
    if acc16:
        notes.append(f"{eng.label} accumulates 16-bit GEMMs in FP16: {r.gpu.tflops_fp16_acc16:g} TFLOPS on this part")
    return HardwareBasis(bw, bw_measured, mm, mm_measured, attn, kernel, peak, tuple(notes))


def fp4_native(gpu: GPUSpec, weights_id: str) -> bool:
    """Whether `gpu` multiplies this FP4 format on its tensor cores (else the weights are dequantised: weight-only).

    NVIDIA Blackwell (sm_100/sm_103/sm_120) runs both NVFP4 and MXFP4 block-scaled MMA; AMD CDNA4 runs the OCP MX
    formats only (MXFP4/MXFP6, no E4M3-scaled 16-blocks): the AMD CDNA 4 ISA lists V_MFMA_SCALE_F32_*_F8F6F4 with
    E8M0 scales. A part without tflops_fp4 (Hopper, Ada, CDNA3) has no FP4 datapath at all.
    """
    if not gpu.tflops_fp4:
        return False
    return not (gpu.vendor == "amd" and weights_id == "nvfp4")


def compute_peak_flops(r: Resolved) -> tuple[float, str]:
    """(dense FLOP/s for the weights' compute dtype, dtype used); falls back to 16-bit where the GPU lacks it.

    FP4 checkpoints run at the part's tflops_fp4 where it has that format natively (fp4_native), otherwise
    weight-only: dequantised in the kernel to 16-bit math (vLLM's Marlin/triton MXFP4 and NVFP4 paths on Hopper)."""
    dtypes = (r.weights.compute_dtype, "bf16", "fp16")
    if r.weights.compute_dtype == "fp4" and not fp4_native(r.gpu, r.weights.id):
        dtypes = ("bf16", "fp16")
    for dtype in dtypes:
        peak = r.gpu.peak_flops(dtype)
        if peak:
            return peak, dtype
    raise ValueError(f"{r.gpu.id} lists no 16-bit FLOP/s")
