"""Command line: `python -m planner SUBCOMMAND ...`.

Each subcommand lives in its own module `planner/cli/<name>_cmd.py` exposing
`register(subparsers)`, which adds a parser whose `func(args) -> int` runs it.
Modules are discovered here, so adding a subcommand never edits this file.
Bad input raises `InputError`; `main` prints one line naming the field and exits 2.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys

from planner.core.errors import InputError


# Engine-level fields a subcommand's flags feed, so an error raised deep in the engine still names the flag.
FIELD_FLAGS = {"rate_per_s": "--rate", "num_users": "--users", "num_requests": "--num-requests", "cv": "--cv",
               "think_time_s": "--think-time", "block_size": "--block-size", "max_num_seqs": "--max-num-seqs",
               "max_num_batched_tokens": "--max-num-batched-tokens", "max_queue": "--max-queue",
               "num_gpu_blocks": "--gpu-memory-utilization", "spec_k": "--k", "spec_alpha": "--alpha",
               "rel_tol": "--rel-tol"}


def flag_for(field: str) -> str:
    """The flag behind an engine field name (the field itself when it already is a flag or a file position)."""
    return FIELD_FLAGS.get(field, field)


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2 (argparse's own convention)."""

    def error(self, message: str):  # noqa: D401 - argparse hook
        self.exit(2, f"error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m planner", description="servingplan: capacity planning for serving open LLMs")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    package = importlib.import_module("planner.cli")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.endswith("_cmd"):
            importlib.import_module(f"planner.cli.{info.name}").register(subparsers)
    return parser


def emit(result: dict, as_json: bool, text: str) -> None:
    """Print a result as JSON (machine contract) or as the human text."""
    if as_json:
        print(json.dumps(result, indent=2, default=_json_default))
    else:
        print(text)


def _json_default(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "model_dump"):
        return value.model_dump()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as err:
        message = " ".join(err.message.split())  # one line, whatever a file's field held
        print(f"error: {flag_for(err.field)}: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early: not an error of ours
        sys.stdout = open(os.devnull, "w")
        return 0
