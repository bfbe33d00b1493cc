"""Flags the technique subcommands share: the request lengths (a what-if needs a typical request, not max_model_len)."""

from __future__ import annotations

import argparse

from planner.core.errors import InputError


def add_request_args(p: argparse.ArgumentParser, batch_default: int | None = 32) -> None:
    g = p.add_argument_group("request")
    g.add_argument("--input-tokens", type=int, default=2000, help="prompt tokens per request (default 2000)")
    g.add_argument("--output-tokens", type=int, default=300, help="output tokens per request (default 300)")
    if batch_default is not None:
        g.add_argument(
            "--batch", type=int, default=batch_default, help=f"requests decoding together (default {batch_default})"
        )


def positive(args: argparse.Namespace, *names: str) -> None:
    """Raise InputError naming the first flag that is not a positive number."""
    for name in names:
        value = getattr(args, name)
        if value is None or not value > 0:
            raise InputError("--" + name.replace("_", "-"), "must be positive")


def request_tokens(args: argparse.Namespace) -> int:
    """Tokens a request holds at its end: --context when given, else input + output."""
    positive(args, "input_tokens", "output_tokens")
    return args.context or args.input_tokens + args.output_tokens


def decode_context(args: argparse.Namespace) -> int:
    """Mean cached context over the generation: input + output / 2 (or --context when given)."""
    positive(args, "input_tokens", "output_tokens")
    return args.context or args.input_tokens + args.output_tokens // 2
