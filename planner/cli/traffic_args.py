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
        "--prefix-caching",
        action="store_true",
        help="reuse cached blocks (on by default as in vLLM V1; --no-enable-prefix-caching turns it off)",
    )


def _length(tokens: int | None, spec: str | None, default: str, flag: str) -> str:
    if tokens is not None:
        if tokens < 1:
            raise InputError(flag.replace("dist", "tokens"), "must be at least 1")
        return f"fixed:{tokens}"
    LengthDist.parse(spec or default, flag)  # a bad SPEC is reported against its flag
    return spec or default


def traffic_from_args(args: argparse.Namespace) -> TrafficSpec:
    lengths = [f for f in LENGTH_FLAGS if getattr(args, f, None) is not None]
    profile = "upload" if args.trace else args.profile or ("custom" if lengths else "chat")
    custom = profile == "custom"
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
        )
    except ValidationError as err:
        e = from_validation_error(err)
        raise InputError("--" + e.field.replace("_", "-"), e.message) from None
