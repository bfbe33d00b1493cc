"""Cached computations behind the Techniques page: each reads only its arguments (the scenario as JSON)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from planner.core.catalog import get_model
from planner.core.scenario import Resolved, Scenario, resolve, resolve_draft
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel
from planner.techniques import flash_attention as fa
from planner.techniques import prefix_cache as pc
from planner.techniques import spec_decode as sd
from planner.techniques.lora import concurrency_vs_slots, lora_plan
from planner.techniques.paged_attention import compare, sample_lengths
from planner.techniques.quantization import compare_formats
from planner.techniques.tensor_parallel import compare_tp
from planner.traffic.traces import load_trace

SPEC_BATCHES = np.unique(np.round(np.geomspace(1, 1024, 40)).astype(int))
MONTE_CARLO_PASSES = 100_000


def prepare_widget_state(prompt: int, output: int, batch: int, max_model_len: int) -> None:
    """Defaults for the tabs' widgets, kept while their tab is hidden, and clamped to bounds that moved.

    Only the open tab draws its widgets, and Streamlit forgets the values of widgets it did not draw; re-assigning
    them each run keeps them. Widgets are then created without a default value (the session state holds it).
    """
    defaults = {
        "tech_alpha": 0.8,
        "tech_k": 4,
        "tech_prefix": min(1500, max(prompt - 1, 0)),
        "tech_hit": 1.0,
        "tech_sharing": 16,
        "tech_queue_ms": 40.0,
        "tech_prefill_rate": 10_000.0,
        "tech_paged_prompt": f"lognormal:mean={prompt},sigma=0.8",
        "tech_paged_output": f"lognormal:mean={output},sigma=0.8",
        "tech_reserve": max_model_len,
        "tech_paged_seed": 0,
        "tech_flash_len": min(prompt, max_model_len),
        "tech_flash_batch": batch,
        "tech_flash_block": 128,
        "tech_lora_rank": 16,
        "tech_lora_modules": ["q", "k", "v", "o"],
        "tech_max_loras": 4,
        "tech_lora_keep": batch,
    }
    for key, value in defaults.items():
        st.session_state[key] = st.session_state.get(key, value)
    bounds = {"tech_prefix": max(prompt - 1, 0), "tech_flash_len": max_model_len, "tech_reserve": max_model_len}
    for key, upper in bounds.items():
        if st.session_state[key] > upper:
            st.session_state[key] = upper
    if "tech_draft" in st.session_state:
        st.session_state["tech_draft"] = st.session_state["tech_draft"]


def resolved(scenario_json: str) -> Resolved:
    return resolve(Scenario.model_validate_json(scenario_json))


def engine_of(scenario_json: str) -> str:
    """The scenario's engine: its efficiency profile prices every technique, as `--engine` does in the CLI."""
    return Scenario.model_validate_json(scenario_json).engine


@st.cache_data(show_spinner=False, max_entries=16)
def draft_options(scenario_json: str) -> list[str]:
    return sd.draft_candidates(resolved(scenario_json).model)


@st.cache_data(show_spinner=False, max_entries=32)
def spec_decode(
    scenario_json: str, draft: str, alpha: float, k: int, batch: int, context: int, request: int
) -> tuple[sd.SpecDecodeReport, pd.DataFrame, float]:
    """The report at the batch, the speed-up against batch for a few k, and the seeded Monte Carlo tokens per pass."""
    r = resolved(scenario_json)
    d = resolve_draft(r, get_model(draft))
    report = sd.spec_decode_report(r, d, alpha, k, batch, context, request_tokens=request)
    tpm, dpm = PerfModel(r), PerfModel(d)
    rows = []
    for kk in sorted({1, 2, k, report.best_k, 8}):
        t = sd.timing(tpm, dpm, alpha, kk, SPEC_BATCHES, context)
        rows += [{"k": kk, "batch": int(b), "speedup": float(s)} for b, s in zip(t.batch, t.speedup)]
    return report, pd.DataFrame(rows), sd.simulate_tokens_per_pass(alpha, k, MONTE_CARLO_PASSES, seed=0)


@st.cache_data(show_spinner=False, max_entries=32)
def prefix(
    scenario_json: str,
    prompt: int,
    request: int,
    prefix_tokens: int,
    num_sharing: int,
    hit_rate: float,
    queue_wait_s: float,
    prefill_rate: float,
) -> pc.PrefixReport:
    return pc.prefix_report(
        resolved(scenario_json),
        prompt,
        request,
        prefix_tokens,
        hit_rate,
        num_sharing,
        queue_wait_s,
        prefill_rate,
    )


@st.cache_data(show_spinner="Reading the Mooncake trace…", max_entries=8)
def mooncake_hit_rate(pool_tokens: int) -> pc.TracePrefixReport:
    return pc.trace_prefix_report(load_trace("mooncake"), pool_tokens)


@st.cache_data(show_spinner=False, max_entries=32)
def paged(scenario_json: str, prompt_spec: str, output_spec: str, reserve: int, seed: int, samples: int = 2000):
    r = resolved(scenario_json)
    lengths = sample_lengths(prompt_spec, output_spec, samples, seed, r.max_model_len)
    return compare(r, lengths, reserve)


@st.cache_data(show_spinner=False, max_entries=32)
def quant(scenario_json: str, request: int, batch: int) -> pd.DataFrame:
    return pd.DataFrame(compare_formats(resolved(scenario_json), request, batch))


@st.cache_data(show_spinner=False, max_entries=32)
def tp(scenario_json: str, batch: int, context: int, request: int) -> pd.DataFrame:
    return pd.DataFrame(compare_tp(resolved(scenario_json), batch, context, request_tokens=request))


@st.cache_data(show_spinner=False, max_entries=4)
def seventy_b_case(gpu: str) -> pd.DataFrame:
    """Llama-2-70B at FP16 on the scenario's GPU, TP 1/2/4/8 (the primer's 140 GB > 80 GB case)."""
    s = Scenario(model="meta-llama/Llama-2-70b-hf", gpu=gpu, deployment=Deployment(weights="fp16"))
    return pd.DataFrame(compare_tp(resolve(s), 1, 2150, request_tokens=2300))


@st.cache_data(show_spinner=False, max_entries=32)
def lora(scenario_json: str, rank: int, modules: tuple[str, ...], max_loras: int, request: int, keep: int):
    r = resolved(scenario_json)
    plan = lora_plan(r, rank, modules, max_loras, request, keep)
    slots = sorted({0, 1, 2, 4, 8, 16, 32, 64, 128, 256, max_loras})
    return plan, pd.DataFrame(concurrency_vs_slots(r, rank, modules, request, slots))


def flash_sweep(batch: int, heads: int, tokens: int, bytes_per_value: float, max_len: int) -> pd.DataFrame:
    lengths = sorted(
        {n for n in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072) if n <= max_len} | {tokens}
    )
    return pd.DataFrame(fa.sweep_lengths(batch, heads, lengths, bytes_per_value))


@dataclasses.dataclass(frozen=True)
class Request:
    """The typical request the page's what-ifs use (top widgets)."""

    prompt: int
    output: int
    batch: int

    @property
    def tokens(self) -> int:
        """Prompt + output: the KV a request holds at its end."""
        return self.prompt + self.output

    @property
    def context(self) -> int:
        """Mean cached context a decode step reads: prompt + output / 2."""
        return self.prompt + self.output // 2
