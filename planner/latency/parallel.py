"""Step-time terms of parallelism beyond one NVLink tensor-parallel group: expert all-to-all, expert load
imbalance, pipeline stages and tensor parallelism across nodes. PerfModel (planner.latency.perf_model) times a
step of one TP group; `ParallelTerms` adds what DP attention, EP, PP and multi-node placement change.

Placement: an instance's GPUs are numbered TP fastest, then DP, then PP stage, and fill NVLink domains of
`nvlink_domain_gpus` (data/gpus.yaml; None = `gpus_per_node`; GB200/GB300 NVL72 = 72) in that order, as vLLM and
SGLang launch them; a group that fits inside one domain talks over NVLink, a larger one over the NIC.
MoE layouts: the MoE layers span TP × DP GPUs as MoE-TP × EP (MoE-TP fastest); planner.latency.collectives lists
what each step runs over which link.

Expert all-to-all (EP > 1; DeepEP's dispatch and combine, deepseek-ai/DeepEP@dd758caf docs/legacy.md):
    per MoE layer, each GPU sends its T / TP tokens to the ranks holding their top-k experts and gets them back:
    dispatch bytes = T/TP × k × H × (1 B + 4 B / 128 FP8 scales, or 2 B at BF16)   DeepSeek-V3: 7,392 B per copy
    combine bytes  = T/TP × k × H × 2 B                                            14,336 B per copy
    a copy stays on the GPU with probability 1/EP, crosses NVLink with (G − 1)/EP, the NIC with (EP − G)/EP,
    where G = EP ranks per node; time = max(NVLink bytes / NVLink B/s, NIC bytes / NIC B/s) / A2A_EFFICIENCY
    + 2 × A2A_LATENCY_S, for each of the MoE layers.
Expert load imbalance (EP > 1): the busiest EP rank sets the pace of the grouped GEMMs.
    imbalance = placement share × EP × (1 + sqrt(2 ln EP / m)),  m = DP × T × k / EP copies per rank;
    the square root is the expected maximum of EP near-Poisson counts (uniform routing); `expert_skew` s puts
    Zipf(s) popularity on experts placed contiguously (vLLM's default, no EPLB): the first rank's share.
    extra time = (imbalance − 1) × expert compute time (added outright: conservative when memory-bound), the
    expert time being PerfModel's own (expert_compute_s: the grouped GEMMs at their rows of DP × T tokens).
MoE weight reads (DP > 1): each GPU holds 1/(TP × DP) of every MoE layer and its experts see the tokens of all
    DP ranks: bytes = E × expert bytes / (TP × DP) × (1 − (1 − k/E)^(DP × T)) instead of PerfModel's TP-group sum.
Pipeline (PP > 1): a token crosses PP − 1 stage boundaries, each T × H × 2 B over NVLink or the NIC + latency.
    Step latency is the sum of the stages (PerfModel's full-model time on TP GPUs). Engines keep PP batches in
    flight to fill the pipeline: vLLM's EngineCore schedules up to `max_concurrent_batches` = PP engine
    iterations before it waits for the first (vllm-project/vllm@c5c40ab2 vllm/v1/executor/multiproc_executor.py
    `max_concurrent_batches` returns pipeline_parallel_size; vllm/v1/engine/core.py step_with_batch_queue), each
    from requests not already in flight and with its own max_num_batched_tokens;
    TensorRT-LLM's executor runs PP micro-batches likewise. What the simulator (planner.sim.serving DecodeRunCost)
    prices: the running requests split into m = min(PP, sequences) batches in flight, each of 1/m of the tokens,
    sequences and context; every request advances one token per round, and a round lasts one in-flight batch's
    full pass × `stage_factor` (the slowest stage sets the pace when the layers do not split evenly: PP ×
    ceil(L / PP) / L). So at saturation a PP replica delivers m × one batch's tokens per full pass: close to PP ×
    a single stage group's throughput (the batch of each is 1/m as large, so weights are read m times a round),
    less the hand-offs; with one sequence (m = 1) it is the plain sum of stages. A batch split into m
    micro-batches idles a fraction (PP − 1) / (m + PP − 1) of the time in a GPipe pass (Huang et al. 2019, arXiv
    1811.06965): `pipeline_bubble_fraction`, the layouts table's figure for a single pass.
TP across nodes: the all-reduces' ring runs at the slowest link, the NIC: communication × NVLink B/s / NIC B/s;
    flagged as slow.
Left out: overlap of all-to-all with compute (two-batch overlap, SGLang --enable-two-batch-overlap), EPLB's
redundant experts, DeepEP's node-limited routing (≤ 4 nodes per token), NIC congestion between tenants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from planner.core.scenario import Resolved
from planner.latency.collectives import EPGeometry, nodes_reached, nvlink_domain
from planner.latency.expert_parallel import WideEP, placement_imbalance, two_batch_step_s

A2A_EFFICIENCY = 0.9  # DeepEP normal kernels: 153-158 GB/s over H800's ~160 GB/s NVLink (docs/legacy.md)
A2A_LATENCY_S = 10e-6  # per collective; aiconfigurator systems/h200_sxm.yaml p2p_latency 10 us
P2P_LATENCY_S = 10e-6  # one pipeline hand-off (same source)
DEFAULT_SCALE_OUT_BYTES_PER_S = 12.5e9  # 100 Gb/s Ethernet where data/gpus.yaml lists no per-GPU NIC
ACT_BYTES = 2


def pipeline_bubble_fraction(pp: int, micro_batches: int) -> float:
    """Idle share of a pipeline: (PP − 1) / (m + PP − 1) (GPipe)."""
    return (pp - 1) / (micro_batches + pp - 1)


def stage_factor(pp: int, num_layers: int) -> float:
    """The slowest pipeline stage's share of the layers × PP: PP × ceil(L / PP) / L (1.0 when they split evenly)."""
    if pp <= 1 or num_layers <= 0:
        return 1.0
    return pp * math.ceil(num_layers / pp) / num_layers


def batches_in_flight(pp: int, num_seqs):
    """m: engine iterations in flight under PP (module note), min(PP, sequences), at least 1 (scalar or array)."""
    if isinstance(num_seqs, np.ndarray):
        return np.clip(num_seqs, 1, pp)
    return min(pp, max(num_seqs, 1))


def zipf_rank_share(num_experts: int, ep: int, skew: float) -> float:
    """Routing share of the busiest EP rank when expert i has popularity ∝ 1/(i+1)^skew, placed contiguously."""
    weights = 1.0 / np.arange(1, num_experts + 1) ** skew
    per_rank = num_experts // ep
    return float(weights[:per_rank].sum() / weights.sum())


def load_imbalance(num_experts: int, top_k: int, ep: int, tokens, skew: float = 0.0, placement: float | None = None):
    """Busiest-rank load over the mean: placement share × EP × (1 + sqrt(2 ln EP / copies per rank)); `placement`
    given (planner.latency.expert_parallel: contiguous or EPLB's) replaces the contiguous Zipf share."""
    if ep <= 1:
        return 1.0
    copies = _max(tokens * top_k / ep, 1.0)
    if placement is None:
        placement = zipf_rank_share(num_experts, ep, skew) * ep if skew else 1.0
    return placement * (1.0 + (2.0 * math.log(ep) / copies) ** 0.5)


def _max(a, b):
    """max for floats (the simulator's fast path) and numpy arrays alike."""
    return np.maximum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else max(a, b)


def dispatch_bytes_per_copy(hidden: int, fp8: bool) -> float:
    """One token to one expert rank: FP8 values + one fp32 scale per 128 (DeepEP), or BF16."""
    return hidden * (1.0 + 4.0 / 128) if fp8 else hidden * 2.0


@dataclass(frozen=True)
class Links:
    """Where an instance's traffic goes: bytes/s of NVLink and of the NIC, and which groups leave the node."""

    nvlink_bytes_per_s: float
    nic_bytes_per_s: float
    nic_listed: bool  # False: no per-GPU NIC in data/gpus.yaml, DEFAULT_SCALE_OUT_BYTES_PER_S assumed
    gpus_per_node: int
    num_nodes: int
    tp_crosses_nodes: bool
    ep_ranks_per_node: int  # G: EP ranks sharing one node
    pp_crosses_nodes: bool


def links_for(r: Resolved) -> Links:
    d, g = r.deployment, r.gpu
    node = nvlink_domain(g)
    nic = (g.scale_out_bandwidth_gb_s or 0) * 1e9
    moe_group = d.tensor_parallel_size * d.data_parallel_size
    return Links(
        g.interconnect_bytes_per_s,
        nic or DEFAULT_SCALE_OUT_BYTES_PER_S,
        bool(nic),
        node,
        math.ceil(d.gpus_per_replica / node),
        d.tensor_parallel_size > node,
        max(1, min(moe_group, node) // d.moe_tensor_parallel_size),  # EP ranks per domain (MoE-TP fastest)
        d.pipeline_parallel_size > 1 and d.gpus_per_replica > node,
    )


@dataclass(frozen=True)
class ParallelTerms:
    """Extra seconds per step for a deployment (module note); all zero for a single TP group on one node."""

    links: Links
    ep: int
    dp: int
    tp: int
    pp: int
    moe_layers: int
    hidden: int
    top_k: int
    num_experts: int
    dispatch_bytes: float
    expert_bytes_full: float  # one routed expert over all MoE layers, bytes
    expert_flops_per_token_s: float  # expert seconds per token at full efficiency (without `pm`; else expert_s)
    allreduce_s_per_token: float  # PerfModel's per-token all-reduce seconds (NVLink)
    skew: float = 0.0
    wide: WideEP | None = None  # DeepEP / two-batch overlap (planner.latency.expert_parallel); None = neither
    placement: float = 1.0  # busiest EP rank's load over the mean from the expert placement (EPLB or contiguous)
    pm: object = field(default=None, repr=False, compare=False)  # the PerfModel (two-batch overlap re-times halves)

    def all_to_all_s(self, tokens, seqs=None):
        """Dispatch + combine over all MoE layers for `tokens` new tokens of one DP rank (module note)."""
        if self.ep <= 1:
            return 0.0
        if self.wide is not None and self.wide.backend == "deepep":
            return self.wide.all_to_all_s(tokens / self.tp, tokens if seqs is None else seqs)
        lk = self.links
        copies = tokens / self.tp * self.top_k
        per_copy = self.dispatch_bytes + self.hidden * ACT_BYTES
        nvlink = copies * per_copy * (lk.ep_ranks_per_node - 1) / self.ep / lk.nvlink_bytes_per_s
        nic = copies * per_copy * (self.ep - lk.ep_ranks_per_node) / self.ep / lk.nic_bytes_per_s
        return self.moe_layers * (_max(nvlink, nic) / A2A_EFFICIENCY + 2 * A2A_LATENCY_S)

    def imbalance_s(self, tokens):
        """Extra expert compute on the busiest EP rank: (imbalance − 1) × expert compute seconds."""
        if self.ep <= 1:
            return 0.0
        f = load_imbalance(self.num_experts, self.top_k, self.ep, tokens * self.dp, self.skew, self.placement)
        return (f - 1.0) * self.expert_s(tokens)

    def expert_s(self, tokens):
        """The routed experts' compute seconds for `tokens` of one rank: PerfModel's own expression (its grouped
        GEMMs' efficiency at their rows) when it is at hand, else the per-token constant at full efficiency."""
        if self.pm is not None:
            return self.pm.expert_compute_s(tokens)
        return self.expert_flops_per_token_s * tokens

    @property
    def two_batch_overlap(self) -> bool:
        return self.wide is not None and self.wide.two_batch_overlap and self.ep > 1 and self.pm is not None

    def two_batch_delta_s(self, tokens, seqs, kv, pairs):
        """Two-batch overlap's step (planner.latency.expert_parallel) minus the sequential step without EP terms."""
        pm, mn = self.pm, (np.minimum if isinstance(tokens, np.ndarray) else min)
        mx = np.maximum if isinstance(tokens, np.ndarray) else max

        def base(n, s, k, p):
            wt, kv_s, act, cmp, fixed, *_ = pm._terms(n, s, k, p, mn)
            return mx(wt + kv_s + act, cmp) + pm.comm_s(n) + fixed

        half = base(tokens / 2, seqs / 2, kv / 2, pairs / 2)
        f = load_imbalance(self.num_experts, self.top_k, self.ep, tokens / 2 * self.dp, self.skew, self.placement)
        half_expert = self.expert_s(tokens / 2)  # the same expert seconds `half` holds (no double count)
        step = two_batch_step_s(half + (f - 1.0) * half_expert, f * half_expert, self.wide, tokens / self.tp, seqs)
        return step - base(tokens, seqs, kv, pairs)

    def pipeline_s(self, tokens):
        """PP − 1 activation hand-offs of tokens × H × 2 B."""
        if self.pp <= 1:
            return 0.0
        bw = self.links.nic_bytes_per_s if self.links.pp_crosses_nodes else self.links.nvlink_bytes_per_s
        return (self.pp - 1) * (tokens * self.hidden * ACT_BYTES / bw + P2P_LATENCY_S)

    def cross_node_tp_s(self, tokens):
        """All-reduces at NIC instead of NVLink speed when TP spans nodes: the extra over PerfModel's figure."""
        if not self.links.tp_crosses_nodes:
            return 0.0
        slowdown = self.links.nvlink_bytes_per_s / self.links.nic_bytes_per_s - 1.0
        return self.allreduce_s_per_token * tokens * slowdown

    def expert_bytes_delta(self, tokens):
        """True MoE weight bytes per GPU under DP (module note) minus PerfModel's TP-group figure."""
        if self.dp <= 1 or not self.num_experts:
            return 0.0
        t = tokens
        miss = 1.0 - self.top_k / self.num_experts
        ours = self.num_experts * self.expert_bytes_full / (self.tp * self.dp) * (1.0 - miss ** (self.dp * t))
        theirs = self.num_experts * self.expert_bytes_full / self.tp * (1.0 - miss**t)
        return ours - theirs

    @property
    def active(self) -> bool:
        return self.ep > 1 or self.pp > 1 or self.links.tp_crosses_nodes

    def extra_s(self, tokens, seqs=None, kv=None, pairs=None):
        """All communication and imbalance terms for one step of `tokens` new tokens (per DP rank); under two-batch
        overlap (the step's sequences, KV reads and attention pairs given) the overlapped step's excess instead."""
        if not self.active:
            return 0.0
        rest = self.pipeline_s(tokens) + self.cross_node_tp_s(tokens)
        if seqs is not None and self.two_batch_overlap:
            return self.two_batch_delta_s(tokens, seqs, kv, pairs) + rest
        return self.all_to_all_s(tokens, seqs) + self.imbalance_s(tokens) + rest

    def breakdown(self, tokens: float) -> dict[str, float]:
        return {
            "all_to_all_s": float(self.all_to_all_s(tokens)),
            "imbalance_s": float(self.imbalance_s(tokens)),
            "pipeline_s": float(self.pipeline_s(tokens)),
            "cross_node_tp_s": float(self.cross_node_tp_s(tokens)),
        }

    @property
    def warnings(self) -> list[str]:
        lk, out = self.links, []
        if lk.tp_crosses_nodes:
            out.append(
                f"Slow: TP={self.tp} spans {lk.num_nodes} nodes of {lk.gpus_per_node} GPUs; its all-reduces "
                f"run over the NIC at {lk.nic_bytes_per_s / 1e9:g} GB/s instead of NVLink at "
                f"{lk.nvlink_bytes_per_s / 1e9:g} GB/s. Keep TP within a node; use PP or EP across nodes"
            )
        if lk.num_nodes > 1 and not lk.nic_listed:
            out.append(
                f"No per-GPU NIC listed for this GPU: assuming {DEFAULT_SCALE_OUT_BYTES_PER_S / 1e9:g} GB/s "
                "(100 Gb/s Ethernet) between nodes"
            )
        return out


def parallel_terms(r: Resolved, pm, skew: float = 0.0) -> ParallelTerms:
    """The terms for a resolved scenario, reading PerfModel's precomputed per-token constants `pm`."""
    m, d = r.model, r.deployment
    moe_layers = (m.num_layers - m.num_dense_layers) if m.is_moe else 0
    tp = d.tensor_parallel_size
    expert_full = pm.expert_bytes * tp  # PerfModel keeps one expert's bytes / TP
    links = links_for(r)
    dispatch = dispatch_bytes_per_copy(m.hidden_size, r.weights.compute_dtype == "fp8")
    return ParallelTerms(
        links=links,
        ep=d.expert_parallel_size,
        dp=d.data_parallel_size,
        tp=tp,
        pp=d.pipeline_parallel_size,
        moe_layers=moe_layers,
        hidden=m.hidden_size,
        top_k=m.num_experts_per_tok,
        num_experts=m.num_experts,
        dispatch_bytes=dispatch,
        expert_bytes_full=expert_full,
        expert_flops_per_token_s=pm.expert_flops_per_token / pm.expert_flops_per_s,
        allreduce_s_per_token=pm.comm_s_per_token,
        skew=skew,
        wide=wide_ep(r, links, dispatch, moe_layers) if d.expert_parallel_size > 1 else None,
        placement=placement_imbalance(
            m.num_experts,
            d.expert_parallel_size,
            skew,
            d.ep_num_redundant_experts,
            d.enable_eplb or d.ep_num_redundant_experts > 0,
        ),  # fmt: skip
        pm=pm,
    )


def wide_ep(r: Resolved, links: Links, dispatch_bytes: float, moe_layers: int) -> WideEP:
    """The instance's all-to-all backend, DeepEP mode and two-batch overlap (planner.latency.expert_parallel)."""
    d, m = r.deployment, r.model
    ep = d.expert_parallel_size
    g = min(links.ep_ranks_per_node, ep)
    geometry = EPGeometry(
        ep=ep,
        ranks_per_domain=g,
        top_k=m.num_experts_per_tok,
        dispatch_bytes=dispatch_bytes,
        combine_bytes=m.hidden_size * ACT_BYTES,
        nvlink_bytes_per_s=links.nvlink_bytes_per_s,
        nic_bytes_per_s=links.nic_bytes_per_s,
        nodes_reached=nodes_reached(-(-ep // g), m.num_experts_per_tok, m.num_expert_groups, m.topk_expert_groups),
    )
    return WideEP(geometry, d.moe_a2a_backend, d.deepep_mode, d.enable_two_batch_overlap, moe_layers,
                  r.gpu.sm_count or 0)  # fmt: skip
