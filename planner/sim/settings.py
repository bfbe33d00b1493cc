"""How one replica runs: its engine, its limits and the server's runtime knobs, in one frozen object.

`ServerSettings.of(r)` reads them from a resolved scenario (the engine it carries; max_num_seqs,
max_num_batched_tokens and prefix caching from its Deployment; max_model_len as resolved); keywords change any of
them. Every serving run, probe, sweep, capacity search and page takes this object instead of loose keyword
arguments, so a knob cannot be forgotten on one path and applied on another. `planner.sim.serving.Replica` pairs
it with the resolved scenario and derives the memory plan, step-cost model and scheduler configuration once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from planner.core.engine import Engine
from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.sim.offload_plan import KVOffload


@dataclass(frozen=True)
class SpecDecoding:
    """Speculative decoding on the server: a draft model, or a draft head inside the target (`method`: EAGLE-3,
    MTP; planner/sim/spec_heads.py), proposing k tokens, each accepted with probability alpha."""

    draft_model: str | None  # a preset id or a config.json path; None with a method
    k: int  # draft tokens per verification step
    alpha: float  # per-token acceptance rate
    method: str | None = None  # "eagle3" or "mtp" (data/spec_methods.yaml) instead of a draft model

    def __post_init__(self):
        if (self.draft_model is None) == (self.method is None):
            raise InputError("spec_model", "speculative decoding needs a draft model or a method, not both")
        if self.k < 1:
            raise InputError("spec_k", "must be at least 1 draft token")
        if not 0.0 <= self.alpha <= 1.0:
            raise InputError("spec_alpha", "must be between 0 and 1")


@dataclass(frozen=True)
class ServerSettings:
    """How one replica runs (module note)."""

    engine: Engine
    max_num_seqs: int  # most requests running at once
    max_num_batched_tokens: int  # token budget per step
    max_model_len: int  # longer requests (prompt + output) are rejected
    prefix_caching: bool
    max_queue: int | None = None  # most requests left waiting after a step; None = unbounded
    slo_ttft_s: float | None = None  # the goodput SLO the run counts requests against
    slo_tpot_s: float | None = None
    seed: int = 0
    spec: SpecDecoding | None = None
    scheduler_overrides: tuple[tuple[str, object], ...] = ()  # SchedulerConfig fields set directly (experiments)
    offload: KVOffload | None = None  # KV offload tiers (planner/sim/offload_plan.py); None = off

    @classmethod
    def of(cls, r: Resolved, **changes) -> ServerSettings:
        """The scenario's own settings (its engine and Deployment limits), with `changes` applied."""
        dep = r.deployment
        base = cls(
            engine=r.engine,
            max_num_seqs=dep.max_num_seqs,
            max_num_batched_tokens=dep.max_num_batched_tokens,
            max_model_len=r.max_model_len,
            prefix_caching=dep.enable_prefix_caching,
        )
        return base.with_(**changes)

    def with_(self, **changes) -> ServerSettings:
        """These settings with some fields changed (None for prefix_caching keeps the current value)."""
        if changes.get("prefix_caching", True) is None:
            changes.pop("prefix_caching")
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise InputError(sorted(unknown)[0], "not a server setting")
        return dataclasses.replace(self, **changes)

    def scheduler_fields(self) -> dict:
        """The SchedulerConfig fields these settings set beyond the scenario's (planner.sim.serving)."""
        out = {
            "max_num_seqs": self.max_num_seqs,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "max_model_len": self.max_model_len,
            "enable_prefix_caching": self.prefix_caching,
            "max_queue": self.max_queue,
            "slo_ttft_s": self.slo_ttft_s,
            "slo_tpot_s": self.slo_tpot_s,
        }
        if self.spec is not None:
            out.update(spec_k=self.spec.k, spec_alpha=self.spec.alpha)
        out.update(dict(self.scheduler_overrides))
        return out
