"""Which collectives one step of a deployment runs, over which group of GPUs and which link (NVLink inside one
NVLink domain, the NIC beyond it). Placement as in planner.latency.parallel: TP fastest, then DP, then PP stage; the
MoE layers span TP × DP GPUs as MoE-TP × EP (MoE-TP fastest). No numpy: the memory command lists these too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.core.scenario import Resolved


def nvlink_domain(gpu) -> int:
    """GPUs that share NVLink: the rack-scale domain where listed (NVL72), else one node."""
    return gpu.nvlink_domain_gpus or gpu.gpus_per_node


@dataclass(frozen=True)
class Collective:
    """One communication a step runs: the operation, over which group of GPUs, on which link, how often."""

    op: str  # all-reduce, all-gather, reduce-scatter, all-to-all, send/recv
    group: str  # which ranks
    size: int  # GPUs in the group
    link: str  # NVLink or NIC
    per: str  # when it runs

    def to_dict(self) -> dict:
        return dict(op=self.op, group=self.group, size=self.size, link=self.link, per=self.per)


def collectives(r: Resolved) -> list[Collective]:
    """The collectives one step runs under the layout (module note), each with the link its group spans.

    Attention TP: all-reduce after attention and after each dense MLP. DP attention + MoE without EP: the DP
    ranks' tokens all-gathered before each MoE layer and reduce-scattered after (SGLang DP attention; vLLM's
    allgather_reducescatter backend). EP: all-to-all dispatch and combine (DeepEP). MoE-TP > 1 under EP: the
    expert slices' partial sums all-reduced. PP: activations sent to the next stage.
    """
    d, m = r.deployment, r.model
    domain = nvlink_domain(r.gpu)

    def link(size: int) -> str:
        return "NVLink" if size <= domain else "NIC"

    tp, dp, ep = d.tensor_parallel_size, d.data_parallel_size, d.expert_parallel_size
    moe_tp = d.moe_tensor_parallel_size
    out = []
    if tp > 1:
        out.append(Collective("all-reduce", "attention TP", tp, link(tp), "attention and dense MLP of every layer"))
    if m.is_moe and dp > 1 and ep == 1:
        for op in ("all-gather", "reduce-scatter"):
            out.append(Collective(op, "TP × DP (MoE)", tp * dp, link(tp * dp), "every MoE layer"))
    if m.is_moe and ep > 1:
        group = "EP (dispatch + combine)"
        if d.moe_a2a_backend == "deepep":  # planner.latency.expert_parallel
            group = f"EP (DeepEP {d.deepep_mode} dispatch + combine)"
        when = "every MoE layer" + (", two micro-batches overlapped" if d.enable_two_batch_overlap else "")
        out.append(Collective("all-to-all", group, ep, link(tp * dp), when))
        if moe_tp > 1:
            out.append(Collective("all-reduce", "MoE-TP", moe_tp, link(moe_tp), "every MoE layer"))
    if d.pipeline_parallel_size > 1:
        out.append(
            Collective(
                "send/recv",
                "PP stages",
                d.pipeline_parallel_size,
                link(d.gpus_per_replica),
                "every stage boundary",
            )
        )
    return out


# -- DeepEP's dispatch and combine (wide expert parallelism) -------------------------------------------------------
# deepseek-ai/DeepEP@0297fc80 docs/legacy.md "Performance", H800 (~160 GB/s NVLink) + one CX7 400 Gb/s NIC per GPU
# (~50 GB/s), DeepSeek-V3 shapes (7,168 hidden, top-8, FP8 dispatch, BF16 combine):
#   normal kernels (prefill): a token crosses the NIC once per node it reaches (its copies for that node are
#     forwarded over NVLink there); bottleneck RDMA bandwidth 43-58 GB/s at EP 16-64 (median 50.5 GB/s: the NIC's
#     line rate, DEEPEP_NORMAL_RDMA_FRACTION 1.0) and 153-158 GB/s over 160 GB/s NVLink intranode (0.97);
#   low-latency kernels (decode): every copy is its own RDMA write (no forwarding), 128 tokens per batch:
#     dispatch 77/118/155/173/192/194 us and combine 114/195/273/314/369/360 us at EP 8/16/32/64/128/256. Time minus
#     the remote copies' bytes at 50 GB/s leaves a fixed cost per kernel: dispatch 40-50 us (median 42 us over EP
#     16-256), combine 48-94 us (median 57 us): DEEPEP_LL_DISPATCH_S, DEEPEP_LL_COMBINE_S.
DEEPEP_NORMAL_RDMA_FRACTION = 1.0
DEEPEP_NVLINK_FRACTION = 0.97
DEEPEP_NORMAL_LATENCY_S = 10e-6  # per kernel, as planner.latency.parallel A2A_LATENCY_S
DEEPEP_LL_DISPATCH_S = 42e-6
DEEPEP_LL_COMBINE_S = 57e-6
# DeepEP's normal kernels run on dedicated SMs (Buffer.num_sms = 20 by default, deep_ep/buffer.py); under two-batch
# overlap SGLang gives its grouped GEMMs the rest (python/sglang/srt/batch_overlap/operations_strategy.py
# @dec8155f: deep_gemm_num_sms = total SMs − DeepEPConfig.num_sms). The low-latency kernels hold no SM while in flight.
DEEPEP_NORMAL_SMS = 20


def nodes_reached(num_nodes: int, top_k: int, num_groups: int = 0, topk_groups: int = 0) -> float:
    """Expected nodes one token's top-k copies land on (itself included).

    Group-limited routing with groups packed onto nodes (n_group a multiple of the nodes: DeepSeek-V3's 8 groups
    on 2, 4 or 8 nodes, as EPLB's hierarchical policy places them): a node of g = n_group / nodes groups is missed
    with probability C(n_group − g, topk_group) / C(n_group, topk_group). Otherwise k uniform picks:
    nodes × (1 − (1 − 1/nodes)^k)."""
    if num_nodes <= 1:
        return 1.0
    if num_groups and topk_groups and num_groups % num_nodes == 0:
        g = num_groups // num_nodes
        miss = math.comb(num_groups - g, topk_groups) / math.comb(num_groups, topk_groups)
        return num_nodes * (1.0 - miss)
    return num_nodes * (1.0 - (1.0 - 1.0 / num_nodes) ** top_k)


@dataclass(frozen=True)
class EPGeometry:
    """What DeepEP's time depends on: EP ranks, ranks per NVLink domain, bytes per token copy, the links."""

    ep: int
    ranks_per_domain: int  # G
    top_k: int
    dispatch_bytes: float  # one token copy, FP8 + scales (or BF16)
    combine_bytes: float  # one token copy back, BF16
    nvlink_bytes_per_s: float
    nic_bytes_per_s: float
    nodes_reached: float  # per token, its own node included

    @property
    def num_domains(self) -> int:
        return max(1, -(-self.ep // self.ranks_per_domain))


def deepep_normal_s(geo: EPGeometry, tokens) -> tuple:
    """(dispatch, combine) seconds of one MoE layer, normal kernels, `tokens` per rank: max of the NIC's share
    (one copy per remote node reached) and NVLink's (the copies delivered inside the node), + a kernel's latency."""
    remote_nodes = geo.nodes_reached * (geo.num_domains - 1) / geo.num_domains
    local_copies = geo.top_k * (geo.ranks_per_domain - 1) / geo.ranks_per_domain
    nic = geo.nic_bytes_per_s * DEEPEP_NORMAL_RDMA_FRACTION
    nvl = geo.nvlink_bytes_per_s * DEEPEP_NVLINK_FRACTION
    out = []
    for per_copy in (geo.dispatch_bytes, geo.combine_bytes):
        t_nic = tokens * remote_nodes * per_copy / nic
        t_nvl = tokens * local_copies * per_copy / nvl
        out.append(_max(t_nic, t_nvl) + DEEPEP_NORMAL_LATENCY_S)
    return tuple(out)


def deepep_low_latency_s(geo: EPGeometry, tokens) -> tuple:
    """(dispatch, combine) seconds of one MoE layer, low-latency kernels: every remote copy over the NIC, the
    copies for the own domain over NVLink, + the kernel's fixed cost (module constants)."""
    remote = geo.top_k * (geo.ep - geo.ranks_per_domain) / geo.ep
    local = geo.top_k * (geo.ranks_per_domain - 1) / geo.ep
    out = []
    for per_copy, fixed in ((geo.dispatch_bytes, DEEPEP_LL_DISPATCH_S), (geo.combine_bytes, DEEPEP_LL_COMBINE_S)):
        t_nic = tokens * remote * per_copy / geo.nic_bytes_per_s
        t_nvl = tokens * local * per_copy / (geo.nvlink_bytes_per_s * DEEPEP_NVLINK_FRACTION)
        out.append(_max(t_nic, t_nvl) + fixed)
    return tuple(out)


def _max(a, b):
    """max for floats and numpy arrays alike (no numpy import: the memory command lists collectives)."""
    if hasattr(a, "shape") or hasattr(b, "shape"):
        return (a > b) * a + (a <= b) * b
    return a if a > b else b
