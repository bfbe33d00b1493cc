"""Engine efficiency profiles (data/efficiency.yaml): how close an engine gets to a GPU's achievable roofline.

A profile holds physical constants of one engine (planner.latency.perf_model uses them): the ceilings of achieved
HBM bandwidth and dense FLOP/s as fractions of what the part reaches and the work sizes at which half of each ceiling is
reached (small GEMMs and small weight reads reach less of peak: eff = e_max × w / (w + w_half)), attention's
fraction of 16-bit peak, the grouped-GEMM fraction of routed experts, the bandwidth fraction weight-only quantized
kernels (Marlin, GGUF k-quants) keep, fixed costs per step, per layer (kernel launches), per sequence (sampling,
attention metadata) and per token, the latency of one all-reduce, and the weight bytes a streaming multiprocessor
moves per clock (latency-bound matrix-vector kernels: SMs x clock x this caps their bandwidth). "What the part
reaches" is the datasheet times its microbenchmarked fraction (data/gpus.yaml achieved_*: stream bandwidth, large
GEMMs), so an engine's constants describe the engine, not the chip.
validation/fit_efficiency.py fits one set of constants per engine on all its published points (shared by every GPU),
then, where a GPU family has its own points, two correction factors for it (bandwidth and compute) with a tight
prior at 1.

Status of a prediction: "calibrated" when the engine has points on the GPU's family (its own correction applies),
"transferred" when the engine's shared constants come from other families but some engine was measured on this
family, "estimated" when nothing was measured on the family (a prediction from the datasheet alone), or when the
engine itself has no points (its profile is the `default` of another engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.core.catalog import DATA_DIR, _read_yaml
from planner.core.engine_defaults import ENGINES
from planner.core.errors import InputError, from_validation_error

EFFICIENCY_PATH = DATA_DIR / "efficiency.yaml"
FIT_FIELDS = (
    "matmul_efficiency",
    "attention_efficiency",
    "memory_efficiency",
    "step_overhead_s",
    "allreduce_latency_s",
    "moe_efficiency",
    "memory_half_bytes",
    "matmul_half_tokens",
    "layer_overhead_s",
    "seq_overhead_s",
    "token_overhead_s",
    "quant_memory_efficiency",
    "sm_bytes_per_cycle",
    "request_overhead_s",
    "frontend_latency_s",
    "eager_kernel_s",
    "first_token_lag_steps",
    "layer_seq_overhead_s",
)
STATUSES = ("calibrated", "transferred", "estimated")


class EfficiencyProfile(BaseModel):
    """Achieved fractions of the roofline and fixed costs for one engine on one GPU family (defaults: the old
    size-independent model, no per-layer/sequence/token costs, quantized kernels at full bandwidth)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    matmul_efficiency: float = Field(gt=0, le=1)  # linear layers: ceiling of achieved / dense peak FLOP/s
    attention_efficiency: float = Field(gt=0, le=1)  # attention FLOPs: achieved / 16-bit peak FLOP/s
    memory_efficiency: float = Field(gt=0, le=1)  # ceiling of achieved / peak HBM bandwidth
    step_overhead_s: float = Field(ge=0)  # fixed cost of one forward pass (scheduler, input preparation)
    allreduce_latency_s: float = Field(ge=0)  # one small all-reduce (one-shot) before its bytes; a ring pays it per hop
    moe_efficiency: float = Field(gt=0, le=1)  # routed experts' grouped GEMMs: fraction of matmul_efficiency
    memory_half_bytes: float = Field(default=0.0, ge=0)  # weight bytes per layer per GPU reaching half the ceiling
    matmul_half_tokens: float = Field(default=0.0, ge=0)  # tokens in a step (GEMM rows) reaching half the ceiling
    layer_overhead_s: float = Field(default=0.0, ge=0)  # per layer per step: kernel launches (CUDA-graph mode)
    seq_overhead_s: float = Field(default=0.0, ge=0)  # per sequence per step: sampling, scheduling, attention metadata
    token_overhead_s: float = Field(default=0.0, ge=0)  # per new token per step: embedding, rotary, small kernels
    quant_memory_efficiency: float = Field(default=1.0, gt=0, le=1)  # weight-only int4/k-quant kernels' bandwidth
    # weight bytes one SM (AMD: CU) streams per clock, for an engine whose GEMV kernels are issue-bound
    # (engines.yaml issue_bound_gemv): they reach SMs x clock x this before the HBM ceiling (64: no bound)
    sm_bytes_per_cycle: float = Field(default=64.0, gt=0)
    # once per request, on the way to its first token: input processing, KV allocation, sampler set-up
    request_overhead_s: float = Field(default=0.0, ge=0)
    # on the request path outside the engine's steps, once per request, before its first token reaches the client:
    # HTTP and the serving frontend (Dynamo's frontend and router, the API server), tokenisation, the hand-off to the
    # engine process and the first token's detokenisation and streaming; the GPU is not busy for it
    frontend_latency_s: float = Field(default=0.0, ge=0)
    # host dispatch of one kernel of a request's first (prompt) forward pass, which runs outside CUDA graphs (engines
    # capture graphs for decode batches only), counted for the MoE and MLA blocks' kernels, whose dispatch the GPU
    # waits for (layer_kernels.exposed_dispatch_kernels): on the request's path to its first token
    # (PerfModel.request_path_s)
    eager_kernel_s: float = Field(default=0.0, ge=0)
    # decode steps between the step that computes a request's first token and that token reaching the client: the
    # output pipeline runs behind the GPU (vLLM's async scheduling and output processor, TensorRT-LLM's overlap
    # scheduler, SGLang's detokenizer process: at least one step), plus tokens a client does not count as content
    # (special and channel tokens a parser strips). Every token of the stream arrives that late, so TTFT and
    # end-to-end grow by this many steps of the request's TPOT, TPOT does not (planner.sim.records.latencies)
    first_token_lag_steps: float = Field(default=0.0, ge=0)
    # per sequence per layer per step: the attention kernel's fixed work for each sequence (its thread blocks, page
    # table walk, split-K reduction), paid once per layer, so a model of fewer layers pays less per sequence
    layer_seq_overhead_s: float = Field(default=0.0, ge=0)
    status: Literal["calibrated", "transferred", "estimated", "partial"] = "calibrated"
    num_points: int = Field(default=0, ge=0)
    note: str = ""


@dataclass(frozen=True)
class ProfileChoice:
    """The profile a scenario runs with, and where it came from."""

    engine: str
    family: str
    profile: EfficiencyProfile
    source_key: str  # "vllm/hopper" or "vllm/default"
    measured_families: tuple[str, ...] = ()  # GPU families any engine of the fit had points on

    @property
    def status(self) -> str:
        """calibrated (own points), transferred (shared constants, family measured elsewhere) or estimated."""
        if not self.source_key.endswith("/default"):
            return "calibrated" if self.profile.status in ("calibrated", "partial") else self.profile.status
        if self.profile.status == "estimated":  # an engine without any points of its own
            return "estimated"
        return "transferred" if self.family.lower() in self.measured_families else "estimated"


def load_efficiency(path: Path | None = None) -> dict[str, dict[str, EfficiencyProfile]]:
    """engine -> family -> profile, validated (a bad entry names the file, engine, family and field)."""
    path = path or EFFICIENCY_PATH
    data = _read_yaml(path)
    engines = data.get("profiles")
    if not isinstance(engines, dict) or not engines:
        raise InputError(f"{path.name}: profiles", "must be a non-empty mapping engine -> family -> constants")
    out: dict[str, dict[str, EfficiencyProfile]] = {}
    for engine, families in engines.items():
        if not isinstance(families, dict) or "default" not in families:
            raise InputError(f"{path.name}: {engine}", "needs a mapping of families with a `default` profile")
        out[engine] = {}
        for family, values in families.items():
            try:
                out[engine][family] = EfficiencyProfile(**values)
            except (ValidationError, TypeError) as err:
                if isinstance(err, TypeError):
                    raise InputError(f"{path.name}: {engine}.{family}", "must be a mapping") from None
                raise from_validation_error(err, prefix=f"{path.name}: {engine}.{family}.") from None
    return out


@lru_cache(maxsize=1)
def profiles() -> dict[str, dict[str, EfficiencyProfile]]:
    return load_efficiency()


@lru_cache(maxsize=1)
def measured_families(path: Path | None = None) -> tuple[str, ...]:
    """GPU families with at least one calibration point (any engine), as the fit script recorded them."""
    return tuple(_read_yaml(path or EFFICIENCY_PATH).get("measured_families", []) or [])


def efficiency_summary(path: Path | None = None) -> dict:
    """The residual summary the fit script wrote next to the constants (for the README and the pages)."""
    return _read_yaml(path or EFFICIENCY_PATH).get("residuals", {})


def choose_profile(engine: str, family: str, table: dict | None = None, field: str = "engine") -> ProfileChoice:
    """The (engine, family) profile, else the engine's default (then marked estimated)."""
    table = table if table is not None else profiles()
    engine_key = engine.lower()
    if engine_key not in table:
        raise InputError(field, f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    families = table[engine_key]
    key = family.lower() if family.lower() in families else "default"
    return ProfileChoice(
        engine=engine_key,
        family=family,
        profile=families[key],
        source_key=f"{engine_key}/{key}",
        measured_families=measured_families(),
    )
