"""The nearest changes that make a scenario fit, each a whole scenario the user can load.

A deployment fits when vLLM would start (weights, activations and runtime leave a KV pool) and at least one request
of the scenario's length fits that pool. The nearest fixes change one thing, in the order a platform engineer
would try them: the largest max_model_len that fits (a power of two, or the requests' length; vLLM refuses to start
when its pool holds less than one max_model_len request), a smaller weight precision on the same GPUs, more GPUs
per replica (TP), then a GPU with more memory; for each kind, the first that fits (precisions by bits, TP upward,
GPUs by memory then price).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.catalog import gpus, weight_precisions
from planner.core.errors import InputError
from planner.core.precision import label_on
from planner.core.scenario import Scenario, resolve, with_deployment
from planner.memory.plan import TP_DEGREES, MemoryPlan, plan_memory

FIX_PRECISIONS = ("fp8", "int8", "awq-int4")  # smaller weights vLLM serves on every catalogue GPU (FP8: Marlin)


@dataclass(frozen=True)
class Fix:
    kind: str  # "precision", "TP" or "GPU"
    label: str
    scenario: Scenario
    requests: int  # requests of the scenario's length that then fit


def requests_that_fit(s: Scenario) -> int:
    """Requests of the scenario's length in vLLM's pool (0 when vLLM would not start or none fits)."""
    try:
        plan = plan_memory(resolve(s))
    except InputError:
        return 0
    return plan.paged_max_requests if plan.fits and plan.num_gpu_blocks > 0 else 0


def no_fix_advice(plan: MemoryPlan) -> str:
    """What can still work when no single change fits. Weights that alone exceed a GPU's budget are not helped by
    shorter requests or a lower max_model_len: they need more GPUs to spread over, fewer bits or a larger GPU."""
    if any(b.kind == "weights_exceed_budget" for b in plan.blockers):
        budget = plan.pool.budget_bytes
        need = -(-plan.weight_bytes // budget) if budget > 0 else 0  # ceil(weights / budget per GPU), KV not counted
        return (
            f"the weights alone ({plan.weight_bytes / 1e9:,.0f} GB) need more memory than any single change gives: "
            + (
                f"spread them over at least {need:,.0f} GPUs of this kind (TP × PP, more than one node), "
                if need
                else ""
            )
            + "use lower-precision weights, or a GPU with more memory (several of these at once)"
        )
    return "shorten the requests or lower max_model_len"


def _first(kind: str, options: list[tuple[str, Scenario]]) -> Fix | None:
    for label, s in options:
        n = requests_that_fit(s)
        if n >= 1:
            return Fix(kind, label, s, n)
    return None


def nearest_fixes(s: Scenario) -> list[Fix]:
    """At most one fix per kind (module note)."""
    d, r = s.deployment, resolve(s)
    bits = r.weights.bits_per_weight
    catalogue = weight_precisions()
    precisions = [p for p in FIX_PRECISIONS if p in catalogue and catalogue[p].bits_per_weight < bits]
    precision = [
        (
            f"{label_on(catalogue[p], bool(r.gpu.tflops_fp8))} weights",
            with_deployment(s, s.gpu, p, d.tensor_parallel_size, d.num_gpus),
        )
        for p in precisions
    ]
    tps = [t for t in TP_DEGREES if t > d.tensor_parallel_size]
    tp = [
        (f"TP {t} ({t} GPUs per replica)", with_deployment(s, s.gpu, d.weights, t, max(t, d.num_gpus // t * t)))
        for t in tps
    ]
    bigger = sorted(
        (g for g in gpus().values() if g.memory_gb > r.gpu.memory_gb), key=lambda g: (g.memory_gb, g.usd_per_hour)
    )
    gpu = [
        (f"{g.id} ({g.memory_gb:g} GB)", with_deployment(s, g.id, d.weights, d.tensor_parallel_size, d.num_gpus))
        for g in bigger
    ]
    ctx = -(-r.context_tokens // 1024) * 1024  # the request, rounded up to whole 1,024-token steps
    # the LARGEST max_model_len that fits: powers of two below the current one, down to the request itself
    lens = sorted({ctx} | {2**k for k in range(10, 31) if ctx < 2**k < r.max_model_len}, reverse=True)
    shorter = [
        (
            f"max_model_len {n:,}, the largest that fits (vLLM refuses a pool smaller than one max_model_len request)",
            s.model_copy(update={"deployment": d.model_copy(update={"max_model_len": n})}),
        )
        for n in lens
        if n < r.max_model_len
    ]
    found = [_first("max_model_len", shorter), _first("precision", precision), _first("TP", tp), _first("GPU", gpu)]
    return [f for f in found if f is not None]
