"""The speculative-decoding flags of `simulate`, `fleet` and `capacity`: a draft model or a head method, k, and
the drafts' acceptance (given, never assumed)."""

from __future__ import annotations

import argparse
import math

from planner.core.errors import InputError
from planner.sim.settings import SpecDecoding
from planner.sim.spec_heads import published_acceptance, spec_methods
from planner.techniques.spec_decode import alpha_from_acceptance_length


def add_spec_args(p: argparse.ArgumentParser) -> None:
    """--spec-model | --spec-method, --spec-k and --spec-alpha | --acceptance-length (simulate, fleet, capacity)."""
    d = p.add_argument_group("speculative decoding (off unless --spec-model or --spec-method)")
    d.add_argument("--spec-model", default=None, help="draft model: preset id or config.json path")
    d.add_argument(
        "--spec-method",
        default=None,
        choices=tuple(spec_methods()),
        help="a draft head inside the target instead of a draft model: eagle3 (EAGLE-3 head) or mtp (DeepSeek "
        "MTP module), one target layer per draft pass (data/spec_methods.yaml lists published acceptance lengths)",
    )
    d.add_argument("--spec-k", type=int, default=4, help="draft tokens per verification step (default 4)")
    a = d.add_mutually_exclusive_group()
    a.add_argument(
        "--spec-alpha",
        type=float,
        default=None,
        help="per-token acceptance rate of the drafts, 0..1 (measured; no default: give it or --acceptance-length)",
    )
    a.add_argument(
        "--acceptance-length",
        type=float,
        default=None,
        help="mean tokens per verification pass, 1..k+1, as EAGLE papers and vLLM's spec-decode metrics report it "
        "(converted to the per-token rate at --spec-k)",
    )


def _published_hint(method: str | None) -> str:
    """Published acceptance lengths of a head method, for the error that asks for one."""
    if method is None:
        return ""
    rows = [f"{r.model} {r.task}: {r.acceptance_length:g}" for r in published_acceptance(method)]
    return f"; published for {method} (data/spec_methods.yaml): " + "; ".join(rows) if rows else ""


def check_spec_args(args: argparse.Namespace) -> None:
    """The speculative-decoding flags: a method or a draft, and an acceptance given (never assumed); sets
    args.spec_alpha from --acceptance-length."""
    if args.spec_model is not None and args.spec_method is not None:
        raise InputError("--spec-method", "give a draft model (--spec-model) or a head method, not both")
    if args.spec_model is not None or args.spec_method is not None:
        if not 1 <= args.spec_k <= 32:
            raise InputError("--spec-k", f"must be from 1 to 32, got {args.spec_k}")
        if args.spec_alpha is None and args.acceptance_length is None:
            raise InputError(
                "--spec-alpha",
                "speculative decoding needs the drafts' acceptance: --spec-alpha (per token) or --acceptance-length "
                "(tokens per pass), measured or published for this draft, model and task (no default is assumed)"
                + _published_hint(args.spec_method),
            )
        if args.acceptance_length is not None:
            try:
                args.spec_alpha = alpha_from_acceptance_length(args.acceptance_length, args.spec_k)
            except InputError as err:
                raise InputError("--acceptance-length", err.message) from None
        if not (math.isfinite(args.spec_alpha) and 0 <= args.spec_alpha <= 1):
            raise InputError("--spec-alpha", f"must be from 0 to 1, got {args.spec_alpha:g}")
    elif args.spec_alpha is not None or args.acceptance_length is not None:
        raise InputError("--spec-alpha", "applies only with --spec-model or --spec-method")


def spec_from_args(args: argparse.Namespace) -> SpecDecoding | None:
    """The flags' speculative decoding (checked by check_spec_args), or None when off."""
    if args.spec_model is None and args.spec_method is None:
        return None
    return SpecDecoding(args.spec_model, args.spec_k, args.spec_alpha, args.spec_method)
