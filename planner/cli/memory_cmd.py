"""`python -m planner memory`: where the memory goes and how many requests fit (a contract: keep the keys)."""

from __future__ import annotations

from planner.accuracy.bands import bands_json
from planner.cli import emit
from planner.cli.scenario_args import add_scenario_args, scenario_from_args
from planner.core.scenario import resolve
from planner.core.units import GiB, fmt_gb
from planner.latency.collectives import collectives
from planner.memory.engine_pool import EnginePool
from planner.memory.fixes import nearest_fixes, no_fix_advice
from planner.memory.plan import plan_memory


def register(subparsers) -> None:
    p = subparsers.add_parser("memory", help="weights, KV cache and how many requests fit")
    add_scenario_args(p)
    p.add_argument(
        "--suggest",
        action="store_true",
        help="also list the nearest changes that make it fit (max_model_len, precision, TP, GPU)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    s = scenario_from_args(args)
    r = resolve(s)
    plan = plan_memory(r)
    out = plan.to_dict()
    out.update(model=r.model.name, gpu=r.gpu.id, weights=r.weights.id, kv_dtype=r.kv.id)
    out["requests_per_dp_rank"] = plan.requests_per_dp_rank  # × DP ranks × replicas = deployment_max_concurrency
    out["moe_tensor_parallel_size"] = r.deployment.moe_tensor_parallel_size if r.model.is_moe else 1
    out["collectives"] = [c.to_dict() for c in collectives(r)]
    out.update(plan.engine_dict())
    par = f"TP={plan.tensor_parallel_size}" + "".join(
        f", {k}={v}"
        for k, v in (
            ("PP", plan.pipeline_parallel_size),
            ("DP", plan.data_parallel_size),
            ("EP", plan.expert_parallel_size),
        )
        if v > 1
    )
    if r.model.is_moe and plan.expert_parallel_size > 1 and r.deployment.moe_tensor_parallel_size > 1:
        par += f" (MoE-TP={r.deployment.moe_tensor_parallel_size})"
    log_label = "pool" if isinstance(plan.pool, EnginePool) else f"{r.engine.label} would log"
    unit = "DP rank" if plan.data_parallel_size > 1 else "replica"  # each DP rank has its own pool
    lines = [
        f"{r.model.name} on {r.deployment.num_gpus} × {r.gpu.name} ({par}), weights {r.weights.label}, KV {r.kv.label}",
        f"  parameters            {plan.params:,}"
        + (f" ({plan.active_params:,} active)" if plan.active_params != plan.params else ""),
        f"  weights               {fmt_gb(plan.weight_bytes)} total, {fmt_gb(plan.weight_bytes_per_gpu)} per GPU",
        f"  KV per token          {plan.kv_bytes_per_token:,.0f} B ({plan.kv_bytes_per_token_per_gpu:,.0f} B per GPU)",
        f"  KV per request        {fmt_gb(plan.kv_bytes_per_request)} for {plan.context_tokens:,} tokens",
        f"  textbook fit          {plan.textbook_max_requests} requests per {unit} "
        f"(floor(({r.gpu.memory_gb:g} GB − weights) / KV per request))",
        f"  {r.engine.label} KV pool".ljust(24)
        + f"{plan.kv_pool_bytes_per_gpu / GiB:,.2f} GiB per GPU, {plan.kv_cache_tokens:,} tokens, "
        f"{plan.num_gpu_blocks:,} blocks of {r.deployment.block_size} (memory rule {plan.memory_rule})",
        *(f"  {log_label:<22}{line}" for line in plan.pool.log_lines),
        f"  deployment holds      {plan.deployment_max_concurrency:,} requests of {plan.max_model_len:,} tokens "
        f"({plan.num_replicas} replica(s) × {plan.data_parallel_size} DP rank(s) × {plan.requests_per_dp_rank:,} "
        "per rank)",
        *(
            f"  layer kind            {g.layers} × {g.label}: {g.kv_bytes_per_token:,.0f} B per token per GPU, "
            f"{g.state_bytes_per_request / 1e6:,.2f} MB state per request, holds {g.tokens_held:,} tokens"
            for g in plan.layer_kinds
        ),
        f"  binding limit         {plan.binding_limit}: {plan.binding_requests:,} requests of "
        f"{plan.context_tokens:,} tokens per DP rank (max_num_seqs {r.deployment.max_num_seqs:,})",
        *(f"  warning: {w}" for w in plan.warnings),
    ]
    if r.engine.memory == "vllm-profiler":  # the KV band comes from vLLM's own logs
        predicted = {"kv_cache_tokens": ("kv_capacity", out.get("kv_cache_tokens"))}
        out["bands"] = bands_json(r, {**predicted, "max_concurrency": ("kv_capacity", out.get("max_concurrency"))})
    if args.suggest:
        fixes = nearest_fixes(s)
        out["fixes"] = [{"kind": f.kind, "label": f.label, "requests": f.requests} for f in fixes]
        none = f"nearest fixes: none (no single change makes it fit): {no_fix_advice(plan)}"
        lines.append("nearest fixes:" if fixes else none)
        lines += [f"  {f.kind:<14}{f.label} → {f.requests:,} requests fit" for f in fixes]
    emit(out, args.json, "\n".join(lines))
    return 0
