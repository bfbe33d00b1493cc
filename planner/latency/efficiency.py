"""Engine efficiency profiles (data/efficiency.yaml): how close an engine gets to a GPU family's roofline.

A profile is six numbers, fitted per (engine, GPU family) by scripts/fit_efficiency.py on published measurements:
the fraction of dense peak FLOP/s that linear layers reach, the fraction attention reaches, the fraction of HBM
bandwidth reached, a fixed per-step overhead (kernel launches, scheduling, sampling) and the latency of one
tensor-parallel all-reduce per log2(TP) hop, and the fraction of
that matmul efficiency a mixture of experts' grouped GEMMs keep. A family without its own calibration borrows the engine's `default`
profile and is reported as "estimated".
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.core.catalog import DATA_DIR, _read_yaml
from planner.core.errors import InputError, from_validation_error

EFFICIENCY_PATH = DATA_DIR / "efficiency.yaml"
ENGINES = ("vllm", "tensorrt-llm")  # engines a user can pick; the file may hold more (calibration-only) profiles
DEFAULT_ENGINE = "vllm"
FIT_FIELDS = ("matmul_efficiency", "attention_efficiency", "memory_efficiency", "step_overhead_s",
              "allreduce_latency_s", "moe_efficiency")


class EfficiencyProfile(BaseModel):
    """Achieved fractions of the roofline and fixed costs for one engine on one GPU family."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    matmul_efficiency: float = Field(gt=0, le=1)  # linear layers: achieved / dense peak FLOP/s
    attention_efficiency: float = Field(gt=0, le=1)  # attention FLOPs: achieved / 16-bit peak FLOP/s
    memory_efficiency: float = Field(gt=0, le=1)  # achieved / peak HBM bandwidth
    step_overhead_s: float = Field(ge=0)  # fixed cost of one forward pass (launch, scheduling, sampling)
    allreduce_latency_s: float = Field(ge=0)  # one all-reduce, per log2(TP) hop, before its bytes
    moe_efficiency: float = Field(gt=0, le=1)  # routed experts' grouped GEMMs: fraction of matmul_efficiency
    status: Literal["calibrated", "partial", "estimated"] = "calibrated"
    num_points: int = Field(default=0, ge=0)
    note: str = ""


@dataclass(frozen=True)
class ProfileChoice:
    """The profile a scenario runs with, and where it came from."""

    engine: str
    family: str
    profile: EfficiencyProfile
    source_key: str  # "vllm/hopper" or "vllm/default"

    @property
    def status(self) -> str:
        """calibrated / partial for a family's own fit; estimated when the engine default stands in."""
        return "estimated" if self.source_key.endswith("/default") else self.profile.status


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


def efficiency_summary(path: Path | None = None) -> dict:
    """The residual summary the fit script wrote next to the constants (for the README and the pages)."""
    return _read_yaml(path or EFFICIENCY_PATH).get("residuals", {})


def choose_profile(engine: str, family: str, table: dict | None = None, field: str = "--engine") -> ProfileChoice:
    """The (engine, family) profile, else the engine's default (then marked estimated)."""
    table = table if table is not None else profiles()
    engine_key = engine.lower()
    if engine_key not in table:
        raise InputError(field, f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    families = table[engine_key]
    key = family.lower() if family.lower() in families else "default"
    return ProfileChoice(engine=engine_key, family=family, profile=families[key], source_key=f"{engine_key}/{key}")
