"""Numbers where they enter the CLI: every `type=float` flag finite and within float's comfortable range, every
`type=int` flag within 2^53, so 10^400, 1e309, 5e-324, inf and nan stop at the flag with one line.

`planner.cli._Parser` registers these as argparse's converters for `float` and `int`: every flag declared with
`type=float` or `type=int` in any subcommand (now or later) gets them without naming them. A flag's own range
(e.g. --target-rate 1e-6..1e7) is still checked by its subcommand; these bounds only keep the arithmetic finite.
"""

from __future__ import annotations

import argparse
import math

MAX_FLAG_MAGNITUDE = 1e15  # no rate, size, price or time the planner takes comes near it
MIN_FLAG_MAGNITUDE = 1e-12  # nonzero values below it (e.g. 5e-324) only under- or overflow what divides by them
MAX_FLAG_INT = 2**53  # the largest integer a float (what the engine computes in) holds exactly
MAX_NUMBER_CHARS = 40  # a number longer than this is a paste accident, not a value


def finite_float(text: str) -> float:
    """A flag's float: finite, 0 or 1e-12 <= |x| <= 1e15."""
    raw = str(text).strip()
    if len(raw) > MAX_NUMBER_CHARS:
        raise argparse.ArgumentTypeError(f"a number of at most {MAX_NUMBER_CHARS} characters, got {len(raw):,}")
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw[:20]!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{raw[:20]!r} is not a finite number")
    if value != 0 and not MIN_FLAG_MAGNITUDE <= abs(value) <= MAX_FLAG_MAGNITUDE:
        raise argparse.ArgumentTypeError(
            f"{raw[:20]} is out of range: use 0 or a magnitude from {MIN_FLAG_MAGNITUDE:g} to {MAX_FLAG_MAGNITUDE:g}"
        )
    return value


def bounded_int(text: str) -> int:
    """A flag's integer: a whole number written as one (as argparse's int), with |n| <= 2^53."""
    raw = str(text).strip()
    if len(raw) > MAX_NUMBER_CHARS:
        raise argparse.ArgumentTypeError(f"a number of at most {MAX_NUMBER_CHARS} characters, got {len(raw):,}")
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw[:20]!r} is not a whole number") from None
    if abs(value) > MAX_FLAG_INT:
        raise argparse.ArgumentTypeError(f"{raw[:20]} is out of range: at most {MAX_FLAG_INT:,} in magnitude")
    return value


def register_number_types(parser: argparse.ArgumentParser) -> None:
    """Make `type=float` / `type=int` on this parser (and its argument groups) mean the bounded converters."""
    parser.register("type", float, finite_float)
    parser.register("type", int, bounded_int)
