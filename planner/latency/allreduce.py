"""One tensor-parallel all-reduce under the engine's algorithm (data/engines.yaml `allreduce`).

All-reduce (engines.md §5, vLLM csrc/custom_all_reduce.cuh): with `custom`, TP 2 (any link) or a fully connected link
(NVLink / NVSwitch / Infinity Fabric) below 8 MiB runs one-shot (TP ≤ 4 below 512 KiB, TP ≤ 8 below 256 KiB, TP 2
always): latency + (TP − 1) × bytes / link; else two-shot: 2 × latency + 2 (TP − 1)/TP × bytes / link. The
thresholds exist to pick the faster kernel, so the model takes the cheaper of the two (continuous and monotone in
bytes); above 8 MiB NCCL's pipelined ring costs about a two-shot. Otherwise (PCIe beyond TP 2, `nccl` engines):
NCCL ring, 2 (TP − 1) hops of latency / 2 + 2 (TP − 1)/TP × bytes / link. The hop latency (half a
one-shot) follows vLLM PR #24532 (H100 TP4, 0.5 MB: custom one-shot 10 µs, NCCL 21 µs).
"""

from __future__ import annotations

MIB = 2**20
CUSTOM_AR_MAX_BYTES = 8 * MIB
FULLY_CONNECTED = ("nvlink", "infinity fabric", "nvswitch", "xgmi")


def fully_connected(interconnect: str) -> bool:
    return any(k in (interconnect or "").lower() for k in FULLY_CONNECTED)


def allreduce_s(algorithm: str, tp: int, nbytes, latency_s: float, link_bytes_per_s: float, interconnect: str):
    """Time of one all-reduce of `nbytes` (scalar or numpy array) across `tp` GPUs (see the module note)."""
    import numpy as np

    if tp <= 1 or algorithm == "none":
        return np.zeros_like(np.asarray(nbytes, dtype=float)) if np.ndim(nbytes) else 0.0
    b = np.asarray(nbytes, dtype=float)
    ring = 2 * (tp - 1) * latency_s / 2 + 2 * (tp - 1) / tp * b / link_bytes_per_s
    if algorithm != "custom" or not (tp == 2 or (fully_connected(interconnect) and tp in (4, 6, 8))):
        out = ring
    else:  # the engine's thresholds pick the faster kernel: model that choice as the minimum (monotone in bytes)
        one = latency_s + (tp - 1) * b / link_bytes_per_s
        two = 2 * latency_s + 2 * (tp - 1) / tp * b / link_bytes_per_s  # also NCCL's pipelined ring above 8 MiB
        out = np.where(b >= CUSTOM_AR_MAX_BYTES, two, np.minimum(one, two))
    return float(out) if np.ndim(out) == 0 else out
