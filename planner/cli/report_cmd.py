"""`python -m planner report`: the sizing report of a scenario on stdout: the plan (capacity per replica, replicas,
$/hour, $ per million tokens, the SLO and whether it holds, the latency at the operating point) and every input
and output behind it. Takes the same traffic, target, SLO and price flags as `capacity`; `--rank` also searches
every deployment (as `recommend`) to name the runner-up."""

from __future__ import annotations

import sys

from planner.capacity.probe_workload import mean_request_tokens
from planner.capacity.recommend import recommend
from planner.cli.capacity_cmd import RANKING_NUM_REQUESTS
from planner.cli.scenario_args import scenario_from_args
from planner.cli.target_args import _add_common, _check, _prices, _slo
from planner.cli.traffic_args import traffic_from_args
from planner.core.scenario import DEFAULT_TARGET_RATE
from planner.report import report_rows, to_csv, to_json, to_markdown

FORMATS = ("csv", "json", "md")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="sizing report: the plan and every input and output (CSV, JSON, Markdown)",
        description="Write the sizing report to stdout: one row per figure, columns "
        "section,name,value,unit,note (values in SI units and USD; the note holds "
        "the formula or assumption). Markdown from the CLI has no charts.",
    )
    _add_common(p, 1000)  # the scenario, traffic, target, SLO and price flags of `capacity`
    target = next(a for a in p._actions if a.dest == "target_rate")
    target.required, target.default = False, DEFAULT_TARGET_RATE
    target.help = f"fleet traffic to serve, requests/s (default {DEFAULT_TARGET_RATE:g})"
    context = next(a for a in p._actions if a.dest == "context")
    context.help = (
        "tokens per request (prompt + output) for the memory rows; default: the traffic's mean request, as the "
        "app's report (max_model_len stays the model's context window unless --max-model-len)"
    )
    p.add_argument(
        "--rank",
        action="store_true",
        help=f"also rank every GPU × precision × TP (as `recommend`, {RANKING_NUM_REQUESTS} requests per "
        "probe) to report the runner-up; takes a minute",
    )
    p.add_argument("--format", choices=FORMATS, default=None, help="csv (default), json or md; --json = --format json")
    p.set_defaults(func=run)


def scenario_for_report(args):
    """The scenario with the command line's traffic, SLO, target, headroom and engine."""
    s, traffic = scenario_from_args(args), traffic_from_args(args)
    context = s.context_tokens or sum(mean_request_tokens(traffic))  # the app's report sizes this one request
    return s.model_copy(
        update={
            "context_tokens": context,
            "traffic": traffic,
            "slo": _slo(args),
            "target_rate": args.target_rate,
            "headroom": args.headroom,
        }
    )


def run(args) -> int:
    _check(args)
    fmt = args.format or ("json" if args.json else "csv")
    scenario, prices = scenario_for_report(args), _prices(args.price)
    ranking = None
    if args.rank:
        traffic = scenario.traffic.model_copy(update={"num_requests": RANKING_NUM_REQUESTS})
        ranking = recommend(
            scenario, scenario.target_rate, traffic, scenario.slo, headroom=scenario.headroom, prices=prices
        )
    rows = report_rows(scenario, ranking, prices)
    text = {"csv": to_csv, "json": to_json, "md": to_markdown}[fmt](rows)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
