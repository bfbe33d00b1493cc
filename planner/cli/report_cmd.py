"""`python -m planner report`: the sizing report of a scenario (every input and output) on stdout."""
from __future__ import annotations

import sys

from planner.cli.scenario_args import add_scenario_args, scenario_from_args
from planner.report import report_rows, to_csv, to_json, to_markdown

FORMATS = ("csv", "json", "md")


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help="sizing report: every input and output of a scenario (CSV, JSON, Markdown)",
                              description="Write the sizing report to stdout: one row per figure, columns "
                                          "section,name,value,unit,note (values in SI units; the note holds the "
                                          "formula or assumption). Markdown from the CLI has no charts.")
    add_scenario_args(p)
    p.add_argument("--format", choices=FORMATS, default=None, help="csv (default), json or md; --json = --format json")
    p.set_defaults(func=run)


def run(args) -> int:
    fmt = args.format or ("json" if args.json else "csv")
    scenario = scenario_from_args(args)
    rows = report_rows(scenario)
    text = {"csv": to_csv, "json": to_json, "md": to_markdown}[fmt](rows)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
