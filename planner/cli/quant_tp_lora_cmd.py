"""`python -m planner quant | tp | lora`: weight formats, tensor parallelism and multi-LoRA on the scenario."""

from __future__ import annotations

import dataclasses

from planner.cli import emit
from planner.cli.scenario_args import add_scenario_args, resolved_from_args
from planner.cli.technique_args import add_request_args, decode_context, positive, request_tokens
from planner.core.catalog import get_weight_precision
from planner.core.errors import InputError
from planner.core.units import fmt_gb
from planner.techniques.lora import ALL_MODULES, ATTENTION_MODULES, lora_plan
from planner.techniques.quantization import ENGINE_LOADERS, compare_formats
from planner.techniques.tensor_parallel import compare_tp, min_fitting_tp


def register(subparsers) -> None:
    p = subparsers.add_parser("quant", help="every weight format: memory, KV headroom, concurrency, decode speed")
    add_scenario_args(p)
    add_request_args(p)
    p.add_argument("--formats", default=None, help="comma-separated weight precision ids (default: all)")
    p.set_defaults(func=run_quant)

    p = subparsers.add_parser("tp", help="tensor parallelism 1/2/4/8: memory per GPU, TPOT, throughput")
    add_scenario_args(p)
    add_request_args(p)
    p.set_defaults(func=run_tp)

    p = subparsers.add_parser("lora", help="multi-LoRA: adapter bytes and what GPU adapter slots cost")
    add_scenario_args(p)
    add_request_args(p, batch_default=None)
    g = p.add_argument_group("LoRA")
    g.add_argument("--rank", type=int, default=16, help="LoRA rank (default 16)")
    g.add_argument(
        "--modules", default=",".join(ATTENTION_MODULES), help=f"target modules from {','.join(ALL_MODULES)}"
    )
    g.add_argument("--max-loras", type=int, default=4, help="adapter slots in GPU memory (vLLM --max-loras)")
    g.add_argument("--keep-requests", type=int, default=1, help="requests the pool must still hold")
    p.set_defaults(func=run_lora)


def _formats(args) -> list[str] | None:
    if not args.formats:
        return None
    return [get_weight_precision(pid.strip(), "--formats").id for pid in args.formats.split(",") if pid.strip()]


def run_quant(args) -> int:
    positive(args, "batch")
    r = resolved_from_args(args)
    rows = compare_formats(r, request_tokens(args), args.batch, _formats(args))
    out = {
        "model": r.model.name,
        "gpu": r.gpu.id,
        "tp": r.deployment.tensor_parallel_size,
        "request_tokens": request_tokens(args),
        "batch": args.batch,
        "formats": [x.to_dict() for x in rows],
        "engine_loaders": ENGINE_LOADERS,
    }
    head = (
        f"{'format':<32} {'bits':>6} {'weights':>10} {'KV B/token':>11} {'KV pool':>10} {'max req':>8} "
        f"{'tok/s b=1':>10} {'tok/s batch':>12}  engines"
    )
    lines = [
        f"{r.model.name} on {r.deployment.num_gpus} × {r.gpu.name}, requests of {request_tokens(args):,} "
        f"tokens, batch {args.batch}",
        head,
    ]
    for x in rows:
        b1 = f"{x.decode_tokens_per_s_batch1:,.0f}" if x.fits else "no fit"
        bb = f"{x.decode_tokens_per_s_batch:,.0f}" if x.decode_tokens_per_s_batch else "—"
        lines.append(
            f"{x.label:<32} {x.bits_per_weight:>6.2f} {fmt_gb(x.weight_bytes):>10} "
            f"{x.kv_bytes_per_token:>11,.0f} {fmt_gb(x.kv_pool_bytes_per_gpu):>10} "
            f"{x.max_requests:>8,} {b1:>10} {bb:>12}  {', '.join(x.engines)}"
        )
    lines.append(
        "KV bytes per token do not change with the weight format: quantizing weights does not shrink the cache."
    )
    emit(out, args.json, "\n".join(lines))
    return 0


def run_tp(args) -> int:
    positive(args, "batch")
    r = resolved_from_args(args)
    rows = compare_tp(r, args.batch, decode_context(args), request_tokens=request_tokens(args))
    out = {
        "model": r.model.name,
        "gpu": r.gpu.id,
        "weights": r.weights.id,
        "context_tokens": decode_context(args),
        "batch": args.batch,
        "min_tp": min_fitting_tp(rows),
        "options": [x.to_dict() for x in rows],
    }
    lines = [
        f"{r.model.name} ({r.weights.label}) on {r.gpu.name}, batch {args.batch}, context {decode_context(args):,}"
    ]
    for x in rows:
        if x.fits:
            lines.append(
                f"  TP {x.tp}: {fmt_gb(x.weights_per_gpu_bytes)} weights per GPU, {x.max_requests:,} "
                f"requests fit; TPOT {x.tpot_batch1_s * 1e3:.2f} ms at batch 1, {x.tpot_s * 1e3:.2f} ms "
                f"at batch {x.batch} (communication {x.communication_s * 1e3:.2f} ms); "
                f"{x.throughput_tokens_per_s:,.0f} tok/s = {x.throughput_per_gpu_tokens_per_s:,.0f} per GPU"
            )
        else:
            lines.append(f"  TP {x.tp}: {fmt_gb(x.weights_per_gpu_bytes)} weights per GPU: {x.note or 'no room'}")
    emit(out, args.json, "\n".join(lines))
    return 0


def run_lora(args) -> int:
    positive(args, "rank", "keep_requests")
    if args.max_loras < 0:
        raise InputError("--max-loras", "must be 0 or more")
    modules = tuple(m.strip() for m in args.modules.split(",") if m.strip())
    bad = [m for m in modules if m not in ALL_MODULES]
    if bad or not modules:
        raise InputError("--modules", f"unknown module(s) {', '.join(bad) or '(none)'}; use {','.join(ALL_MODULES)}")
    r = resolved_from_args(args)
    plan = lora_plan(r, args.rank, modules, args.max_loras, request_tokens(args), args.keep_requests)
    out = dataclasses.asdict(plan) | {"model": r.model.name, "gpu": r.gpu.id, "request_tokens": request_tokens(args)}
    text = "\n".join(
        [
            f"{r.model.name}: LoRA rank {plan.rank} on {','.join(plan.modules)} × {r.model.num_layers} layers, 16-bit",
            f"  one adapter          {plan.adapter_bytes:,.0f} B ({fmt_gb(plan.adapter_bytes)})",
            f"  {plan.max_loras} GPU slots          {fmt_gb(plan.slots_bytes_per_gpu)} per GPU out of the KV pool "
            f"({fmt_gb(plan.kv_pool_bytes_without)} → {fmt_gb(plan.kv_pool_bytes_with)})",
            f"  max requests         {plan.max_requests_without:,} → {plan.max_requests_with:,} "
            f"(requests of {request_tokens(args):,} tokens)",
            f"  adapters that fit    {plan.adapters_fit_keeping:,} "
            f"while keeping room for {plan.keep_requests} request(s)",
        ]
    )
    emit(out, args.json, text)
    return 0
