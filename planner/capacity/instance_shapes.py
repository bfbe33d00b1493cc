"""The instance shapes the disaggregated pools are sized over: TP-only shapes, the scenario's own layout and the
published xPyD layouts' shapes, those vLLM can start (planner.capacity.disagg module note)."""

from __future__ import annotations

from planner.capacity.published_layouts import published_shapes
from planner.core.errors import InputError
from planner.core.scenario import Resolved, Scenario, resolve
from planner.memory.plan import TP_DEGREES, plan_memory

# in both faces' words (issue 27 #6: the app said "see `memory`", a CLI subcommand)
NO_SHAPE = (
    "no TP, DP or PP shape of this model starts on this GPU: it needs a larger GPU, a smaller weight precision or a "
    "lower max_model_len (`servingplan memory --suggest`, or the app's Does it fit? page, lists the nearest fixes)"
)


def instance_shapes(s: Scenario, tps: tuple[int, ...] = TP_DEGREES) -> list[Resolved]:
    """One-instance scenarios vLLM can start: TP-only shapes plus the scenario's own layout (module note)."""
    dep = s.deployment
    layouts = [
        dict(
            tensor_parallel_size=tp,
            pipeline_parallel_size=1,
            data_parallel_size=1,
            enable_expert_parallel=False,
            ep_size=None,
        )
        for tp in tps
    ]
    own = dict(
        tensor_parallel_size=dep.tensor_parallel_size,
        pipeline_parallel_size=dep.pipeline_parallel_size,
        data_parallel_size=dep.data_parallel_size,
        enable_expert_parallel=dep.enable_expert_parallel,
        ep_size=dep.ep_size,
    )
    if own not in layouts:
        layouts.append(own)
    for shape in published_shapes(s.model, s.gpu or ""):  # layouts others ran and measured
        published = dict(
            tensor_parallel_size=shape.tp,
            pipeline_parallel_size=1,
            data_parallel_size=shape.dp,
            enable_expert_parallel=shape.ep > 1,
            ep_size=None if shape.ep in (1, shape.tp * shape.dp) else shape.ep,
        )
        if published not in layouts and (shape.tp * shape.dp) % shape.ep == 0:
            layouts.append(published)
    out = []
    for layout in layouts:
        d = dep.model_copy(update=layout)
        d = d.model_copy(update={"num_gpus": d.gpus_per_replica})
        try:
            r = resolve(s.model_copy(update={"deployment": d}))
        except InputError:  # heads not divisible by TP
            continue
        plan = plan_memory(r)
        if plan.fits and plan.num_gpu_blocks > 0:
            out.append(r)
    return out
