"""Which collectives one step of a deployment runs, over which group of GPUs and which link (NVLink inside one
NVLink domain, the NIC beyond it). Placement as in planner.latency.parallel: TP fastest, then DP, then PP stage; the
MoE layers span TP × DP GPUs as MoE-TP × EP (MoE-TP fastest). No numpy: the memory command lists these too.
"""

from __future__ import annotations

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
        out.append(Collective("all-to-all", "EP (dispatch + combine)", ep, link(tp * dp), "every MoE layer"))
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
