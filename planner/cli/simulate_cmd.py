"""`python -m planner simulate`: replay traffic against one replica and report TTFT, TPOT, e2e and queue wait
percentiles, throughput, goodput, preemptions, prefix hits and rejections (a contract: keep the JSON keys)."""

from __future__ import annotations

import argparse
import dataclasses
import math

from planner.accuracy.bands import bands_json, bands_text, serving_bands
from planner.cli import emit
from planner.cli.offload_args import add_offload_args, offload_from_args, offload_json, offload_text
from planner.cli.scenario_args import add_scenario_args, resolved_from_args
from planner.cli.spec_args import add_spec_args, check_spec_args, spec_from_args
from planner.cli.traffic_args import DEFAULT_INPUT, DEFAULT_OUTPUT, add_length_args
from planner.cli.work_budget import check_workload
from planner.core.errors import InputError
from planner.latency.perf_model import PerfModel
from planner.sim.records import LatencyStats, ServingSummary
from planner.sim.run_summary import result_summary
from planner.sim.serving import Replica, benchmark_clients, run_serving
from planner.sim.settings import ServerSettings
from planner.traffic.clients import CLIENTS, DEFAULT_CLIENT, get_client
from planner.traffic.generators import ARRIVAL_PROCESSES, LengthDist, closed_loop, open_loop, pooled_prompts
from planner.traffic.sessions import sessions
from planner.traffic.traces import load_trace, rescale, sample
from planner.traffic.workload import Workload

DEFAULT_NUM_REQUESTS = 1000


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="simulate one replica serving open-loop, closed-loop or trace traffic",
        description="Discrete-event simulation of one vLLM-like replica (continuous batching, chunked prefill, "
        "paged KV, preemption, optional prefix caching) with step times from the latency model. "
        "Length SPECs: fixed:N | uniform:LO,HI | lognormal:mean=M,sigma=S[,max=X] | empirical:TRACE.",
    )
    add_simulate_args(p)
    p.set_defaults(func=run)


def add_simulate_args(p: argparse.ArgumentParser) -> None:
    """The scenario, traffic, session, server and speculative-decoding flags of `simulate` (and `fleet`)."""
    add_scenario_args(p)
    t = p.add_argument_group("traffic (pick one)").add_mutually_exclusive_group(required=True)
    t.add_argument("--rate", type=float, help="open loop: mean arrivals per second")
    t.add_argument("--users", type=int, help="closed loop: simulated users, each waiting for its reply")
    t.add_argument("--trace", help="replay a trace file, or a shared trace: azure_conv, azure_code, mooncake")
    g = p.add_argument_group("traffic options")
    g.add_argument("--arrival", default="poisson", choices=ARRIVAL_PROCESSES, help="open-loop arrival process")
    g.add_argument("--cv", type=float, default=None, help="gamma arrivals: coefficient of variation (1 = Poisson)")
    g.add_argument(
        "--think-time",
        type=float,
        default=None,
        help="closed loop or sessions: mean think time, seconds (with --users: people who read between replies; "
        "without it, or 0, --users N are a benchmark client's N streams: --client)",
    )
    g.add_argument(
        "--client",
        default=None,
        choices=tuple(CLIENTS),
        help=f"with --users and no think time: the benchmark client whose N streams are simulated as it runs them "
        f"(default {DEFAULT_CLIENT}: `vllm bench serve --max-concurrency N`): all N started together, its warm-up "
        "left out, lengths drawn its way",
    )
    g.add_argument(
        "--warmup-requests",
        type=int,
        default=None,
        help="benchmark client: requests sent first and left out of the means (default: the client's own, "
        "0 for vllm-bench, 1 for sglang-bench)",
    )
    g.add_argument(
        "--random-range-ratio",
        type=float,
        default=None,
        help="benchmark client: spread of --input-tokens/--output-tokens as the client draws them (vllm-bench: "
        "uniform in [L(1-r), L(1+r)]; sglang-bench: in [rL, L]; default the client's: every length L)",
    )
    g.add_argument("--time-scale", type=float, default=1.0, help="trace: speed-up (2 = twice the arrival rate)")
    g.add_argument(
        "--num-requests",
        type=int,
        default=None,
        help=f"requests to simulate (default {DEFAULT_NUM_REQUESTS}; with --trace: a seeded random "
        "subset, which lowers the rate; default the whole trace)",
    )
    g.add_argument(
        "--prompt-pool",
        type=int,
        default=None,
        metavar="N",
        help="draw each prompt at random from N distinct prompts, as aiperf's synthetic dataset does (100 unless "
        "--conversation-num says otherwise): a repeat is served from the prefix cache while the pool holds it "
        "(default: the --client's own, 100 for aiperf and genai-perf, else none; 0: every prompt new)",
    )
    add_length_args(g)
    c = p.add_argument_group(
        "sessions (traffic that comes back: each turn re-sends the history; --rate = sessions started per second)"
    )
    c.add_argument("--turns", type=int, default=None, help="turns per session (each re-sends the last prompt + answer)")
    c.add_argument(
        "--system-prompt-tokens", type=int, default=None, help="a system prompt this long, shared by every session"
    )
    c.add_argument(
        "--first-input-tokens",
        type=int,
        default=None,
        help="the first turn's message (an agent's task and context; later turns: --input-tokens/--input-dist)",
    )
    s = p.add_argument_group("server and SLO")
    s.add_argument(
        "--prefix-caching",
        action="store_true",
        help="reuse cached blocks (on by default as in vLLM V1; --no-enable-prefix-caching turns it off)",
    )
    s.add_argument(
        "--max-queue",
        type=int,
        default=None,
        help="most requests left waiting after each step; more are rejected (0 = admit only what can start now)",
    )
    s.add_argument("--slo-ttft-ms", type=float, default=None, help="goodput: TTFT target, ms")
    s.add_argument("--slo-tpot-ms", type=float, default=None, help="goodput: TPOT target, ms")
    s.add_argument("--seed", type=int, default=0, help="seed for arrivals, lengths and sampling (default 0)")
    add_offload_args(p)
    add_spec_args(p)


def _positive(flag: str, value, integer: bool = False, allow_zero: bool = False) -> None:
    if value is None:
        return
    ok = math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise InputError(flag, f"must be {'0 or more' if allow_zero else 'greater than 0'}, got {value:g}")


def _check_flags(args: argparse.Namespace) -> None:
    for flag, value in (
        ("--rate", args.rate),
        ("--users", args.users),
        ("--time-scale", args.time_scale),
        ("--num-requests", args.num_requests),
        ("--input-tokens", args.input_tokens),
        ("--output-tokens", args.output_tokens),
        ("--cv", args.cv),
        ("--slo-ttft-ms", args.slo_ttft_ms),
        ("--slo-tpot-ms", args.slo_tpot_ms),
        ("--turns", args.turns),
        ("--first-input-tokens", args.first_input_tokens),
    ):
        _positive(flag, value)
    _positive("--prompt-pool", args.prompt_pool, allow_zero=True)
    _positive("--think-time", args.think_time, allow_zero=True)
    _positive("--system-prompt-tokens", args.system_prompt_tokens, allow_zero=True)
    _positive("--max-queue", args.max_queue, allow_zero=True)
    _positive("--seed", args.seed, allow_zero=True)
    check_spec_args(args)
    if args.cv is not None and args.arrival != "gamma":
        raise InputError("--cv", "applies only to --arrival gamma")
    _check_client_flags(args)
    sessions = _sessions(args)
    if args.users is None and args.think_time is not None and not sessions:
        raise InputError("--think-time", "applies only to --users or sessions (--turns)")
    if sessions:
        if args.trace is not None:
            raise InputError("--turns", "sessions are generated: not with --trace (its prefix ids are its own)")
        if (args.turns or 1) > 1 and args.think_time is None:
            raise InputError("--think-time", "is required with --turns above 1 (seconds before each next turn)")
        if args.arrival != "poisson":
            raise InputError("--arrival", "sessions start as a Poisson process")
    if args.prompt_pool is not None and (args.trace is not None or sessions):
        raise InputError("--prompt-pool", "applies to generated --rate or --users traffic (a trace or sessions carry "
                         "their own prefixes)")  # fmt: skip
    if args.trace is None and args.time_scale != 1.0:
        raise InputError("--time-scale", "applies only to --trace")
    if args.trace is not None:
        for flag in ("input_tokens", "input_dist", "output_tokens", "output_dist"):
            if getattr(args, flag) is not None:
                raise InputError("--" + flag.replace("_", "-"), "lengths come from the trace with --trace")
        if args.arrival != "poisson":
            raise InputError("--arrival", "a trace keeps its own arrival times (use --time-scale)")


def benchmark_client(args: argparse.Namespace) -> str | None:
    """The benchmark client whose streams --users are (None: open loop, a trace, sessions, or people who think)."""
    if args.users is None or args.think_time or _sessions(args):
        return None
    return args.client or DEFAULT_CLIENT


def _check_client_flags(args: argparse.Namespace) -> None:
    client = benchmark_client(args)
    given = [f for f in ("client", "warmup_requests", "random_range_ratio") if getattr(args, f, None) is not None]
    if client is None and given:
        flag = "--" + given[0].replace("_", "-")
        raise InputError(flag, "applies to --users without think time (a benchmark client's streams)")
    _positive("--warmup-requests", args.warmup_requests, allow_zero=True)
    if args.random_range_ratio is not None:
        if args.input_dist is not None or args.output_dist is not None:
            raise InputError("--random-range-ratio", "spreads --input-tokens/--output-tokens: not with a length SPEC")
        get_client(client).check_range_ratio(args.random_range_ratio)


def clients_per_rank(args: argparse.Namespace, r) -> int:
    """The --users one simulated attention-DP rank serves: the run's streams spread evenly over the DP ranks."""
    dp = r.deployment.data_parallel_size if r is not None else 1
    return max(1, round(args.users / max(1, dp)))


def _sessions(args: argparse.Namespace) -> bool:
    return any(getattr(args, f, None) is not None for f in ("turns", "system_prompt_tokens", "first_input_tokens"))


def _length(tokens: int | None, spec: str | None, default: str, flag: str, args=None) -> LengthDist:
    client = benchmark_client(args) if args is not None else None
    if tokens is not None and client is not None:  # drawn around the nominal length as the client draws them
        return LengthDist.parse(get_client(client).length_spec(tokens, args.random_range_ratio), flag)
    if tokens is not None:
        return LengthDist.parse(f"fixed:{tokens}", flag.replace("dist", "tokens"))
    return LengthDist.parse(spec or default, flag)


def workload_from_args(args: argparse.Namespace, r=None, pm=None) -> Workload:
    """The traffic the flags describe (flags already checked); with --prompt-pool (or a client whose dataset reuses
    its prompts: aiperf, genai-perf), its prompts drawn from the pool in the scenario's KV blocks; --prompt-pool 0:
    every prompt new. `pm`: the step-time model a benchmark client's timing follows (None: the scenario's)."""
    wl = _generated(args, r, pm)
    pool = getattr(args, "prompt_pool", None)
    client = benchmark_client(args)
    if pool is None and client is not None:
        pool = get_client(client).prompt_pool
    if not pool:
        return wl
    return pooled_prompts(wl, pool, r.deployment.block_size if r is not None else 16, args.seed)


def _generated(args: argparse.Namespace, r=None, pm=None) -> Workload:
    n = args.num_requests
    if args.trace is not None:
        try:
            wl = load_trace(args.trace)
        except InputError as err:
            raise InputError("--trace", str(err)) from None
        if n is not None:
            wl = sample(wl, max_requests=n, seed=args.seed)
        return rescale(wl, args.time_scale)
    prompt = _length(args.input_tokens, args.input_dist, DEFAULT_INPUT, "--input-dist", args)
    output = _length(args.output_tokens, args.output_dist, DEFAULT_OUTPUT, "--output-dist", args)
    client = benchmark_client(args)
    n = n or (get_client(client).num_requests(args.users) if client else DEFAULT_NUM_REQUESTS)
    if _sessions(args):
        first = None if args.first_input_tokens is None else f"fixed:{args.first_input_tokens}"
        return sessions(
            n,
            args.turns or 1,
            args.system_prompt_tokens or 0,
            prompt,
            output,
            args.think_time or 0.0,
            rate_per_s=args.rate,
            num_users=args.users,
            first_user=first,
            seed=args.seed,
        )
    if client is not None and r is not None:  # a benchmark client's streams, on one attention-DP rank
        dp = max(1, r.deployment.data_parallel_size)
        users, per_rank = clients_per_rank(args, r), max(1, round(n / dp))
        warmup = None if args.warmup_requests is None else round(args.warmup_requests / dp)
        return benchmark_clients(r, users, per_rank, prompt, output, args.seed, client, warmup, pm)
    if args.users is not None:
        return closed_loop(args.users, n, args.think_time, prompt, output, seed=args.seed)
    cv = args.cv if args.cv is not None else 1.0
    return open_loop(n, args.rate, prompt, output, args.arrival, cv, seed=args.seed)


def output_flag(args: argparse.Namespace) -> str:
    """The flag that set the output lengths (for a work-budget message)."""
    return "--output-dist" if getattr(args, "output_dist", None) else "--output-tokens"


def settings_from_args(args: argparse.Namespace, r) -> ServerSettings:
    """How the simulated replica runs: the scenario's engine and limits, and the server flags."""
    spec = spec_from_args(args)
    return ServerSettings.of(
        r,
        prefix_caching=True if args.prefix_caching else None,
        max_queue=args.max_queue,
        slo_ttft_s=args.slo_ttft_ms / 1e3 if args.slo_ttft_ms else None,
        slo_tpot_s=args.slo_tpot_ms / 1e3 if args.slo_tpot_ms else None,
        seed=args.seed,
        spec=spec,
        offload=offload_from_args(args),
    )


def run(args: argparse.Namespace) -> int:
    out, text = simulate_result(args)
    emit(out, args.json, text)
    return 0


def simulate_result(args: argparse.Namespace) -> tuple[dict, str]:
    """`simulate`'s JSON (the contract) and its text for parsed flags: the one path from what a user enters to a
    serving run's figures (the accuracy benchmarks call it with each measured row's flags)."""
    _check_flags(args)
    r = resolved_from_args(args)
    wl = workload_from_args(args, r)
    check_workload(wl, r.deployment.long_prefill_token_threshold, output_flag(args))
    replica = Replica(r, settings_from_args(args, r))
    try:
        _ = replica.draft_cost  # the draft model is looked up before the run
    except InputError as err:
        raise InputError("--spec-model", err.message) from None
    res = run_serving(replica, wl)
    summary = result_summary(res)
    out = summary.to_dict()
    out.update(
        model=r.model.name,
        gpu=r.gpu.id,
        tp=r.deployment.tensor_parallel_size,
        engine=args.engine,
        prefix_caching=res.config.enable_prefix_caching,
        max_queue=args.max_queue,
        spec_model=args.spec_model,
        spec_k=res.config.spec_k,
        spec_alpha=res.config.spec_alpha,
        scheduler_policy=res.config.admission_policy,
        spec_method=args.spec_method,  # added after the others: the JSON contract appends keys
    )
    out["bands"] = bands_json(r, serving_bands(out))
    out["offload"] = offload_json(r, replica, res)
    out.update(client_json(args, r, wl))
    text = _text(summary, r, args.engine, res.config.admission_policy) + offload_text(out["offload"])
    return out, text + bands_text(out["bands"])


def client_json(args: argparse.Namespace, r, wl: Workload) -> dict:
    """The benchmark client the run simulated (None: not a client's streams), its warm-up left out of the means,
    and the streams one simulated attention-DP rank served."""
    client = benchmark_client(args)
    if client is None:
        return {"client": None, "warmup_requests": 0, "clients_per_rank": None, "data_parallel_size":
                r.deployment.data_parallel_size}  # fmt: skip
    return {
        "client": client,
        "warmup_requests": int(wl.extra.get("warmup_requests", 0)),
        "clients_per_rank": clients_per_rank(args, r),
        "data_parallel_size": r.deployment.data_parallel_size,
    }


def _ms(stat: LatencyStats) -> str:
    return "  ".join(f"{k} {'–' if v is None else f'{v * 1e3:,.1f}':>9}" for k, v in dataclasses.asdict(stat).items())


def _text(s: ServingSummary, r, engine: str, policy: str) -> str:
    good = (
        ""
        if s.slo_attainment is None or (s.slo_ttft_s is None and s.slo_tpot_s is None)
        else f"; goodput {s.goodput_requests_per_s:,.2f} req/s ({s.slo_attainment:.1%} met the SLO)"
    )
    lines = [
        f"{r.model.name} on {r.gpu.id} (TP={r.deployment.tensor_parallel_size}), engine {engine} "
        f"(scheduler policy {policy}), one replica, seed {s.seed}",
        f"  traffic: {s.source}",
        f"  {s.completed:,} of {s.num_requests:,} completed, {s.rejected:,} rejected "
        f"({s.rejected_queue_full:,} queue full, {s.rejected_too_long:,} too long); "
        f"{s.simulated_s:,.1f} s simulated in {s.wall_s:.2f} s",
        "  latency (ms)",
    ]
    for label, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("end-to-end", "e2e_s"), ("queue wait", "queue_s")):
        lines.append(f"    {label:<11} {_ms(getattr(s, key))}")
    tput = s.throughput_tokens_per_s or 0.0
    lines += [
        f"  throughput {tput:,.0f} output tokens/s, {s.throughput_requests_per_s or 0:,.2f} req/s{good}",
        f"  KV use mean {s.mean_kv_use:.1%}, peak {s.peak_kv_use:.1%} of {s.kv_pool_tokens:,} tokens; "
        f"mean batch {s.mean_running:,.1f}, max queue {s.max_waiting:,}",
        f"  preemptions {s.preemptions:,}, prefix hit rate {s.prefix_hit_rate:.1%}",
        f"  engine limits: max_num_seqs {s.max_num_seqs:,}, max_num_batched_tokens "
        f"{s.max_num_batched_tokens:,}"
        + (" (max_num_seqs reached: it capped the batch)" if s.max_running >= s.max_num_seqs else ""),
    ]
    return "\n".join(lines)


def parse_simulate(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="servingplan simulate")
    add_simulate_args(parser)
    return parser.parse_args(argv)


def simulate_argv(argv: list[str]) -> dict:
    """`servingplan simulate ARGV --json` as a dict, without printing: what a user gets for these flags (the
    accuracy benchmarks and `validate` predict each measured row through it)."""
    return simulate_result(parse_simulate(argv))[0]


def run_inputs(argv: list[str], profile=None) -> tuple[Replica, Workload]:
    """The replica and the traffic `simulate ARGV` runs, a benchmark client timed under efficiency `profile` (None:
    data/efficiency.yaml's): the efficiency fit traces a measured row's run from the same flags."""
    args = parse_simulate(argv)
    _check_flags(args)
    r = resolved_from_args(args)
    wl = workload_from_args(args, r, PerfModel(r, profile=profile))
    return Replica(r, settings_from_args(args, r)), wl
