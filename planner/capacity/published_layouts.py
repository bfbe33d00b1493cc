"""The xPyD layouts others ran and published for a model on a GPU: the disaggregated rows of
data/measurements/aiconfigurator/silicon_calibration.csv (ai-dynamo/aiconfigurator@095f58a5 silicon_sample.csv,
the calibration split; Apache-2.0), each with its prefill and decode instance shapes (attention TP × DP, EP) and,
where the row gives them, the instance counts X and Y (blank counts are read as one instance).

The disaggregated search (planner.capacity.disagg) takes these shapes as candidates beside its own TP-only ones, so
a layout that was run and measured is always among those it weighs.

Names: a row's system is the catalogue part (h100_sxm → H100-SXM, h200_sxm → H200, b200_sxm → B200, gb200 →
GB200); its model matches a preset by the last part of the name without a checkpoint suffix (-FP8, -NVFP4, -FP4),
DeepSeek-R1 as DeepSeek-V3 (the same config.json architecture).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache

from planner.core.paths import measurements_dir

SYSTEMS = {"h100_sxm": "H100-SXM", "h200_sxm": "H200", "b200_sxm": "B200", "gb200": "GB200"}
SAME_ARCHITECTURE = {"deepseek-r1": "deepseek-v3"}
SUFFIXES = ("-fp8", "-nvfp4", "-fp4")


@dataclass(frozen=True, order=True)
class Shape:
    """One instance: attention TP × DP GPUs, EP over its MoE layers."""

    tp: int
    dp: int
    ep: int

    @property
    def label(self) -> str:
        ep = f" EP{self.ep}" if self.ep > 1 else ""
        return f"TP{self.tp}" + (f" DP{self.dp}" if self.dp > 1 else "") + ep


@dataclass(frozen=True, order=True)
class PublishedLayout:
    prefill_instances: int
    prefill: Shape
    decode_instances: int
    decode: Shape
    backend: str

    @property
    def label(self) -> str:
        return f"{self.prefill_instances}P ({self.prefill.label}) + {self.decode_instances}D ({self.decode.label})"


def model_key(name: str) -> str:
    """The comparable part of a model name (module note)."""
    base = name.strip().split("/")[-1].lower()
    for suffix in SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return SAME_ARCHITECTURE.get(base, base)


def _size(text: str) -> int:
    try:
        return max(int(float(text)), 1)
    except ValueError:  # blank
        return 1


@lru_cache(maxsize=1)
def _rows() -> tuple[tuple[str, str, PublishedLayout], ...]:
    out = []
    with open(measurements_dir() / "aiconfigurator" / "silicon_calibration.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["mode"] != "disagg" or row["system"] not in SYSTEMS or not row["prefill_tp_size"]:
                continue
            shape = {
                role: Shape(*(_size(row[f"{role}_{c}"]) for c in ("tp_size", "attention_dp_size", "moe_ep_size")))
                for role in ("prefill", "decode")
            }
            layout = PublishedLayout(
                _size(row["prefill_num_workers"]), shape["prefill"], _size(row["decode_num_workers"]),
                shape["decode"], row["backend"],
            )  # fmt: skip
            out.append((model_key(row["model_path"]), SYSTEMS[row["system"]], layout))
    return tuple(out)


def published_layouts(model: str, gpu: str) -> list[PublishedLayout]:
    """The distinct xPyD layouts published for `model` (a preset id or name) on `gpu` (a catalogue id), sorted."""
    key = model_key(model)
    return sorted({lay for m, g, lay in _rows() if m == key and g == gpu})


def published_shapes(model: str, gpu: str) -> list[Shape]:
    """The distinct instance shapes of either role in those layouts."""
    return sorted({s for lay in published_layouts(model, gpu) for s in (lay.prefill, lay.decode)})
