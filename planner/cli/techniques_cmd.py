"""`python -m planner prefix-cache | paged | flash-attn`: serving techniques as what-ifs on the scenario."""

from __future__ import annotations

import dataclasses

from planner.cli import emit
from planner.cli.scenario_args import add_scenario_args, resolved_from_args
from planner.cli.technique_args import add_request_args, positive, request_tokens
from planner.core.errors import InputError
from planner.core.units import fmt_bytes, fmt_gb
from planner.memory.plan import plan_memory
from planner.techniques import flash_attention as fa
from planner.techniques import prefix_cache as pc
from planner.techniques.paged_attention import compare, sample_lengths
from planner.traffic.traces import load_trace


def register(subparsers) -> None:
    p = subparsers.add_parser("prefix-cache", help="prefix caching: TTFT, prefill FLOPs and KV blocks saved")
    add_scenario_args(p)
    add_request_args(p, batch_default=None)
    g = p.add_argument_group("prefix caching")
    g.add_argument("--prefix-tokens", type=int, default=1500, help="shared prefix length (default 1500)")
    g.add_argument("--hit-rate", type=float, default=1.0, help="fraction of requests that find the prefix cached")
    g.add_argument("--num-sharing", type=int, default=16, help="requests running at once that share the prefix")
    g.add_argument("--queue-wait-ms", type=float, default=40.0, help="queue wait for the given-rates TTFT")
    g.add_argument("--prefill-rate", type=float, default=10_000.0, help="given prefill rate, tokens/s (primer §5)")
    g.add_argument("--trace", default=None, help="measure the hit rate on a trace with prefix ids (e.g. mooncake)")
    p.set_defaults(func=run_prefix)

    p = subparsers.add_parser("paged", help="PagedAttention vs contiguous reservation: concurrency and waste")
    add_scenario_args(p)
    g = p.add_argument_group("request lengths")
    g.add_argument("--prompt-dist", default="lognormal:mean=2000,sigma=0.8", help="prompt length SPEC")
    g.add_argument("--output-dist", default="lognormal:mean=300,sigma=0.8", help="output length SPEC")
    g.add_argument("--samples", type=int, default=2000, help="requests drawn (default 2000)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--reserve-tokens", type=int, default=None, help="contiguous reservation (default max-model-len)")
    p.set_defaults(func=run_paged)

    p = subparsers.add_parser("flash-attn", help="attention score-matrix memory without and with tiling")
    add_scenario_args(p)
    g = p.add_argument_group("attention")
    g.add_argument("--batch", type=int, default=1, help="sequences in the prefill batch")
    g.add_argument("--seq-len", type=int, default=4096, help="tokens per sequence (query = key length)")
    g.add_argument("--block", type=int, default=128, help="tile size (block_q = block_kv)")
    p.set_defaults(func=run_flash)


def run_prefix(args) -> int:
    r = resolved_from_args(args)
    positive(args, "prefill_rate", "num_sharing")
    if not 0 <= args.prefix_tokens < args.input_tokens:
        raise InputError("--prefix-tokens", "must be between 0 and --input-tokens − 1")
    if not 0 <= args.hit_rate <= 1:
        raise InputError("--hit-rate", "must be between 0 and 1")
    report = pc.prefix_report(
        r,
        args.input_tokens,
        request_tokens(args),
        args.prefix_tokens,
        args.hit_rate,
        args.num_sharing,
        args.queue_wait_ms / 1e3,
        args.prefill_rate,
    )
    trace = _trace_report(r, args.trace) if args.trace else None
    out = report.to_dict() | ({"trace": trace.to_dict()} if trace else {})
    emit(out, args.json, _prefix_text(report, trace))
    return 0


def _trace_report(r, trace: str) -> pc.TracePrefixReport:
    try:
        return pc.trace_prefix_report(load_trace(trace), plan_memory(r).kv_cache_tokens)
    except InputError as err:
        raise InputError("--trace", err.message) from None


def _prefix_text(o: pc.PrefixReport, t: pc.TracePrefixReport | None) -> str:
    g, m, h = o.ttft_given, o.ttft_model, o.hit_rate
    lines = [
        f"{o.model} on {o.gpu}: {o.prompt_tokens:,}-token prompt, shared prefix {o.prefix_tokens:,} "
        f"({o.cached_tokens_on_hit:,} cached in whole blocks of {o.block_size}), hit rate {h:.0%}",
        f"  TTFT, given rates   {g.before_s * 1e3:,.0f} → {g.after_s * 1e3:,.0f} ms on a hit "
        f"(expected {g.expected_s(h) * 1e3:,.0f} ms)",
        f"  TTFT, roofline      {m.before_s * 1e3:,.1f} → {m.after_s * 1e3:,.1f} ms on a hit "
        f"(expected {m.expected_s(h) * 1e3:,.1f} ms)",
        f"  prefill FLOPs       {o.prefill_flops_saved_on_hit / 1e12:,.2f} of {o.prefill_flops_without / 1e12:,.2f} "
        "TFLOP saved per hit",
        f"  KV blocks saved     {o.kv_blocks_saved:,} ({fmt_gb(o.kv_bytes_saved)} per GPU) when requests share it",
        f"  max requests        {o.max_requests_without_sharing} → {o.max_requests_with_sharing} with one shared copy",
    ]
    if t is not None:
        lines.append(
            f"  {t.source}: hit rate {t.hits.hit_rate_infinite:.1%} of {t.hits.num_blocks:,} blocks with an "
            f"infinite cache, {t.hits.hit_rate_lru:.1%} with an LRU of {t.lru_cache_blocks:,} blocks (the KV pool)"
        )
    return "\n".join(lines)


def run_paged(args) -> int:
    r = resolved_from_args(args)
    positive(args, "samples")
    if args.samples > 1_000_000:
        raise InputError("--samples", "must be at most 1,000,000")
    if not 0 <= args.seed < 2**32:
        raise InputError("--seed", "must be from 0 to 2^32 - 1")
    if args.reserve_tokens is not None and args.reserve_tokens <= 0:
        raise InputError("--reserve-tokens", "must be positive")
    lengths = sample_lengths(
        args.prompt_dist,
        args.output_dist,
        args.samples,
        args.seed,
        r.max_model_len,
        fields=("--prompt-dist", "--output-dist"),
    )
    c = compare(r, lengths, args.reserve_tokens)
    out = dataclasses.asdict(c) | {"model": r.model.name, "gpu": r.gpu.id, "concurrency_gain": c.concurrency_gain}
    text = "\n".join(
        [
            f"{r.model.name} on {r.gpu.name}: {c.num_samples:,} requests, mean {c.mean_tokens:,.0f} tokens "
            f"(p50 {c.p50_tokens:,.0f}, p95 {c.p95_tokens:,.0f}), KV pool {c.pool_tokens:,} tokens per GPU",
            f"  contiguous ({c.reserve_tokens:,} reserved)  {c.contiguous_max_requests:,} requests, "
            + (
                f"{c.contiguous_waste_fraction:.1%} of reserved memory never written "
                f"({fmt_gb(c.contiguous_waste_bytes)})"
                if c.contiguous_max_requests
                else "one reservation is larger than the pool"
            ),
            f"  paged (blocks of {c.block_size})          {c.paged_max_requests:,} requests, "
            f"{c.paged_waste_fraction:.2%} wasted in tail blocks ({fmt_gb(c.paged_waste_bytes)})",
        ]
    )
    emit(out, args.json, text)
    return 0


def run_flash(args) -> int:
    r = resolved_from_args(args)
    positive(args, "batch", "seq_len", "block")
    m = fa.scenario_attention_memory(r, args.batch, args.seq_len, args.block)
    out = dataclasses.asdict(m) | {
        "model": r.model.name,
        "gpu": r.gpu.id,
        "layers": r.model.num_layers,
        "gpu_memory_bytes": r.gpu.usable_memory_bytes,
    }
    text = "\n".join(
        [
            f"{r.model.name}: batch {m.batch} × {m.heads} heads per GPU × {m.q_tokens:,}² scores × "
            f"{m.bytes_per_value:g} B",
            f"  standard attention   {fmt_bytes(m.standard_bytes)} per layer materialised in HBM "
            f"(~{fmt_bytes(m.standard_traffic_bytes)} of HBM traffic)",
            f"  FlashAttention       {fmt_bytes(m.flash_tile_bytes)} tile on-chip per thread block, "
            f"{fmt_bytes(m.flash_hbm_bytes)} of log-sum-exp statistics in HBM ({m.ratio:,.0f}× less)",
        ]
    )
    emit(out, args.json, text)
    return 0
