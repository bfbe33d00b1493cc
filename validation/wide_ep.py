"""SGLang's published wide-EP DeepSeek-V3 throughputs on H100 (data/measurements/sglang_wide_ep/points.csv) against
the step-time model: each row as one instance of EP GPUs (attention TP 1 × DP = EP, experts over all of them), one
step of the stated batch per GPU, the throughput per node = GPUs per node × tokens per GPU / step time.

Prefill: one forward over `tokens_per_gpu` prompt tokens per GPU (tokens_per_gpu / input_tokens prompts each).
Decode: one step of `tokens_per_gpu` sequences per GPU, each reading `kv_tokens` cached tokens.
Both under DeepEP (the row's mode), two-batch overlap as stated, EPLB with the stated redundant experts, FP8
weights (the checkpoint's), SGLang's efficiency profile for Hopper.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache

from planner.core.paths import measurements_dir
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.efficiency import EfficiencyProfile
from planner.latency.perf_model import PerfModel

MODEL, GPU, ENGINE = "deepseek-ai/DeepSeek-V3", "H100-SXM", "sglang"


@dataclass(frozen=True)
class WideEPPoint:
    phase: str
    ep: int
    gpus_per_node: int
    tokens_per_gpu: int
    input_tokens: int
    kv_tokens: int
    two_batch_overlap: bool
    redundant_experts: int
    deepep_mode: str
    measured_tok_s_per_node: float
    notes: str

    @property
    def label(self) -> str:
        tbo = "TBO" if self.two_batch_overlap else "no TBO"
        return f"{self.phase} EP{self.ep} {self.tokens_per_gpu}/GPU in {self.input_tokens} ({tbo})"


@dataclass(frozen=True)
class WideEPResult:
    point: WideEPPoint
    predicted_tok_s_per_node: float
    step_s: float

    @property
    def error(self) -> float:
        return self.predicted_tok_s_per_node / self.point.measured_tok_s_per_node - 1.0


def load_points() -> list[WideEPPoint]:
    with open(measurements_dir() / "sglang_wide_ep" / "points.csv", newline="") as f:
        return [
            WideEPPoint(
                row["phase"],
                int(row["ep"]),
                int(row["gpus_per_node"]),
                int(row["tokens_per_gpu"]),
                int(row["input_tokens"]),
                int(row["kv_tokens"]),
                row["two_batch_overlap"] == "true",
                int(row["redundant_experts"]),
                row["deepep_mode"],
                float(row["per_node_tok_s"]),
                row["notes"],
            )  # fmt: skip
            for row in csv.DictReader(f)
        ]


def deployment_for(p: WideEPPoint) -> Deployment:
    """The row's instance: TP 1 × DP = EP GPUs, DeepEP in the row's mode, TBO and EPLB as stated."""
    return Deployment(
        num_gpus=p.ep,
        tensor_parallel_size=1,
        data_parallel_size=p.ep,
        enable_expert_parallel=True,
        weights="fp8",
        max_model_len=p.input_tokens + max(p.kv_tokens, 1) + 1,
        max_num_seqs=max(p.tokens_per_gpu // max(p.input_tokens, 1), 1) if p.phase == "prefill" else p.tokens_per_gpu,
        moe_a2a_backend="deepep",
        deepep_mode=p.deepep_mode,
        enable_two_batch_overlap=p.two_batch_overlap,
        enable_eplb=p.redundant_experts > 0,
        ep_num_redundant_experts=p.redundant_experts,
    )


@cache
def scenario_for(p: WideEPPoint):
    """The row's resolved scenario: DeepSeek-V3 on H100 under SGLang, the row's deployment."""
    return resolve(Scenario(model=MODEL, gpu=GPU, deployment=deployment_for(p)).model_copy(update={"engine": ENGINE}))


_BASE: dict[WideEPPoint, PerfModel] = {}


def predict(p: WideEPPoint, profile: EfficiencyProfile | None = None) -> WideEPResult:
    """The row under SGLang's Hopper profile of data/efficiency.yaml, or under `profile` (the fit's inner loop)."""
    if profile is None:
        pm = PerfModel(scenario_for(p))
    else:
        if p not in _BASE:
            _BASE[p] = PerfModel(scenario_for(p), profile=profile)
        pm = _BASE[p].with_profile(profile)
    if p.phase == "prefill":
        step = float(pm.prefill(p.tokens_per_gpu / p.input_tokens, p.input_tokens).total_s)
    else:
        step = float(pm.decode(p.tokens_per_gpu, p.kv_tokens).total_s)
    return WideEPResult(p, p.gpus_per_node * p.tokens_per_gpu / step, step)


def results() -> list[WideEPResult]:
    return [predict(p) for p in load_points()]
