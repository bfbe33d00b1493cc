"""Command line: `servingplan SUBCOMMAND ...` (or `python -m planner SUBCOMMAND ...`).

Each subcommand lives in a module `planner/cli/<name>_cmd.py` exposing `register(subparsers)`, which adds the
parser(s) whose `func(args) -> int` runs it. To answer fast, only the chosen subcommand's module is imported: the
others appear in `--help` from the `COMMANDS` table below (name → module, one-line help; a test keeps it equal to
what the modules register). A `*_cmd` module missing from the table is still found and registered, only eagerly.
`servingplan app` starts the web app. Bad input raises `InputError(field, ...)`; `main` prints one line naming the
flag behind the field (planner/cli/flags.py) and exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import pkgutil
import sys

from planner.cli.flags import flag_for
from planner.cli.numbers import register_number_types
from planner.core.errors import InputError


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2 (argparse's own convention), and reads every
    `type=float` / `type=int` flag as a finite, bounded number (planner/cli/numbers.py)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        register_number_types(self)

    def error(self, message: str):  # noqa: D401 - argparse hook
        self.exit(2, f"error: {message}\n")


# name → (module in planner/cli, one-line help), in the order `--help` lists them.
COMMANDS = {
    "memory": ("memory_cmd", "weights, KV cache and how many requests fit"),
    "estimate": ("estimate_cmd", "latency and throughput of a static batch (roofline model)"),
    "batching": ("batching_cmd", "static vs continuous batching on a CSV of requests (times in decode steps)"),
    "simulate": ("simulate_cmd", "simulate one replica serving open-loop, closed-loop or trace traffic"),
    "fleet": ("fleet_cmd", "simulate N replicas behind a router (round robin, least load, prefix-aware)"),
    "capacity": ("capacity_cmd", "replicas and $ for a target rate at a p95 SLO (one deployment)"),
    "recommend": ("capacity_cmd", "rank every GPU × precision × TP that fits by cost at the SLO"),
    "disagg": ("disagg_cmd", "disaggregated prefill/decode pools vs aggregated, at the SLO"),
    "launch": ("launch_cmd", "the engine's launch command (and a Kubernetes manifest) for the layout"),
    "quant": ("quant_tp_lora_cmd", "every weight format: memory, KV headroom, concurrency, decode speed"),
    "tp": ("quant_tp_lora_cmd", "tensor parallelism 1/2/4/8: memory per GPU, TPOT, throughput"),
    "lora": ("quant_tp_lora_cmd", "multi-LoRA: adapter bytes and what GPU adapter slots cost"),
    "spec-decode": ("spec_decode_cmd", "speculative decoding: tokens per pass, speed-up, best k"),
    "prefix-cache": ("techniques_cmd", "prefix caching: TTFT, prefill FLOPs and KV blocks saved"),
    "paged": ("techniques_cmd", "PagedAttention vs contiguous reservation: concurrency and waste"),
    "flash-attn": ("techniques_cmd", "attention score-matrix memory without and with tiling"),
    "validate": ("validate_cmd", "predicted against measured for a CSV of published measurements"),
    "report": ("report_cmd", "sizing report: the plan and every input and output (CSV, JSON, Markdown)"),
    "walkthrough": ("walkthrough_cmd", "a primer worked example step by step (formula, numbers, result)"),
    "app": ("app_cmd", "start the web app (Streamlit) in a browser"),
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the full parser of the subcommand named in `argv` (every one when argv is None)."""
    parser = _Parser(prog="servingplan", description="servingplan: capacity planning for serving open LLMs")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    chosen = COMMANDS.get(_command_name(argv), ("", ""))[0]
    registered: set[str] = set()
    for name, (module, help_text) in COMMANDS.items():
        if name in subparsers.choices:
            continue
        if argv is None or module == chosen:
            _register(module, subparsers, registered)
        else:  # listed in --help and accepted as a choice; its flags are only built when it is the one chosen
            subparsers.add_parser(name, help=help_text, add_help=False)
    for module in _unlisted_modules():
        _register(module, subparsers, registered)
    return parser


def _command_name(argv: list[str] | None) -> str | None:
    """The subcommand in argv: its first word that is not an option (the top-level parser has no valued options)."""
    return next((a for a in (argv or []) if not a.startswith("-")), None)


def _register(module: str, subparsers, registered: set[str]) -> None:
    if module not in registered:
        registered.add(module)
        importlib.import_module(f"planner.cli.{module}").register(subparsers)


def _unlisted_modules() -> list[str]:
    """`*_cmd` modules not in COMMANDS (a subcommand added without a table row still works, imported eagerly)."""
    listed = {module for module, _ in COMMANDS.values()}
    found = (m.name for m in pkgutil.iter_modules(__path__))
    return sorted(name for name in found if name.endswith("_cmd") and name not in listed)


def emit(result: dict, as_json: bool, text: str) -> None:
    """Print a result as JSON (machine contract) or as the human text."""
    if as_json:  # strict JSON: a non-finite number (no rate, an unbounded ratio) is null, never Infinity or NaN
        print(json.dumps(_finite(result), indent=2, default=_json_default, allow_nan=False))
    else:
        print(text)


def _finite(value):
    """The result with every non-finite float (numpy's too) replaced by None, containers walked."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "item") and not hasattr(value, "__len__"):  # a numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _json_default(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "model_dump"):
        return value.model_dump()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "passes_unknown_args", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.unknown_args = unknown
    try:
        return int(args.func(args) or 0)
    except InputError as err:
        message = " ".join(err.message.split())  # one line, whatever a file's field held
        print(f"error: {flag_for(err.field)}: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early: not an error of ours
        sys.stdout = open(os.devnull, "w")
        return 0
