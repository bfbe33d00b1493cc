"""`servingplan estimate`: TTFT, TPOT, end-to-end and throughput for a static batch (the default; its JSON
keys are a contract) or, with `--mode continuous`, for B concurrent requests under continuous batching (what
`vllm bench serve --max-concurrency B` measures; planner.sim.continuous)."""

from __future__ import annotations

import math

from planner.accuracy.bands import bands_json, bands_text
from planner.cli import emit
from planner.cli.scenario_args import add_scenario_args, resolved_from_args
from planner.core.errors import InputError
from planner.latency.metrics import Estimate, estimate
from planner.sim.continuous import ContinuousEstimate, continuous
from planner.sim.spec_heads import spec_methods
from planner.techniques.spec_methods import SpecEstimate, acceptance_for, spec_estimate
from planner.traffic.clients import CLIENTS, DEFAULT_CLIENT


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "estimate",
        help="latency and throughput of a static batch (roofline model)",
        description="Predict prefill, TTFT, TPOT, end-to-end latency and throughput for a "
        "static batch of equal requests, with the bound and a step breakdown.",
    )
    add_scenario_args(p)
    g = p.add_argument_group("workload")
    g.add_argument(
        "--mode",
        choices=["static", "continuous"],
        default="static",
        help="static: one batch of B equal requests, prefilled together then decoded (primer §5); "
        "continuous: B clients each keeping one request in flight, as vllm bench serve "
        "--max-concurrency B (default static)",
    )
    g.add_argument(
        "--client",
        default=DEFAULT_CLIENT,
        choices=tuple(CLIENTS),
        help=f"with --mode continuous: the benchmark client whose B streams are simulated as it runs them (default "
        f"{DEFAULT_CLIENT}: vllm bench serve --max-concurrency B)",
    )
    g.add_argument(
        "--batch",
        type=int,
        required=True,
        help="static: requests decoded together per DP rank (each DP rank runs its own batch), at most max_num_seqs; "
        "continuous: the concurrency B per DP rank. JSON shows per DP rank and per deployment",
    )
    g.add_argument("--input-tokens", type=int, required=True, help="prompt tokens per request")
    g.add_argument("--output-tokens", type=int, required=True, help="output tokens per request")
    g.add_argument("--queue-wait-ms", type=float, default=0.0, help="queue wait added to TTFT")
    g.add_argument(
        "--offline",
        action="store_true",
        help="as the engine's own offline benchmark measures it (vllm bench latency, trtllm-bench, llama-bench: no "
        "API server): TTFT and end-to-end without the request's path outside the steps (default: as a client of "
        "the server measures them, what `simulate` charges every request)",
    )
    d = p.add_argument_group("speculative decoding as deployed (static mode; off unless --spec-method)")
    d.add_argument(
        "--spec-method",
        default=None,
        choices=tuple(spec_methods()),
        help="eagle3 (EAGLE-3 head) or mtp (DeepSeek MTP module) inside the target: TPOT and throughput priced with "
        "its acceptance length (JSON key spec)",
    )
    d.add_argument(
        "--spec-k",
        type=int,
        default=None,
        help="draft tokens per step (default: the published measurement's k, when it states one)",
    )
    d.add_argument(
        "--acceptance-length",
        type=float,
        default=None,
        help="your measured tokens per verification pass (1..k+1); default: the published row for this model "
        "(data/spec_methods.yaml); none -> an error, nothing is assumed",
    )
    d.add_argument("--acceptance-task", default=None, help="the published row's task when there are several")
    p.set_defaults(func=run)


def _spec(args, r, est: Estimate) -> SpecEstimate | None:
    """The estimate with speculative decoding, when --spec-method is given (its acceptance from a named source)."""
    if args.spec_method is None:
        for flag in ("spec_k", "acceptance_length", "acceptance_task"):
            if getattr(args, flag) is not None:
                raise InputError("--" + flag.replace("_", "-"), "applies only with --spec-method")
        return None
    if args.acceptance_length is not None and not math.isfinite(args.acceptance_length):
        raise InputError("--acceptance-length", "must be a number of tokens per pass")
    try:
        acc = acceptance_for(args.spec_method, r.model.name, args.acceptance_length, args.acceptance_task)
        k = args.spec_k or acc.k
        if k is None:
            why = f"the acceptance source does not state its draft length k: give it ({acc.source})"
            raise InputError("spec_k", why)
        return spec_estimate(r, est, args.spec_method, k, acc)
    except InputError as err:
        raise InputError("--" + err.field.replace("_", "-"), err.message) from None


def _spec_text(s: SpecEstimate) -> str:
    return "\n".join(
        [
            "",
            f"  speculative decoding   {s.method_name}, k = {s.k}, acceptance length {s.acceptance_length:g} "
            f"tokens per pass ({s.acceptance_source})",
            f"    pass = verify {s.verify_step_s * 1e3:,.2f} ms + {s.k} × head {s.head_pass_s * 1e3:,.3f} ms "
            f"(one head pass = {s.head_fraction:.4f} of the target's layers)",
            f"    speed-up {s.speedup:.3f}× (memory-bound hand formula {s.speedup_memory_bound:.3f}×): TPOT "
            f"{s.tpot_s * 1e3:,.2f} ms, end-to-end {s.e2e_s:,.3f} s, {s.throughput_tokens_per_s:,.0f} output tokens/s",
        ]
    )


def run(args) -> int:
    r = resolved_from_args(args)
    if args.batch < 1:
        raise InputError("--batch", "must be at least 1")
    if args.mode == "continuous" and args.spec_method is not None:
        raise InputError("--spec-method", "prices a static batch here; under load use simulate --spec-method")
    head = dict(
        model=r.model.name,
        gpu=r.gpu.id,
        tp=r.deployment.tensor_parallel_size,
        weights=r.weights.id,
        kv_dtype=r.kv.id,
        num_replicas=r.deployment.num_replicas,
    )
    if args.mode == "continuous":
        c = continuous(r, args.batch, args.input_tokens, args.output_tokens, args.client)
        ranks = r.deployment.data_parallel_size * r.deployment.num_replicas
        counts = dict(concurrency_per_dp_rank=args.batch, concurrency_per_deployment=args.batch * ranks)
        predicted = {
            "ttft_s": ("ttft", c.ttft_s),
            "ttft_p95_s": ("ttft", c.ttft_p95_s),
            "tpot_s": ("tpot", c.tpot_s),
            "tpot_p95_s": ("tpot", c.tpot_p95_s),
            "e2e_s": ("e2e", c.e2e_s),
            "throughput_tokens_per_s": ("throughput", c.throughput_tokens_per_s),
            "requests_per_s": ("throughput", c.requests_per_s),
        }
        bands = bands_json(r, predicted)
        # engine_version: the release the engine's constants describe (data/engines.yaml), added after the old keys
        out = {"mode": "continuous", **c.to_dict(), **head, **counts, "bands": bands}
        out["engine_version"] = r.engine.version
        out["client"] = args.client
        emit(out, args.json, _continuous_text(c, r) + bands_text(bands))
        return 0
    max_seqs = r.deployment.max_num_seqs
    batch = min(args.batch, max_seqs)  # vLLM never runs more than max_num_seqs sequences in one step
    est = estimate(r, batch, args.input_tokens, args.output_tokens, args.queue_wait_ms / 1e3, offline=args.offline)
    out = est.to_dict()
    out.update(head, requested_batch=args.batch, batch_capped_by_max_num_seqs=batch < args.batch)
    dp = r.deployment.data_parallel_size
    out.update(
        data_parallel_size=dp,
        batch_per_dp_rank=batch,  # each DP rank decodes its own batch
        batch_per_deployment=batch * dp * r.deployment.num_replicas,
    )
    predicted = {
        "ttft_s": ("ttft", est.ttft_s),
        "tpot_s": ("tpot", est.tpot_s),
        "e2e_s": ("e2e", est.e2e_s),
        "throughput_tokens_per_s": ("throughput", est.throughput_tokens_per_s),
    }
    out["bands"] = bands_json(r, predicted)
    text = _text(est, r) + bands_text(out["bands"])
    spec = _spec(args, r, est)
    out["spec"] = spec and spec.to_dict()
    out["engine_version"] = r.engine.version  # added after the old keys (the JSON contract)
    out["offline"] = args.offline
    # metrics.request_path_s, as estimate added it to TTFT (none offline)
    out["request_path_s"] = 0.0 if args.offline else est.ttft_s - est.queue_wait_s - est.prefill_s
    if spec:
        text += _spec_text(spec)
    if batch < args.batch:
        text += (
            f"\n  note: --batch {args.batch} capped at max_num_seqs={max_seqs} (vLLM runs at most that many "
            "sequences per step; raise --max-num-seqs to batch more)"
        )
    emit(out, args.json, text)
    return 0


def _continuous_text(c: ContinuousEstimate, r) -> str:
    lines = [
        f"{r.model.name} on {r.deployment.num_gpus} × {r.gpu.name} (TP={r.deployment.tensor_parallel_size}), "
        f"weights {r.weights.label}, engine {c.engine} {r.engine.version} ({c.efficiency_status}: "
        f"{c.efficiency_source})",
        f"  continuous batching at concurrency {c.concurrency} × ({c.input_tokens:,} in, {c.output_tokens:,} out), "
        f"steady state of {c.num_requests:,} simulated requests per replica",
        f"  TTFT                   mean {c.ttft_s * 1e3:,.1f} ms, p95 {c.ttft_p95_s * 1e3:,.1f} ms "
        "(prompt chunked among the running decodes)",
        f"  TPOT                   mean {c.tpot_s * 1e3:,.2f} ms, p95 {c.tpot_p95_s * 1e3:,.2f} ms "
        f"= {c.tokens_per_s_per_user:,.1f} tokens/s per user (incl. prefill chunks sharing the steps)",
        f"  end-to-end             {c.e2e_s:,.3f} s (mean)",
        f"  throughput             {c.throughput_tokens_per_s:,.0f} output tokens/s, {c.requests_per_s:,.2f} req/s",
        f"  running per step       {c.mean_running:,.1f} (time-weighted); preemptions {c.preemptions:,}",
    ]
    if c.capped_by_max_num_seqs:
        lines.append(
            f"  note: concurrency {c.concurrency} > max_num_seqs={r.deployment.max_num_seqs}: the rest wait "
            "in the server's queue (their wait is in TTFT)"
        )
    return "\n".join(lines)


def _text(e: Estimate, r) -> str:
    total = sum(e.step_time_breakdown.values())
    parts = ", ".join(
        f"{k.removesuffix('_s').replace('_', ' ')} {v * 1e3:.2f} ms" for k, v in e.step_time_breakdown.items() if v > 0
    )
    eff = e.efficiency
    return "\n".join(
        [
            f"{r.model.name} on {r.deployment.num_gpus} × {r.gpu.name} (TP={r.deployment.tensor_parallel_size}), "
            f"weights {r.weights.label}, engine {e.engine} {r.engine.version} ({e.efficiency_status}: "
            f"{e.efficiency_source})",
            f"  batch {e.batch} × ({e.input_tokens:,} in, {e.output_tokens:,} out); "
            f"memory limit {e.max_batch} per replica",
            f"  prefill (whole batch)  {e.prefill_s * 1e3:,.1f} ms ({e.prefill_bound}-bound)",
            f"  TTFT                   {e.ttft_s * 1e3:,.1f} ms (queue wait {e.queue_wait_s * 1e3:,.0f} ms + prefill "
            f"{e.prefill_s * 1e3:,.1f} ms + the request's path outside the steps "
            f"{(e.ttft_s - e.queue_wait_s - e.prefill_s) * 1e3:,.1f} ms: frontend, prompt dispatch, output lag)",
            f"  TPOT (mean)            {e.tpot_s * 1e3:,.2f} ms ({e.bound}-bound) = "
            f"{e.tokens_per_s_per_user:,.1f} tokens/s per user",
            f"  end-to-end             {e.e2e_s:,.3f} s = TTFT + {e.output_tokens - 1:,} × TPOT",
            f"  throughput             {e.throughput_tokens_per_s:,.0f} output tokens/s",
            f"  decode step            {total * 1e3:.2f} ms: {parts}",
            "  ridge point            "
            + (
                f"decode turns compute-bound at batch {e.ridge_batch}"
                if e.ridge_batch
                else "decode stays memory-bound at this context"
            ),
            f"  efficiency             matmul {eff['matmul_efficiency']:.2f}, "
            f"attention {eff['attention_efficiency']:.2f}, "
            f"memory {eff['memory_efficiency']:.2f}, overhead {eff['step_overhead_s'] * 1e3:.2f} ms/step",
            *(f"  hardware basis         {note}" for note in e.hardware_basis),
        ]
    )
