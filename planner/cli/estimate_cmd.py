"""`servingplan estimate`: TTFT, TPOT, end-to-end and throughput for a static batch (a contract: keep the keys)."""
from __future__ import annotations

from planner.cli import emit
from planner.cli.scenario_args import add_engine_arg, add_scenario_args, resolved_from_args
from planner.latency.metrics import Estimate, estimate


def register(subparsers) -> None:
    p = subparsers.add_parser("estimate", help="latency and throughput of a static batch (roofline model)",
                              description="Predict prefill, TTFT, TPOT, end-to-end latency and throughput for a "
                                          "static batch of equal requests, with the bound and a step breakdown.")
    add_scenario_args(p)
    g = p.add_argument_group("workload")
    g.add_argument("--batch", type=int, required=True, help="requests decoded together (per replica)")
    g.add_argument("--input-tokens", type=int, required=True, help="prompt tokens per request")
    g.add_argument("--output-tokens", type=int, required=True, help="output tokens per request")
    add_engine_arg(g)
    g.add_argument("--queue-wait-ms", type=float, default=0.0, help="queue wait added to TTFT")
    p.set_defaults(func=run)


def run(args) -> int:
    r = resolved_from_args(args)
    est = estimate(r, args.batch, args.input_tokens, args.output_tokens, args.engine, args.queue_wait_ms / 1e3)
    out = est.to_dict()
    out.update(model=r.model.name, gpu=r.gpu.id, tp=r.deployment.tensor_parallel_size, weights=r.weights.id,
               kv_dtype=r.kv.id, num_replicas=r.deployment.num_replicas)
    emit(out, args.json, _text(est, r))
    return 0


def _text(e: Estimate, r) -> str:
    total = sum(e.step_time_breakdown.values())
    parts = ", ".join(f"{k.removesuffix('_s').replace('_', ' ')} {v * 1e3:.2f} ms"
                      for k, v in e.step_time_breakdown.items() if v > 0)
    eff = e.efficiency
    return "\n".join([
        f"{r.model.name} on {r.deployment.num_gpus} × {r.gpu.name} (TP={r.deployment.tensor_parallel_size}), "
        f"weights {r.weights.label}, engine {e.engine} ({e.efficiency_status}: {e.efficiency_source})",
        f"  batch {e.batch} × ({e.input_tokens:,} in, {e.output_tokens:,} out); "
        f"memory limit {e.max_batch} per replica",
        f"  prefill (whole batch)  {e.prefill_s * 1e3:,.1f} ms ({e.prefill_bound}-bound)",
        f"  TTFT                   {e.ttft_s * 1e3:,.1f} ms (queue wait {e.queue_wait_s * 1e3:,.0f} ms + prefill)",
        f"  TPOT (mean)            {e.tpot_s * 1e3:,.2f} ms ({e.bound}-bound) = "
        f"{e.tokens_per_s_per_user:,.1f} tokens/s per user",
        f"  end-to-end             {e.e2e_s:,.3f} s = TTFT + {e.output_tokens - 1:,} × TPOT",
        f"  throughput             {e.throughput_tokens_per_s:,.0f} output tokens/s",
        f"  decode step            {total * 1e3:.2f} ms: {parts}",
        "  ridge point            " + (f"decode turns compute-bound at batch {e.ridge_batch}" if e.ridge_batch
                                        else "decode stays memory-bound at this context"),
        f"  efficiency             matmul {eff['matmul_efficiency']:.2f}, "
        f"attention {eff['attention_efficiency']:.2f}, "
        f"memory {eff['memory_efficiency']:.2f}, overhead {eff['step_overhead_s'] * 1e3:.2f} ms/step",
    ])
