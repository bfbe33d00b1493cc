"""Tables the Disaggregation & parallelism page draws: parallel layouts of one GPU count side by side, and the
prefill:decode instance ratio as prompt and output lengths change. Pure functions of their inputs.

Layouts of N GPUs (vLLM names): TP N; TP t × DP N/t with expert parallelism (EP = N) for MoE models; TP N/2 × PP 2.
Each row: weights and KV per GPU, the requests of max_model_len the instance holds (deployment_max_concurrency),
and one decode step with `batch` sequences per DP rank (PerfModel + planner.latency.parallel), so a row also says
how many tokens per second the whole instance produces: batch × DP × PP / step (PP: PP batches in flight, each
taking the full pass; the bubble of planner.latency.parallel.pipeline_bubble_fraction when there are fewer).

Ratio: prefill instances per decode instance when both pools run full = decode rate per instance / prefill rate
per instance (planner.capacity.disagg_pools), for prompts × outputs on the scenario's shape.
"""

from __future__ import annotations

import math

from planner.capacity.disagg_pools import decode_capacity, kv_link, pool_replica, prefill_capacity
from planner.capacity.instance_shapes import NO_SHAPE, instance_shapes
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.workload import SLO, TrafficSpec
from planner.latency.parallel import parallel_terms
from planner.latency.perf_model import PerfModel
from planner.memory.plan import plan_memory


def layout_options(num_gpus: int, is_moe: bool) -> list[dict]:
    """The layouts of `num_gpus` GPUs worth comparing (module note)."""
    out = [dict(tensor_parallel_size=num_gpus)]
    if is_moe and num_gpus > 1:
        out += [
            dict(tensor_parallel_size=t, data_parallel_size=num_gpus // t, enable_expert_parallel=True)
            for t in (1, 2, 4, 8)
            if t < num_gpus and num_gpus % t == 0
        ]
    if num_gpus % 2 == 0 and num_gpus > 1:
        out.append(dict(tensor_parallel_size=num_gpus // 2, pipeline_parallel_size=2))
    return out


def layout_label(d) -> str:
    parts = [f"TP {d.tensor_parallel_size}"]
    if d.data_parallel_size > 1:
        parts.append(f"DP {d.data_parallel_size}")
    if d.enable_expert_parallel:
        parts.append(f"EP {d.expert_parallel_size}")
        if d.moe_tensor_parallel_size > 1:
            parts[-1] += f" (MoE-TP {d.moe_tensor_parallel_size})"
    if d.pipeline_parallel_size > 1:
        parts.append(f"PP {d.pipeline_parallel_size}")
    return " × ".join(parts[:2]) + "".join(f" + {p}" for p in parts[2:])


def layout_rows(s: Scenario, num_gpus: int, batch: int, context: int, skew: float = 0.0) -> list[dict]:
    """One row per layout of `num_gpus` (module note); layouts vLLM rejects are listed with the reason."""
    base = s.deployment
    rows = []
    for layout in layout_options(num_gpus, resolve(s).model.is_moe):
        fields = {
            "pipeline_parallel_size": 1,
            "data_parallel_size": 1,
            "enable_expert_parallel": False,
            "ep_size": None,
            **layout,
        }
        dep = base.model_copy(update=fields)
        dep = dep.model_copy(update={"num_gpus": dep.gpus_per_replica})
        label = layout_label(dep)
        try:
            r = resolve(s.model_copy(update={"deployment": dep}))
        except InputError as err:
            rows.append({"layout": label, "fits": False, "note": err.message})
            continue
        plan = plan_memory(r)
        pm = PerfModel(r)
        terms = parallel_terms(r, pm, skew)
        pm.parallel = terms  # the skew knob: the page's what-if, not the scenario's default
        step = pm.decode(batch, context)
        rows.append(
            {
                "layout": label,
                "fits": plan.fits,
                "gpus": dep.gpus_per_replica,
                "weights_per_gpu_gb": plan.weight_bytes_per_gpu / 1e9,
                "kv_bytes_per_token_per_gpu": plan.kv_bytes_per_token_per_gpu,
                "max_concurrency": plan.deployment_max_concurrency,
                "step_ms": float(step.total_s) * 1e3,
                # PP keeps PP batches in flight (vLLM's virtual engines); DP ranks each run their own batch
                "tokens_per_s": batch * dep.data_parallel_size * dep.pipeline_parallel_size / float(step.total_s),
                **{k.removesuffix("_s") + "_ms": v * 1e3 for k, v in terms.breakdown(batch).items()},
                "note": "; ".join(plan.warnings + tuple(terms.warnings)),
            }
        )
    return rows


def ratio_rows(
    s: Scenario,
    prompts: list[int],
    outputs: list[int],
    slo: SLO,
    link: str = "nic",
    num_requests: int = 200,
    seed: int = 0,
) -> list[dict]:
    """Prefill:decode instance ratio and per-instance rates for each (prompt, output) pair, fixed lengths, on the
    scenario's own instance shape when vLLM can start it, else the smallest TP that fits."""
    shapes = instance_shapes(s)
    if not shapes:
        raise InputError("model", NO_SHAPE)
    own = s.deployment
    r = next(
        (
            x
            for x in shapes
            if x.deployment.gpus_per_replica == own.gpus_per_replica
            and x.deployment.tensor_parallel_size == own.tensor_parallel_size
        ),
        shapes[0],
    )
    lk = kv_link(r, link)
    rows = []
    max_len = r.max_model_len
    for p in [p for p in prompts if p + min(outputs) <= max_len]:  # longer requests cannot be served at all
        traffic = TrafficSpec(
            profile="custom", prompt=f"fixed:{p}", output="fixed:1", num_requests=num_requests, seed=seed
        )
        replica = pool_replica(r, traffic)
        pre = prefill_capacity(replica, traffic, slo, lk, rel_tol=0.05)
        for o in [o for o in outputs if p + o <= max_len]:
            dec = decode_capacity(replica, p, o, slo)
            ratio = (
                dec.max_rate_per_instance / pre.max_rate_per_instance
                if pre.max_rate_per_instance > 0 and dec.max_rate_per_instance > 0
                else math.nan
            )
            rows.append(
                {
                    "prompt_tokens": p,
                    "output_tokens": o,
                    "tp": r.deployment.tensor_parallel_size,
                    "prefill_rate": pre.max_rate_per_instance,
                    "decode_rate": dec.max_rate_per_instance,
                    "prefill_per_decode": ratio,
                }
            )
    return rows
