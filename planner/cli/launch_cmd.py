"""`servingplan launch`: the scenario's deployment as its engine launches it (a contract: keys `commands`, the
launch lines per role, and `manifest`, YAML text for --target k8s)."""

from __future__ import annotations

from planner.capacity.launch import TARGETS, launch_plan, served_model
from planner.capacity.launch_disagg import disagg_launch_plan
from planner.cli import emit
from planner.cli.disagg_cmd import add_layout_args, given_layout
from planner.cli.scenario_args import add_scenario_args, resolved_from_args, scenario_from_args


def register(subparsers) -> None:
    p = subparsers.add_parser("launch", help="the engine's launch command (and a Kubernetes manifest) for the layout")
    add_scenario_args(p)
    g = p.add_argument_group("launch")
    g.add_argument(
        "--target",
        default="shell",
        choices=TARGETS,
        help="shell lines, or a manifest too: k8s (Deployment; LeaderWorkerSet across nodes), "
        "lws (LeaderWorkerSet), kserve (InferenceService)",
    )
    add_layout_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    layout = given_layout(args)
    if layout is None:
        plan = launch_plan(resolved_from_args(args), args.engine, args.target, served_model(args.model))
    else:  # xPyD: prefill and decode lines
        s = scenario_from_args(args).model_copy(update={"engine": args.engine})
        plan = disagg_launch_plan(s, args.engine, *layout, args.transfer_engine, args.target)
    text = plan.script + (f"---\n{plan.manifest}" if plan.manifest else "")
    emit(plan.to_dict(), args.json, text.rstrip("\n"))
    return 0
