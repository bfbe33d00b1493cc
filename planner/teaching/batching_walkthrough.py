"""The primer's §6 walkthrough as steps: six requests on three slots, static against continuous batching
(planner.teaching.walkthroughs module note)."""

from __future__ import annotations

import string

from planner.batching.report import summarize, waits
from planner.batching.requests import make_requests
from planner.batching.step_model import run_pair
from planner.teaching.inputs import SixRequestsInputs
from planner.teaching.steps import Step


# -- §6 batching ----------------------------------------------------------------------------------------------
def _timeline(names: list[str], admitted, finish) -> str:
    return ", ".join(f"{n} {a}→{f}" for n, a, f in zip(names, admitted.tolist(), finish.tolist()))


def six_requests(i: SixRequestsInputs) -> list[Step]:
    """Primer §6: static against continuous batching in decode steps (planner.batching.step_model)."""
    n = len(i.output_tokens)
    names = list(string.ascii_uppercase[:n])
    req = make_requests([0] * n, i.output_tokens, names=names)
    runs = run_pair(req, i.slots, i.max_wait)
    s, c = summarize(runs["static"]), summarize(runs["continuous"])
    useful = s.useful_slot_steps
    steps = [
        Step(
            "1",
            "Useful slot-steps (one token each)",
            "sum of tokens needed",
            " + ".join(str(t) for t in i.output_tokens),
            useful,
            "slot-steps",
            0,
        )
    ]
    for key, summary, num_ in (("static", s, "2"), ("continuous", c, "3")):
        r = runs[key]
        how = (
            "a batch fills the slots and holds them until its longest finishes"
            if key == "static"
            else "a request takes the first free slot, every step"
        )
        steps.append(
            Step(
                num_,
                f"{key.capitalize()} batching: all done at step",
                how,
                f"admitted→finished: {_timeline(names, r.admitted, r.finish)}",
                summary.end_step,
                "steps",
                0,
            )
        )
    for key, summary, num_ in (("static", s, "4"), ("continuous", c, "5")):
        steps.append(
            Step(
                num_,
                f"{key.capitalize()}: GPU busy",
                "useful slot-steps / (slots × last step)",
                f"{useful} / ({i.slots} × {summary.end_step})",
                summary.gpu_busy * 100,
                "%",
                1,
            )
        )
    for key, summary, num_ in (("static", s, "6"), ("continuous", c, "7")):
        w = waits(runs[key]).tolist()
        steps.append(
            Step(
                num_,
                f"{key.capitalize()}: average wait",
                "mean of (step admitted − arrival)",
                f"({' + '.join(map(str, w))}) / {n} = {sum(w)}/{n}",
                summary.avg_wait,
                "steps",
                2,
            )
        )
    return steps
