"""The user's scenario: which model, on which GPU, at which precision, with which engine settings, serving which
traffic (profile and lengths, target rate) at which SLO.

It is the one object the sidebar edits, the URL and a saved JSON carry, and every page reads. Every field has a
default, so a link or file saved before a field existed still loads. `resolve` turns
ids into specs (raising InputError naming the field when an id is unknown).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, field_validator

from planner.core.bounded import BoundedModel
from planner.core.catalog import DEFAULT_GPU, DEFAULT_MODEL, get_gpu, get_kv_precision, get_model, get_weight_precision
from planner.core.engine import Engine, engine_for
from planner.core.engine_defaults import DEFAULT_ENGINE, ENGINES, is_known_engine
from planner.core.gpu_spec import GPUSpec, custom_gpu
from planner.core.head_split import check_head_split
from planner.core.model_spec import ModelSpec
from planner.core.precision import KVPrecision, WeightPrecision, checkpoint_kv_dtype, label_on, resolve_kv_bytes
from planner.core.specs import Deployment
from planner.core.workload import SLO, TrafficSpec

DEFAULT_TARGET_RATE = 50.0  # requests/s the fleet must serve
DEFAULT_HEADROOM = 1.2  # provision target × headroom (planner.capacity.replicas uses the same default)


class Calibration(BoundedModel):
    """Efficiency constants the user fitted on their own benchmark results, for one engine and GPU family.

    `profile` holds the constants by field name (an EfficiencyProfile's non-default fields): the core package does
    not know the step-time model's constants, planner.latency.calibration validates them where they are used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: str
    gpu_family: str
    profile: dict[str, int | float | str]
    source: str = "your benchmark results"

    @field_validator("profile", mode="before")
    @classmethod
    def profile_is_a_mapping_of_constants(cls, v):
        return v.model_dump(exclude_defaults=True) if isinstance(v, BaseModel) else v  # a fitted profile as given

    def applies_to(self, engine: str, gpu_family: str) -> bool:
        return self.engine.lower() == engine.lower() and self.gpu_family.lower() == gpu_family.lower()


class Scenario(BoundedModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = DEFAULT_MODEL  # a preset id or a config.json path
    model_spec: ModelSpec | None = None  # an uploaded/pasted/manual model; overrides `model`
    gpu: str = DEFAULT_GPU
    gpu_memory_gb: float | None = Field(default=None, ge=0.1, le=100_000)  # a custom GPU of this many decimal GB
    deployment: Deployment = Field(default_factory=Deployment)
    context_tokens: PositiveInt | None = None  # tokens per request (prompt + output); None = max_model_len
    engine: str = DEFAULT_ENGINE  # runs the scenario: memory rule, scheduler, efficiency profile (Resolved.engine)
    calibration: Calibration | None = None  # the user's fitted constants (Validation page); None = data/efficiency.yaml
    traffic: TrafficSpec = Field(default_factory=TrafficSpec)  # profile, lengths, arrival process, seed
    slo: SLO = Field(default_factory=SLO)
    target_rate: PositiveFloat = DEFAULT_TARGET_RATE  # fleet traffic to serve, requests/s
    headroom: float = Field(default=DEFAULT_HEADROOM, ge=1.0, le=10.0)  # provision target × headroom

    @field_validator("engine")
    @classmethod
    def engine_is_known(cls, v: str) -> str:
        if not is_known_engine(v):  # ENGINES + calibration-only profiles (splitwise)
            raise ValueError(f"unknown engine {v!r}; known: {', '.join(ENGINES)}")
        return v


@dataclass(frozen=True)
class Resolved:
    """A scenario with its ids looked up: the specs every calculation needs, its engine and its traffic.

    Nothing below the CLI and UI assumes an engine: a calculation reads `engine` (memory rule, scheduler policy,
    efficiency profile, kernel path). `with_engine` gives the same scenario under another engine."""

    model: ModelSpec
    gpu: GPUSpec
    deployment: Deployment
    weights: WeightPrecision
    kv: KVPrecision
    kv_bytes: float  # bytes per cached value
    max_model_len: int
    context_tokens: int
    engine: Engine
    traffic: TrafficSpec
    slo: SLO
    target_rate: float  # fleet traffic to serve, requests/s
    headroom: float  # provision target × headroom
    calibration: Calibration | None = None


def resolve(s: Scenario) -> Resolved:
    model = s.model_spec or get_model(s.model)
    if s.gpu_memory_gb is not None:
        gpu = custom_gpu(s.gpu_memory_gb, like=get_gpu(s.gpu) if s.gpu else None)
    else:
        gpu = get_gpu(s.gpu)
    dep = s.deployment
    check_head_split(model, dep.tensor_parallel_size, s.engine)  # the engine's own refusal, in its words
    weights = get_weight_precision(dep.weights)
    if label_on(weights, bool(gpu.tflops_fp8)) != weights.label:  # FP8 on Ampere and older: weight-only
        weights = weights.model_copy(update={"label": label_on(weights, False)})
    kv = get_kv_precision(checkpoint_kv_dtype(dep.kv_cache_dtype, model.kv_cache_quant))
    max_len = dep.max_model_len or model.max_position_embeddings
    engine = engine_for(s.engine)
    defaults = engine.batch_defaults(gpu)
    if dep.max_num_seqs is None or dep.max_num_batched_tokens is None:  # the engine's defaults for this GPU
        dep = dep.model_copy(
            update={
                "max_num_seqs": dep.max_num_seqs or defaults.max_num_seqs,
                "max_num_batched_tokens": dep.max_num_batched_tokens or defaults.max_num_batched_tokens,
            }
        )
    return Resolved(
        model=model,
        gpu=gpu,
        deployment=dep,
        weights=weights,
        kv=kv,
        kv_bytes=resolve_kv_bytes(kv, weights),
        max_model_len=max_len,
        context_tokens=s.context_tokens or max_len,
        engine=engine,
        traffic=s.traffic,
        slo=s.slo,
        target_rate=s.target_rate,
        headroom=s.headroom,
        calibration=s.calibration,
    )


def with_engine(r: Resolved, engine: str) -> Resolved:
    """The same resolved scenario run by another engine (a page's own engine choice, a published point's engine).
    The batch limits stay as resolved: set them on the Scenario to get the other engine's defaults."""
    return dataclasses.replace(r, engine=engine_for(engine))


def resolve_draft(r: Resolved, draft: ModelSpec) -> Resolved:
    """The draft as a second scenario: same GPUs, deployment and KV dtype, its own architecture."""
    return dataclasses.replace(r, model=draft, max_model_len=min(r.max_model_len, draft.max_position_embeddings))


MAX_SIDEBAR_GPUS = 1024  # the sidebar's GPUs field


def with_deployment(s: Scenario, gpu: str, weights: str, tp: int, num_gpus: int | None = None) -> Scenario:
    """The scenario on another GPU, precision and TP (all replicas' GPUs when they fit the sidebar's field)."""
    gpus = num_gpus if num_gpus and num_gpus <= MAX_SIDEBAR_GPUS else tp
    dep = s.deployment.model_copy(update={"weights": weights, "tensor_parallel_size": tp, "num_gpus": gpus})
    return s.model_copy(update={"gpu": gpu, "gpu_memory_gb": None, "deployment": dep})
