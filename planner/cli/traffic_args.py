"""Traffic flags for commands that search over the arrival rate (capacity, recommend): the traffic's shape
(profile, lengths, arrival process, request count, seed) without its rate, translated into a TrafficSpec.

`simulate` keeps its own flags (it takes one rate, users or a trace replay); the length flags here use the same
names and SPEC syntax so a command line moves between the two. Explicit lengths (--input-tokens, --output-tokens,
--input-dist, --output-dist) imply the custom profile, as they do in `simulate`.
"""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from planner.cli.work_budget import check_probe
from planner.core.errors import InputError, from_validation_error
from planner.core.workload import PROFILES, TrafficSpec
from planner.traffic.generators import LengthDist

DEFAULT_INPUT = "lognormal:mean=1000,sigma=0.8"
DEFAULT_OUTPUT = "lognormal:mean=200,sigma=0.8"
PROFILE_CHOICES = [p for p in PROFILES if p != "upload"]
LENGTH_FLAGS = ("input_tokens", "input_dist", "output_tokens", "output_dist")

MAX_SEARCH_REQUESTS = 100_000  # per simulated probe of a capacity search: ~20 probes stay within minutes


def add_length_args(group, note: str = "") -> None:
    """--input-tokens | --input-dist and --output-tokens | --output-dist: a fixed length or a SPEC, not both."""
    i = group.add_mutually_exclusive_group()
    i.add_argument("--input-tokens", type=int, help=f"{note}every prompt this long")
    i.add_argument("--input-dist", help=f"{note}prompt length SPEC (default {DEFAULT_INPUT})")
    o = group.add_mutually_exclusive_group()
    o.add_argument("--output-tokens", type=int, help=f"{note}every output this long")
    o.add_argument("--output-dist", help=f"{note}output length SPEC (default {DEFAULT_OUTPUT})")


def add_traffic_args(p: argparse.ArgumentParser, default_num_requests: int = 1000) -> None:
    g = p.add_argument_group("traffic (its shape; the rate is what the search finds)")
    g.add_argument(
        "--profile",
        default=None,
        choices=PROFILE_CHOICES,
        help="chat/code/rag: lengths from the Azure/Mooncake traces; custom: --input-dist/--output-dist "
        "(default chat; custom when --input-tokens/--output-tokens/--input-dist/--output-dist is "
        "given)",
    )
    g.add_argument("--trace", default=None, help="lengths (and timing) from this trace file instead of a profile")
    add_length_args(g, "custom: ")
    g.add_argument(
        "--arrival",
        default="poisson",
        choices=["poisson", "gamma", "constant", "trace"],
        help="arrival process (trace: a trace window's own timing, rescaled)",
    )
    g.add_argument("--cv", type=float, default=1.0, help="gamma arrivals: coefficient of variation")
    g.add_argument(
        "--num-requests",
        type=int,
        default=default_num_requests,
        help=f"requests per simulated probe (default {default_num_requests:,})",
    )
    g.add_argument("--seed", type=int, default=0, help="seed of lengths, arrivals and the simulator (default 0)")
    g.add_argument(
        "--prompt-pool",
        type=int,
        default=None,
        metavar="N",
        help="custom: draw each prompt at random from N distinct prompts, as aiperf's synthetic dataset does (a "
        "repeat is served from the prefix cache while the pool holds it); implies the custom profile",
    )
    g.add_argument(
        "--prefix-caching",
        action="store_true",
        help="reuse cached blocks (on by default as in vLLM V1; --no-enable-prefix-caching turns it off)",
    )
    c = p.add_argument_group(
        "sessions (traffic that comes back, custom lengths: each turn re-sends the history; the rate stays "
        "requests/s, sessions start at rate / turns)"
    )
    c.add_argument("--turns", type=int, default=None, help="turns per session (each re-sends the last prompt + answer)")
    c.add_argument(
        "--system-prompt-tokens", type=int, default=None, help="a system prompt this long, shared by every session"
    )
    c.add_argument("--think-time", type=float, default=None, help="mean think time before each next turn, s")
    c.add_argument("--first-input-tokens", type=int, default=None, help="the first turn's message, tokens")


def _length(tokens: int | None, spec: str | None, default: str, flag: str) -> str:
    if tokens is not None:
        if tokens < 1:
            raise InputError(flag.replace("dist", "tokens"), "must be at least 1")
        return f"fixed:{tokens}"
    LengthDist.parse(spec or default, flag)  # a bad SPEC is reported against its flag
    return spec or default


SESSION_FLAGS = ("turns", "system_prompt_tokens", "think_time", "first_input_tokens")


def _session_fields(args: argparse.Namespace) -> dict:
    """TrafficSpec's session fields from the flags (none given: no sessions)."""
    given = [f for f in SESSION_FLAGS if getattr(args, f, None) is not None]
    if not given:
        return {}
    for flag, low in (("turns", 1), ("system_prompt_tokens", 0), ("first_input_tokens", 1), ("think_time", 0)):
        value = getattr(args, flag, None)
        if value is not None and not value >= low:
            raise InputError("--" + flag.replace("_", "-"), f"must be at least {low}, got {value:g}")
    if given == ["think_time"]:
        raise InputError("--think-time", "applies only to sessions (--turns or --system-prompt-tokens)")
    first = args.first_input_tokens
    return dict(
        turns=args.turns,
        system_prompt_tokens=args.system_prompt_tokens or 0,
        think_time_s=args.think_time or 0.0,
        first_input=None if first is None else f"fixed:{first}",
    )


def traffic_from_args(args: argparse.Namespace) -> TrafficSpec:
    lengths = [f for f in LENGTH_FLAGS if getattr(args, f, None) is not None]
    session = _session_fields(args)
    if session and (args.trace or args.profile not in (None, "custom")):
        raise InputError("--turns", "sessions take custom lengths (--input-tokens/--input-dist), not a trace profile")
    pool = getattr(args, "prompt_pool", None)
    if pool is not None and pool < 1:
        raise InputError("--prompt-pool", f"must be a whole number > 0, got {pool}")
    implied = lengths or session or pool is not None  # a pool of generated prompts is the custom profile's
    profile = "upload" if args.trace else args.profile or ("custom" if implied else "chat")
    custom = profile == "custom"
    if pool is not None and (not custom or session):
        raise InputError(
            "--prompt-pool",
            "applies to the custom profile's generated prompts (a trace profile and sessions carry their own)",
        )
    for flag in lengths:
        if not custom:  # explicit lengths imply the custom profile, but not against --profile chat or a trace
            raise InputError(
                "--" + flag.replace("_", "-"),
                f"gives the lengths itself, so it cannot be combined with "
                f"{'--trace' if args.trace else '--profile ' + profile} (lengths come from the trace)",
            )
    if custom and args.arrival == "trace":
        raise InputError("--arrival", "trace timing needs a trace profile")
    if not custom and args.arrival in ("gamma", "constant"):
        raise InputError("--arrival", "trace profiles take poisson or trace arrivals")
    if args.num_requests is not None and not 100 <= args.num_requests <= MAX_SEARCH_REQUESTS:
        raise InputError(
            "--num-requests",
            f"must be from 100 (percentiles need requests) to {MAX_SEARCH_REQUESTS:,} per probe (a search runs "
            f"10-20 probes), got {args.num_requests:,}",
        )
    prompt = _length(args.input_tokens, args.input_dist, DEFAULT_INPUT, "--input-dist")
    output = _length(args.output_tokens, args.output_dist, DEFAULT_OUTPUT, "--output-dist")
    if args.trace is None:
        num_requests = args.num_requests or TrafficSpec.model_fields["num_requests"].default
        seed = min(max(args.seed or 0, 0), 2**32 - 1)
        check_probe(num_requests, LengthDist.parse(output, "--output-dist"), seed)
    try:
        return TrafficSpec(
            profile=profile,
            prompt=prompt,
            output=output,
            arrival=args.arrival,
            cv=args.cv,
            num_requests=args.num_requests,
            seed=args.seed,
            trace_path=args.trace or "",
            prefix_caching=args.prefix_caching,
            prompt_pool=pool or 0,
            **session,
        )
    except ValidationError as err:
        e = from_validation_error(err)
        flag = {"think_time_s": "--think-time", "first_input": "--first-input-tokens"}.get(e.field)
        raise InputError(flag or "--" + e.field.replace("_", "-"), e.message) from None
