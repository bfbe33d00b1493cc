"""Speculative decoding as deployed: EAGLE-3 draft heads and multi-token-prediction (MTP) modules.

Engines run these inside the target model instead of a separate draft LLM (vLLM `--speculative-config
method=eagle3|deepseek_mtp`, SGLang `--speculative-algorithm EAGLE3|EAGLE`). A head is `draft_layers` transformer
layers of the target's width fed the target's hidden states, run k times per engine step; one pass therefore
costs about draft_layers / L of a target decode step's layer work (L = the target's layers), without the
engine's per-step overhead, which the target's step already pays:

    head pass(batch) = draft_layers / L x (target step(batch) - step overhead)

Left out: the draft's LM head (EAGLE-3 drafts over a reduced vocabulary; MTP shares the target's), tree drafts
(EAGLE's top-k trees verify several branches; a chain of k is modelled) and acceptance that varies by position.

At a small, memory-bound batch the verify step over 1 + k tokens costs what a decode step costs (every weight is
read once either way), so the speed-up in tokens per second is

    speed-up = acceptance length / (1 + k x draft_layers / L)

DeepSeek-V3 by hand (arXiv:2412.19437 §5.4.3: one MTP module, second token accepted 85-90%): k = 1, 61 layers,
acceptance length 1.85 -> 1.85 / (1 + 1/61) = 1.82x, the report's "1.8 times TPS".
Published acceptance lengths per method, model and task: data/spec_methods.yaml (each row cited).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import yaml

from planner.core.errors import InputError
from planner.core.paths import data_path


@dataclass(frozen=True)
class SpecMethod:
    id: str
    name: str
    draft_layers: int  # transformer layers of the target's width per draft pass
    engines: str
    source: str


@dataclass(frozen=True)
class PublishedAcceptance:
    method: str
    model: str
    task: str
    k: int | None  # draft tokens per step of the measurement (None: not stated with the table)
    acceptance_length: float  # tokens per verification pass, 1 + accepted drafts
    source: str
    reported_speedup: float | None = None


@lru_cache(maxsize=1)
def _data() -> dict:
    return yaml.safe_load(data_path("spec_methods.yaml").read_text(encoding="utf-8"))


def spec_methods() -> dict[str, SpecMethod]:
    return {k: SpecMethod(id=k, **v) for k, v in _data()["methods"].items()}


def get_method(method: str) -> SpecMethod:
    methods = spec_methods()
    if method not in methods:
        raise InputError("spec_method", f"unknown method {method!r}; use one of {', '.join(methods)}")
    return methods[method]


def published_acceptance(method: str | None = None) -> list[PublishedAcceptance]:
    """The published acceptance lengths (of one method, or all), in the file's order."""
    rows = [PublishedAcceptance(**row) for row in _data()["acceptance"]]
    return [r for r in rows if method is None or r.method == method]


def head_fraction(method: str, num_layers: int) -> float:
    """draft_layers / L: one draft pass as a share of the target's layer work."""
    return get_method(method).draft_layers / num_layers


def memory_bound_speedup(acceptance_length: float, k: int, fraction: float) -> float:
    """acceptance length / (1 + k x fraction): tokens per second against plain decoding at a memory-bound batch."""
    return acceptance_length / (1.0 + k * fraction)


class DraftHeadCost:
    """One draft-head pass as the simulator's draft StepCost: `fraction` of the target's step without its
    per-step overhead (module note)."""

    def __init__(self, pm, fraction: float):
        self.pm, self.fraction = pm, fraction

    def step_time_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs) -> float:
        target = self.pm.step_time_s(new_tokens, num_seqs, kv_read_tokens, attn_pairs) - self.pm.overhead_s
        return self.fraction * target
