"""Latency and throughput metrics (primer §2, §5): from given rates, or predicted from the hardware.

    TTFT        = queue wait + prefill time
    TPOT        = one decode step for the request (mean over its generation)
    tokens/s    = 1 / TPOT (per user)
    end-to-end  = TTFT + (N − 1) × TPOT, N = output tokens
    throughput  = output tokens per second across all requests: B × N / (batch prefill + all decode steps)

"Given rates" mode takes the prefill rate and TPOT as inputs (the primer's worked example). Model mode predicts
them with planner.latency.perf_model for a static batch of B equal requests: one prefill pass over the B prompts, then
N − 1 decode steps whose context grows from I to I + N − 2 tokens. Sweeps are vectorised over batch sizes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.latency.efficiency import FIT_FIELDS
from planner.latency.perf_model import BREAKDOWN_KEYS, PerfModel
from planner.memory.plan import plan_memory

TPOT_SAMPLES = 9  # decode contexts averaged for the mean TPOT (exact for the linear-in-context roofline)


# -- given-rates mode (primer §5) ---------------------------------------------------------------------------
@dataclass(frozen=True)
class GivenRates:
    prefill_s: float
    ttft_s: float
    tokens_per_s: float
    e2e_s: float
    decode_share: float  # decode time / end-to-end


def given_rates(
    prompt_tokens: int,
    output_tokens: int,
    queue_wait_s: float,
    prefill_tokens_per_s: float,
    tpot_s: float,
    cached_prefix_tokens: int = 0,
) -> GivenRates:
    """TTFT = wait + (prompt − cached prefix) / prefill rate; end-to-end = TTFT + (N − 1) × TPOT."""
    _positive("prefill_tokens_per_s", prefill_tokens_per_s)
    _positive("tpot_s", tpot_s)
    prefill = (prompt_tokens - cached_prefix_tokens) / prefill_tokens_per_s
    ttft = queue_wait_s + prefill
    decode = (output_tokens - 1) * tpot_s
    e2e = ttft + decode
    return GivenRates(prefill_s=prefill, ttft_s=ttft, tokens_per_s=1 / tpot_s, e2e_s=e2e, decode_share=decode / e2e)


@dataclass(frozen=True)
class BatchingTradeoff:
    per_user_tokens_per_s: float  # 1 / TPOT at batch B
    e2e_s: float  # TTFT + (N − 1) × TPOT at batch B
    server_tokens_per_s: float  # B / TPOT at batch B
    throughput_gain: float  # server tokens/s against one request alone
    latency_factor: float  # TPOT at batch B / TPOT alone


def batching_tradeoff(
    single_tpot_s: float, batch_tpot_s: float, batch: int, ttft_s: float, output_tokens: int
) -> BatchingTradeoff:
    """What a shared batch does: each user slows to 1/TPOT_b, the server makes B/TPOT_b tokens/s (primer §5)."""
    server = batch / batch_tpot_s
    return BatchingTradeoff(
        per_user_tokens_per_s=1 / batch_tpot_s,
        e2e_s=ttft_s + (output_tokens - 1) * batch_tpot_s,
        server_tokens_per_s=server,
        throughput_gain=server * single_tpot_s,
        latency_factor=batch_tpot_s / single_tpot_s,
    )


def _positive(field: str, value: float) -> None:
    if not value > 0:
        raise InputError(field, "must be positive")


# -- model mode -------------------------------------------------------------------------------------------
def decode_contexts(input_tokens: int, output_tokens: int, samples: int = TPOT_SAMPLES) -> np.ndarray:
    """Evenly spaced cached-context lengths over the N − 1 decode steps (I … I + N − 2)."""
    last = input_tokens + max(output_tokens - 2, 0)
    return np.linspace(input_tokens, last, max(1, min(samples, output_tokens - 1)))


def sweep(
    pm: PerfModel, batches, input_tokens: int, output_tokens: int, queue_wait_s: float = 0.0, offline: bool = False
) -> dict:
    """Static-batch metrics for an array of batch sizes (vectorised): arrays keyed by metric. TTFT and end-to-end
    are as a client of the server measures them (the request path outside the steps included), or with `offline`
    as the engine's own offline benchmark does (`vllm bench latency`, trtllm-bench, llama-bench: the passes only)."""
    b = np.asarray(batches, dtype=float).reshape(-1)
    pre = pm.prefill(b, input_tokens)
    dec = pm.decode(b[:, None], decode_contexts(input_tokens, output_tokens)[None, :])
    tpot = dec.total_s.mean(axis=1)
    parts = {k: v.mean(axis=1) for k, v in dec.parts.items()}
    memory_time, compute_time = dec.memory_s.mean(axis=1), dec.compute_s.mean(axis=1)
    decode_total = (output_tokens - 1) * tpot
    run_s = pre.total_s + decode_total
    replicas = pm.resolved.deployment.num_replicas
    # as a client measures it (what `simulate` charges every request): the request's path outside the steps (the
    # frontend's hop, the prompt pass's host dispatch) and the output stream's lag behind the GPU (PerfModel note)
    path_s = 0.0 if offline else request_path_s(pm, tpot)
    return {
        "batch": b.astype(int),
        "prefill_s": pre.total_s,
        "ttft_s": queue_wait_s + path_s + pre.total_s,
        "tpot_s": tpot,
        "tokens_per_s_per_user": 1 / tpot,
        "e2e_s": queue_wait_s + path_s + run_s,
        "throughput_tokens_per_s": replicas * b * output_tokens / run_s,
        "bound": np.where(memory_time >= compute_time, "memory", "compute"),
        "prefill_bound": pre.bound,
        "memory_time_s": memory_time,
        "compute_time_s": compute_time,
        **parts,
    }


def request_path_s(pm: PerfModel, tpot_s):
    """Seconds a request's first token (and so its end) reaches the client after the GPU computed it, outside the
    steps: PerfModel.request_path_s + first_token_lag_steps × TPOT (planner.sim.records.latencies adds the same)."""
    return pm.request_path_s + pm.eff.first_token_lag_steps * np.asarray(tpot_s, dtype=float)


def step_grid(pm: PerfModel, batches, contexts) -> np.ndarray:
    """Decode step time for every (batch, context) pair: shape (len(batches), len(contexts))."""
    b = np.asarray(batches, dtype=float)[:, None]
    return pm.decode(b, np.asarray(contexts, dtype=float)[None, :]).total_s


def ridge_batch(pm: PerfModel, context_tokens: int, max_batch: int = 1 << 16) -> int | None:
    """Smallest batch at which a decode step at this context turns compute-bound (None if not by max_batch)."""
    b = np.arange(1, max_batch + 1)
    step = pm.decode(b, context_tokens)
    flags = step.compute_s > step.memory_s
    return int(b[np.argmax(flags)]) if flags.any() else None


def memory_limit(r: Resolved, input_tokens: int, output_tokens: int) -> int:
    """Requests of I + N tokens that fit at once in one replica's KV pool (vLLM's paged pool, primer §10)."""
    return plan_memory(dataclasses.replace(r, context_tokens=input_tokens + output_tokens)).paged_max_requests


@dataclass(frozen=True)
class Estimate:
    """Model-mode metrics for a static batch of B equal requests, with the reason and the parts."""

    batch: int
    input_tokens: int
    output_tokens: int
    engine: str
    queue_wait_s: float
    prefill_s: float
    ttft_s: float
    tpot_s: float
    e2e_s: float
    tokens_per_s_per_user: float
    throughput_tokens_per_s: float
    bound: str
    prefill_bound: str
    step_time_breakdown: dict[str, float]
    prefill_breakdown: dict[str, float]
    max_batch: int
    ridge_batch: int | None
    efficiency: dict
    efficiency_status: str
    efficiency_source: str
    hardware_basis: list[str]  # what the part reaches (measured or estimated) and the engine's kernel path on it

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def validate_request(r: Resolved, batch: int, input_tokens: int, output_tokens: int) -> None:
    if batch < 1:
        raise InputError("batch", "must be at least 1")
    if input_tokens < 1:
        raise InputError("input_tokens", "must be at least 1")
    if output_tokens < 1:
        raise InputError("output_tokens", "must be at least 1")
    if input_tokens + output_tokens > r.max_model_len:
        raise InputError(
            "input_tokens",
            f"input + output = {input_tokens + output_tokens:,} tokens exceeds max_model_len={r.max_model_len:,}",
        )


def estimate(
    r: Resolved,
    batch: int,
    input_tokens: int,
    output_tokens: int,
    queue_wait_s: float = 0.0,
    check_memory: bool = True,
    pm: PerfModel | None = None,
    offline: bool = False,
) -> Estimate:
    """Predict TTFT, TPOT, end-to-end and throughput for a static batch; refuses a batch above the memory limit."""
    validate_request(r, batch, input_tokens, output_tokens)
    limit = memory_limit(r, input_tokens, output_tokens)
    if check_memory and batch > limit:
        raise InputError(
            "batch",
            f"{batch} requests of {input_tokens + output_tokens:,} tokens exceed the memory "
            f"limit: the KV pool fits at most {limit} per replica",
        )
    pm = pm or PerfModel(r)
    row = {k: v[0] for k, v in sweep(pm, [batch], input_tokens, output_tokens, queue_wait_s, offline).items()}
    pre = pm.prefill(batch, input_tokens)
    return Estimate(
        batch=batch,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        engine=pm.choice.engine,
        queue_wait_s=queue_wait_s,
        prefill_s=float(row["prefill_s"]),
        ttft_s=float(row["ttft_s"]),
        tpot_s=float(row["tpot_s"]),
        e2e_s=float(row["e2e_s"]),
        tokens_per_s_per_user=float(row["tokens_per_s_per_user"]),
        throughput_tokens_per_s=float(row["throughput_tokens_per_s"]),
        bound=str(row["bound"]),
        prefill_bound=str(row["prefill_bound"]),
        step_time_breakdown={k: float(row[k]) for k in BREAKDOWN_KEYS},
        prefill_breakdown=dict(pre.parts),
        max_batch=limit,
        ridge_batch=ridge_batch(pm, input_tokens + output_tokens // 2),
        efficiency=pm.eff.model_dump(include=set(FIT_FIELDS)),
        efficiency_status=pm.choice.status,
        efficiency_source=pm.choice.source_key,
        hardware_basis=list(pm.hardware.notes),
    )


def what_ifs(pm: PerfModel, batch: int, input_tokens: int, output_tokens: int, queue_wait_s: float = 0.0) -> list[dict]:
    """End-to-end latency when the prompt is halved or the output capped at half (primer §5 step 4)."""
    cases = [
        ("as given", input_tokens, output_tokens),
        ("halve the prompt", max(1, input_tokens // 2), output_tokens),
        ("cap output at half", input_tokens, max(1, output_tokens // 2)),
    ]
    base = None
    rows = []
    for label, i, o in cases:
        e2e = float(sweep(pm, [batch], i, o, queue_wait_s)["e2e_s"][0])
        base = e2e if base is None else base
        rows.append({"case": label, "input_tokens": i, "output_tokens": o, "e2e_s": e2e, "saved_s": base - e2e})
    return rows
