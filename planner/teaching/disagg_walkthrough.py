"""Walkthrough "When would you disaggregate prefill and decode?", on DistServe's own example.

Defaults are DistServe's Figure 1 (Zhong et al., OSDI'24, arXiv 2401.09670 §1): a 13B model (OPT-13B: 40 layers,
hidden 5,120, 16-bit KV: 2 × 40 × 5,120 × 2 = 819,200 B per token) on A100s, 512-token prompts and 64-token
answers; per GPU at the SLO, a prefill-only GPU serves 5.6 requests/s, a decode-only GPU 10, a GPU doing both 1.6.
The KV moves over one 400 Gb/s NIC (50 GB/s); the 0.25 s TTFT target is DistServe's chatbot SLO for OPT-13B.
Numbers come from planner.capacity.disagg (rate_matched) and the KV formula of planner.memory.sizes.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from planner.capacity.rate_match import rate_matched
from planner.core.scenario import Resolved
from planner.teaching.inputs import _f, split_context
from planner.teaching.steps import Step, num

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class DisaggInputs(BaseModel):
    """DistServe's Figure 1: a 13B model, 512-token prompts, 64-token answers, per-GPU goodput 5.6 / 10 / 1.6."""

    model_config = _FROZEN

    prompt_tokens: int = _f(512, "Prompt", "tokens")
    output_tokens: int = _f(64, "Output", "tokens")
    kv_bytes_per_token: float = _f(819_200, "KV bytes per token (all layers)", "B")
    link_gb_s: float = _f(50.0, "Link between the pools", "GB/s")
    link_latency_ms: float = _f(0.01, "Link latency per transfer", "ms", gt=None, ge=0)
    ttft_target_s: float = _f(0.25, "TTFT target", "s")
    target_rps: float = _f(10.0, "Traffic to serve", "req/s")
    prefill_rps_per_gpu: float = _f(5.6, "Prefill-only GPU at the SLO", "req/s")
    decode_rps_per_gpu: float = _f(10.0, "Decode-only GPU at the SLO", "req/s")
    colocated_rps_per_gpu: float = _f(1.6, "GPU doing both at the SLO", "req/s")


def disaggregation(i: DisaggInputs) -> list:
    """The steps: what moves, how long it takes against the TTFT target, the pool sizes, the goodput per GPU."""
    kv = i.prompt_tokens * i.kv_bytes_per_token
    transfer_s = kv / (i.link_gb_s * 1e9) + i.link_latency_ms / 1e3
    share = transfer_s / i.ttft_target_s
    m = rate_matched(i.target_rps, i.prefill_rps_per_gpu, i.decode_rps_per_gpu)
    colocated = math.ceil(i.target_rps / i.colocated_rps_per_gpu - 1e-9)
    verdict = (
        "the transfer alone breaks the TTFT target: never disaggregate over this link"
        if share >= 1
        else "small: the link is not the problem"
        if share < 0.1
        else "a real part of the TTFT budget"
    )
    return [
        Step(
            "1",
            "KV to move per request",
            "prompt tokens × KV bytes per token",
            f"{num(i.prompt_tokens)} × {num(i.kv_bytes_per_token)} B",
            kv / 1e6,
            "MB",
            1,
        ),
        Step(
            "2",
            "KV transfer time",
            "KV bytes / link bytes per s + latency",
            f"{kv / 1e6:,.1f} MB / {num(i.link_gb_s)} GB/s + {num(i.link_latency_ms)} ms",
            transfer_s * 1e3,
            "ms",
            2,
        ),
        Step(
            "3",
            "Share of the TTFT target",
            "transfer / TTFT target",
            f"{transfer_s * 1e3:,.2f} ms / {num(i.ttft_target_s * 1e3)} ms",
            share * 100,
            "%",
            1,
            verdict,
        ),
        Step(
            "4",
            "Prefill GPUs",
            "ceil(target / prefill-only rate)",
            f"ceil({num(i.target_rps)} / {num(i.prefill_rps_per_gpu)})",
            m.prefill_instances,
            "GPUs",
        ),
        Step(
            "5",
            "Decode GPUs",
            "ceil(target / decode-only rate)",
            f"ceil({num(i.target_rps)} / {num(i.decode_rps_per_gpu)})",
            m.decode_instances,
            "GPUs",
            note=f"ratio {m.prefill_instances}:{m.decode_instances}: long prompts need more prefill GPUs, "
            "long answers more decode GPUs",
        ),
        Step(
            "6",
            "Goodput per GPU, disaggregated",
            "target / (prefill GPUs + decode GPUs)",
            f"{num(i.target_rps)} / {m.gpus}",
            m.rps_per_gpu,
            "req/s",
            2,
        ),
        Step(
            "7",
            "GPUs doing both",
            "ceil(target / colocated rate)",
            f"ceil({num(i.target_rps)} / {num(i.colocated_rps_per_gpu)})",
            colocated,
            "GPUs",
        ),
        Step(
            "8",
            "Gain from disaggregating",
            "colocated GPUs / disaggregated GPUs",
            f"{colocated} / {m.gpus}",
            colocated / m.gpus,
            "×",
            2,
            "disaggregate when this is above 1 and step 3 is well below 100%: prefill interference is what the "
            "colocated GPU loses (DistServe: 2.1× per GPU); with chunked prefill and loose TPOT targets the gain "
            'often vanishes (vLLM: disaggregation "does not improve throughput")',
        ),
    ]


def fill_from_scenario(r: Resolved, base: DisaggInputs) -> dict:
    """The scenario's model KV bytes per token, its prompt/output split, and its GPU's NIC × sending GPUs."""
    from planner.memory import sizes as memory

    tp, m = r.deployment.tensor_parallel_size, r.model
    senders = tp if m.is_mla else min(tp, m.num_kv_heads)
    prompt, output = split_context(r.context_tokens, base.output_tokens)
    nic = r.gpu.scale_out_bandwidth_gb_s or 12.5
    return {
        "kv_bytes_per_token": memory.kv_bytes_per_token(m, r.kv_bytes),
        "prompt_tokens": prompt,
        "output_tokens": output,
        "link_gb_s": nic * senders,
    }
