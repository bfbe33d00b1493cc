"""Serving engines as objects (data/engines.yaml): memory rule, scheduler policy, all-reduce algorithm, supported
weight formats, defaults and kernel path, each with its upstream source in the file.

    get_engine(engine)                 the Engine for a name (InputError naming `engine` when unknown)
    engine_supports(engine, weights)   may this engine run this weight format? (GGUF k-quants: llama.cpp only)
    scheduler_policy(engine)           the simulator's admission policy for this engine
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from planner.core.catalog import DATA_DIR, _read_yaml
from planner.core.errors import InputError

ENGINES_PATH = DATA_DIR / "engines.yaml"


@dataclass(frozen=True)
class Engine:
    id: str
    label: str
    memory: str
    policy: str  # planner.sim SchedulerConfig.policy
    allreduce: str  # custom | nccl | none
    formats: tuple[str, ...]
    defaults: dict = field(default_factory=dict)
    eager_layer_overhead_s: float = 0.0
    fp16_accumulate: bool = False  # 16-bit GEMMs accumulate in FP16 (GeForce parts run those at twice the rate)
    hopper_wgmma: bool = True  # Hopper-native warpgroup MMA kernels; False = Ampere-style mma.sync only
    issue_bound_gemv: bool = False  # batch-1 weight streaming limited per SM (profile sm_bytes_per_cycle applies)
    source: str = ""


@lru_cache(maxsize=1)
def engines() -> dict[str, Engine]:
    data = _read_yaml(ENGINES_PATH).get("engines") or {}
    out = {}
    for eid, e in data.items():
        out[eid] = Engine(
            id=eid,
            label=e["label"],
            memory=e["memory"],
            policy=e["policy"],
            allreduce=e["allreduce"],
            formats=tuple(e["formats"]),
            defaults=dict(e.get("defaults") or {}),
            eager_layer_overhead_s=float(e.get("eager_layer_overhead_s", 0.0)),
            fp16_accumulate=bool(e.get("fp16_accumulate", False)),
            hopper_wgmma=bool(e.get("hopper_wgmma", True)),
            issue_bound_gemv=bool(e.get("issue_bound_gemv", False)),
            source=" ".join(str(e.get("source", "")).split()),
        )
    return out


def get_engine(engine: str, field_name: str = "engine") -> Engine:
    table = engines()
    key = (engine or "").strip().lower()
    if key not in table:
        raise InputError(field_name, f"unknown engine {engine!r}; known: {', '.join(table)}")
    return table[key]


def engine_supports(engine: str, weights: str) -> bool:
    """True when `engine` runs weights in format `weights` (a precisions.yaml id); False for unknown engines."""
    e = engines().get((engine or "").lower())
    return e is not None and weights.lower() in e.formats


def scheduler_policy(engine: str) -> str:
    """The simulator's scheduler policy for this engine (a key of planner.sim.policies.POLICIES)."""
    return get_engine(engine).policy
