"""Speculative decoding as deployed, priced on a static-batch estimate: an EAGLE-3 head or an MTP module inside the
target (planner/sim/spec_heads.py), with an acceptance length from a NAMED source: the user's own measurement, or
a published row of data/spec_methods.yaml for this model. No source, no speed-up: nothing is assumed.

One engine step proposes k tokens with k head passes, then verifies them in one target pass over 1 + k tokens per
sequence, and emits the acceptance length L tokens per sequence on average (1 + accepted drafts):

    pass = verify(batch, 1 + k new tokens) + k × head pass,   head pass = draft_layers / layers × (step − overhead)
    priced speed-up = plain decode step / (pass / L),          TPOT with it = plain TPOT / speed-up

At a memory-bound batch the verify pass costs what a decode step costs and the overhead is small, so the speed-up
tends to the hand formula L / (1 + k × draft_layers / layers) (spec_heads.memory_bound_speedup: DeepSeek-V3's MTP,
L = 1.85, k = 1, 61 layers: 1.85 × 61/62 = 1.820, the report's "1.8 times TPS"). Both are reported.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.latency.metrics import Estimate, estimate
from planner.latency.perf_model import PerfModel
from planner.sim.spec_heads import (
    PublishedAcceptance,
    get_method,
    head_fraction,
    memory_bound_speedup,
    published_acceptance,
)
from planner.techniques.spec_decode import verify_step_s

USER_SOURCE = "your own measured acceptance length"


@dataclass(frozen=True)
class Acceptance:
    """An acceptance length and where it comes from."""

    acceptance_length: float  # tokens per verification pass
    k: int | None  # draft tokens per step of the measurement (None: not stated)
    source: str
    task: str | None = None


def published_for(method: str, model: str) -> list[PublishedAcceptance]:
    """The published rows of `method` measured on `model` (the preset id, e.g. deepseek-ai/DeepSeek-V3)."""
    return [row for row in published_acceptance(method) if row.model.lower() == model.lower()]


def acceptance_for(method: str, model: str, acceptance_length: float | None, task: str | None = None) -> Acceptance:
    """The user's value when given; else the one published row for this method, model (and task); else an
    InputError that says no source is known and lists the published rows (nothing is assumed)."""
    get_method(method)
    if acceptance_length is not None:
        return Acceptance(acceptance_length, None, USER_SOURCE)
    rows = published_for(method, model)
    if task is not None:
        rows = [row for row in rows if row.task.lower() == task.lower()]
    if len(rows) == 1:
        row = rows[0]
        return Acceptance(row.acceptance_length, row.k, f"{row.source} ({row.model}, {row.task})", row.task)
    known = "; ".join(f"{r.model} {r.task}: {r.acceptance_length:g}" for r in published_acceptance(method))
    if rows:
        tasks = ", ".join(row.task for row in rows)
        why = f"{model} has published {method} rows for several tasks ({tasks}): pick one"
        raise InputError("acceptance_task", why)
    raise InputError(
        "acceptance_length",
        f"no published {method} acceptance length for {model}, and none given: nothing is assumed; give your "
        f"measured one (published for other models, data/spec_methods.yaml: {known})",
    )


@dataclass(frozen=True)
class SpecEstimate:
    method: str
    method_name: str
    k: int
    acceptance_length: float
    acceptance_source: str
    head_fraction: float  # one draft pass as a share of the target's layer work: draft_layers / layers
    decode_step_s: float  # the plain decode step at the batch and mean context
    verify_step_s: float  # the target over 1 + k tokens per sequence
    head_pass_s: float
    speedup: float  # priced: decode step / (pass / acceptance length)
    speedup_memory_bound: float  # the hand formula L / (1 + k × fraction)
    tpot_s: float
    e2e_s: float
    throughput_tokens_per_s: float

    def to_dict(self) -> dict:
        return asdict(self)


def spec_estimate(r: Resolved, est: Estimate, method: str, k: int, acc: Acceptance) -> SpecEstimate:
    """`est` (a static batch) with speculative decoding by `method` proposing k tokens per step (module note)."""
    if not 1 <= k <= 32:
        raise InputError("spec_k", f"must be from 1 to 32, got {k}")
    if not 1.0 <= acc.acceptance_length <= k + 1:
        raise InputError("acceptance_length", f"must be from 1 to k + 1 = {k + 1} tokens per pass")
    pm = PerfModel(r)
    context = est.input_tokens + est.output_tokens // 2  # mean cached tokens over the decode
    dec = pm.decode(est.batch, context)
    step_s = float(dec.total_s)
    frac = head_fraction(method, r.model.num_layers)
    verify_s = float(verify_step_s(pm, est.batch, context, k))
    head_s = frac * (step_s - pm.overhead_s)
    speedup = step_s / ((verify_s + k * head_s) / acc.acceptance_length)
    tpot_s = est.tpot_s / speedup
    run_s, run_spec_s = (est.prefill_s + (est.output_tokens - 1) * t for t in (est.tpot_s, tpot_s))
    return SpecEstimate(
        method=method,
        method_name=get_method(method).name,
        k=k,
        acceptance_length=acc.acceptance_length,
        acceptance_source=acc.source,
        head_fraction=frac,
        decode_step_s=step_s,
        verify_step_s=verify_s,
        head_pass_s=head_s,
        speedup=speedup,
        speedup_memory_bound=memory_bound_speedup(acc.acceptance_length, k, frac),
        tpot_s=tpot_s,
        e2e_s=est.ttft_s + (est.output_tokens - 1) * tpot_s,
        throughput_tokens_per_s=est.throughput_tokens_per_s * run_s / run_spec_s,  # same tokens, shorter run
    )


def spec_on_scenario(
    r: Resolved, batch: int, input_tokens: int, output_tokens: int, method: str, k: int, acc: Acceptance
) -> tuple[Estimate, SpecEstimate]:
    """The static-batch estimate of (batch, lengths) without and with `method` (what the Techniques page draws)."""
    est = estimate(r, min(batch, r.deployment.max_num_seqs), input_tokens, output_tokens)
    return est, spec_estimate(r, est, method, k, acc)
