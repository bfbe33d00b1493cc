"""`python -m planner walkthrough NAME`: a primer worked example as numbered steps, with inputs changeable by --set."""

from __future__ import annotations

from planner.cli import emit
from planner.core.errors import InputError
from planner.teaching.inputs import build_inputs
from planner.teaching.steps import Step
from planner.teaching.walkthroughs import WALKTHROUGHS, run_walkthrough


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "walkthrough",
        help="a primer worked example step by step (formula, numbers, result)",
        description="Print a worked example's steps. Names: "
        + ", ".join(f"{k} ({w.section} {w.title})" for k, w in WALKTHROUGHS.items()),
    )
    p.add_argument("name", choices=list(WALKTHROUGHS), metavar="NAME", help=", ".join(WALKTHROUGHS))
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="change an input (repeatable), e.g. --set tokens_per_request=8000",
    )
    p.add_argument("--json", action="store_true", help="print the inputs and steps as JSON")
    p.set_defaults(func=run)


def _overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        field, sep, value = pair.partition("=")
        if not sep or not field.strip():
            raise InputError("--set", f"expected FIELD=VALUE, got {pair!r}")
        out[field.strip()] = value.strip()
    return out


def run(args) -> int:
    w = WALKTHROUGHS[args.name]
    values = _overrides(args.set)
    unknown = [f for f in values if f not in w.inputs.model_fields]
    if unknown:
        raise InputError(f"--set {unknown[0]}", f"unknown input; {args.name} takes: {', '.join(w.inputs.model_fields)}")
    try:
        inputs = build_inputs(w.inputs, values)
    except InputError as err:
        raise InputError(f"--set {err.field}", err.message) from None
    steps = run_walkthrough(args.name, inputs)
    result = {
        "name": args.name,
        "title": w.title,
        "section": w.section,
        "inputs": inputs.model_dump(),
        "steps": [s.to_dict() for s in steps],
    }
    emit(result, args.json, _text(w.title, w.section, inputs, steps))
    return 0


def _text(title: str, section: str, inputs, steps: list[Step]) -> str:
    lines = [
        f"{title} (primer {section})",
        "inputs: " + ", ".join(f"{k}={v}" for k, v in inputs.model_dump().items()),
        "",
    ]
    for s in steps:
        lines += [f"{s.number:>3}. {s.title}", f"     {s.formula}", f"     = {s.substituted}", f"     = {s.result}"]
        if s.note:
            lines.append(f"     ({s.note})")
    return "\n".join(lines)
