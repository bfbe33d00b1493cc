"""Simulation records and what is derived from them: latency percentiles, throughput, goodput, DataFrames.

Definitions (primer §2): queue wait = first scheduled - arrival; TTFT = first token - arrival (the end of the step
that completes the prompt); TPOT = (e2e - TTFT) / (N - 1) for N > 1 output tokens; e2e = finish - arrival;
throughput = output tokens / makespan; goodput = requests per second that met every SLO set.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

REJECT_NONE, REJECT_TOO_LONG, REJECT_QUEUE_FULL = 0, 1, 2
REJECT_REASONS = {
    REJECT_NONE: "",
    REJECT_TOO_LONG: "longer than max_model_len or the KV pool",
    REJECT_QUEUE_FULL: "queue full",
}
PERCENTILES = (50, 95, 99)


@dataclass
class RequestRecords:
    """Per request (index = request id); times in seconds, NaN where never reached."""

    arrival_s: np.ndarray
    first_scheduled_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    num_preemptions: np.ndarray
    prefix_hit_tokens: np.ndarray  # prompt tokens skipped thanks to shared (trace) prefix blocks, all admissions
    recomputed_tokens: np.ndarray  # computed tokens preemption threw away (minus its own blocks re-hit)
    rejected: np.ndarray  # 0 served, 1 too long, 2 queue full

    @property
    def finished(self) -> np.ndarray:
        return ~np.isnan(self.finish_s)


def request_records(wl) -> RequestRecords:
    n = wl.num_requests
    nan = lambda: np.full(n, np.nan)  # noqa: E731
    zeros = lambda: np.zeros(n, dtype=np.int64)  # noqa: E731
    return RequestRecords(
        np.array(wl.arrival_s, dtype=float),
        nan(),
        nan(),
        nan(),
        wl.prompt_tokens.copy(),
        wl.output_tokens.copy(),
        zeros(),
        zeros(),
        zeros(),
        np.zeros(n, dtype=np.int8),
    )


@dataclass(frozen=True)
class StepRecords:
    """Per scheduler step: start time, duration, sequences computed, requests running and waiting after
    scheduling, KV blocks held by running requests, tokens computed."""

    time_s: np.ndarray
    duration_s: np.ndarray
    num_seqs: np.ndarray
    num_running: np.ndarray
    num_waiting: np.ndarray
    kv_blocks: np.ndarray
    new_tokens: np.ndarray

    def __len__(self) -> int:
        return len(self.time_s)


class StepRecorder:
    """Collects step rows (one per step, or a run of pure-decode steps) and moves them into growing numpy columns
    every FLUSH_ROWS rows. Between flushes the per-step values (start, duration, blocks allocated in the run) sit
    in Python lists and the values shared by a run's steps (sequences, running, waiting, blocks held before the
    run, tokens) once per run: appending to a list costs less than writing into numpy arrays, and the lists stay
    short, so memory stays that of the numpy columns."""

    FIELDS = ("time_s", "duration_s", "num_seqs", "num_running", "num_waiting", "kv_blocks", "new_tokens")
    DTYPES = (np.float64, np.float64, np.int32, np.int32, np.int32, np.int32, np.int32)
    FLUSH_ROWS = 1 << 14

    def __init__(self, capacity: int = 1 << 16):
        self.size = 0  # rows in the numpy columns
        self.cols = [np.empty(capacity, dtype=d) for d in self.DTYPES]
        self.time_s: list[float] = []
        self.duration_s: list[float] = []
        self.run_blocks: list[int] = []  # blocks allocated since the run began (0 for a single step)
        self.shared: list[tuple[int, int, int, int, int]] = []  # (seqs, running, waiting, blocks before, tokens)
        self.counts: list[int] = []  # steps sharing each `shared` row

    def _flush(self) -> None:
        m = len(self.time_s)
        if not m:
            return
        if self.size + m > len(self.cols[0]):
            cap = max(2 * len(self.cols[0]), self.size + m)
            self.cols = [np.concatenate((c[: self.size], np.empty(cap - self.size, dtype=c.dtype))) for c in self.cols]
        k, cols = self.size, self.cols
        shared = np.repeat(np.array(self.shared, dtype=np.int64), np.array(self.counts, dtype=np.int64), axis=0)
        cols[0][k : k + m] = np.fromiter(self.time_s, np.float64, m)
        cols[1][k : k + m] = np.fromiter(self.duration_s, np.float64, m)
        for c, j in ((2, 0), (3, 1), (4, 2), (6, 4)):
            cols[c][k : k + m] = shared[:, j]
        cols[5][k : k + m] = shared[:, 3] + np.fromiter(self.run_blocks, np.int64, m)
        for rows in (self.time_s, self.duration_s, self.run_blocks, self.shared, self.counts):
            rows.clear()
        self.size = k + m

    def add(self, time_s, duration_s, num_seqs, num_running, num_waiting, kv_blocks, new_tokens) -> None:
        self.time_s.append(time_s)
        self.duration_s.append(duration_s)
        self.run_blocks.append(0)
        self.shared.append((num_seqs, num_running, num_waiting, kv_blocks, new_tokens))
        self.counts.append(1)
        if len(self.time_s) >= self.FLUSH_ROWS:
            self._flush()

    def add_run(self, time_s, duration_s, num_seqs: int, num_running: int, kv_blocks0: int, new_blocks) -> None:
        """len(time_s) pure-decode steps: every sequence decodes one token, nobody waits; the KV blocks held are
        kv_blocks0 + the cumulative blocks allocated (`new_blocks`)."""
        self.time_s.extend(time_s)
        self.duration_s.extend(duration_s)
        self.run_blocks.extend(new_blocks)
        self.shared.append((num_seqs, num_running, 0, kv_blocks0, num_seqs))
        self.counts.append(len(time_s))
        if len(self.time_s) >= self.FLUSH_ROWS:
            self._flush()

    def finish(self) -> StepRecords:
        self._flush()
        return StepRecords(*(c[: self.size].copy() for c in self.cols))


@dataclass(frozen=True)
class SimResult:
    config: object  # SchedulerConfig
    seed: int
    workload: object  # Workload
    requests: RequestRecords
    steps: StepRecords
    end_s: float  # simulated time when the last request finished
    peak_kv_blocks: int  # most blocks ever held by running requests (<= config.num_gpu_blocks)
    num_evicted_blocks: int  # cached blocks (prefix or a preempted request's own) reused for something else
    wall_s: float  # seconds the simulation took to run
    offload: object = None  # OffloadStats of the KV offload tiers (planner/sim/offload_tiers.py); None = off


@dataclass(frozen=True)
class LatencyStats:
    """mean, p50, p95, p99 of one latency in seconds (None where nothing was measured)."""

    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None


@dataclass(frozen=True)
class ServingSummary:
    """Headline figures of one run (planner.sim.run_summary.result_summary): the `simulate --json` contract, in order.

    Seconds, tokens and requests; fractions in 0..1; None where a figure is undefined (no finished request)."""

    ttft_s: LatencyStats
    tpot_s: LatencyStats
    e2e_s: LatencyStats
    queue_s: LatencyStats
    throughput_tokens_per_s: float | None
    throughput_requests_per_s: float | None
    offered_requests_per_s: float | None
    served_requests_per_s: float | None
    goodput_requests_per_s: float | None
    goodput_tokens_per_s: float | None
    slo_attainment: float | None
    slo_ttft_s: float | None
    slo_tpot_s: float | None
    num_requests: int
    completed: int
    rejected: int
    rejected_queue_full: int
    rejected_too_long: int
    preemptions: int
    prefix_hit_rate: float
    simulated_s: float
    makespan_s: float
    num_steps: int
    kv_pool_blocks: int
    kv_pool_tokens: int
    peak_kv_use: float
    mean_kv_use: float | None
    mean_running: float | None
    mean_waiting: float | None
    max_waiting: int
    max_running: int
    max_num_seqs: int
    max_num_batched_tokens: int
    seed: int
    workload_seed: int | None
    source: str
    wall_s: float

    def to_dict(self) -> dict:
        return asdict(self)


def latencies(res: SimResult) -> dict[str, np.ndarray]:
    """Per finished request the client counts (a benchmark client's warm-up left out: `measured`): queue wait, TTFT,
    TPOT (NaN for 1-token outputs) and end-to-end, in seconds."""
    r = res.requests
    ok = r.finished & measured(res)
    front = getattr(res.config, "frontend_latency_s", 0.0)  # as the client measures: the frontend's hop included
    ttft = r.first_token_s[ok] - r.arrival_s[ok] + front
    e2e = r.finish_s[ok] - r.arrival_s[ok] + front
    steps_after_first = r.output_tokens[ok] - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(steps_after_first > 0, (e2e - ttft) / steps_after_first, np.nan)
    lag = getattr(res.config, "first_token_lag_steps", 0.0)  # the stream behind the GPU: every token that late
    if lag:
        late = lag * np.nan_to_num(tpot)
        ttft, e2e = ttft + late, e2e + late
    return {"queue_wait_s": r.first_scheduled_s[ok] - r.arrival_s[ok], "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e}


def measured(res: SimResult) -> np.ndarray:
    """Per request: whether its client counts it (every request, but a benchmark client's warm-up requests, which
    come first: planner.traffic.clients.client_loop)."""
    wl = res.workload
    warmup = int(getattr(wl, "extra", {}).get("warmup_requests", 0) or 0)
    return np.arange(len(res.requests.arrival_s)) >= warmup


def stats(values: np.ndarray) -> dict[str, float]:
    """mean, p50, p95, p99 ignoring NaN (NaN if nothing to summarise)."""
    v = values[~np.isnan(values)]
    if not len(v):
        return {"mean": np.nan, **{f"p{p}": np.nan for p in PERCENTILES}}
    return {"mean": float(v.mean()), **{f"p{p}": float(np.percentile(v, p)) for p in PERCENTILES}}


def meets_slo(res: SimResult, slo_ttft_s: float | None = None, slo_tpot_s: float | None = None) -> np.ndarray:
    """Per finished request: met every SLO given (defaults: the config's)."""
    slo_ttft_s = res.config.slo_ttft_s if slo_ttft_s is None else slo_ttft_s
    slo_tpot_s = res.config.slo_tpot_s if slo_tpot_s is None else slo_tpot_s
    lat = latencies(res)
    ok = np.ones(len(lat["ttft_s"]), dtype=bool)
    if slo_ttft_s is not None:
        ok &= lat["ttft_s"] <= slo_ttft_s
    if slo_tpot_s is not None:
        ok &= np.nan_to_num(lat["tpot_s"], nan=0.0) <= slo_tpot_s
    return ok


def time_average(res: SimResult, values: np.ndarray) -> float:
    """Time average of a per-step quantity over [0, end], idle time counting as 0."""
    return float(np.dot(values, res.steps.duration_s) / res.end_s) if res.end_s > 0 else 0.0


def summary(res: SimResult, slo_ttft_s: float | None = None, slo_tpot_s: float | None = None) -> dict:
    """One flat dict of headline figures (seconds, tokens, requests; fractions in 0..1)."""
    r, s, cfg = res.requests, res.steps, res.config
    ok = r.finished
    makespan_s = res.end_s - float(np.nanmin(r.arrival_s)) if ok.any() else 0.0
    out_tokens = int(r.output_tokens[ok].sum())
    served_prompt = int(r.prompt_tokens[r.first_scheduled_s == r.first_scheduled_s].sum())
    good = meets_slo(res, slo_ttft_s, slo_tpot_s)
    rate = lambda x: x / makespan_s if makespan_s > 0 else np.nan  # noqa: E731
    out = {
        "seed": res.seed,
        "num_requests": len(r.arrival_s),
        "num_finished": int(ok.sum()),
        "num_rejected": int((r.rejected != REJECT_NONE).sum()),
        "num_rejected_queue_full": int((r.rejected == REJECT_QUEUE_FULL).sum()),
        "num_rejected_too_long": int((r.rejected == REJECT_TOO_LONG).sum()),
        "makespan_s": makespan_s,
        "throughput_tokens_per_s": rate(out_tokens),
        "throughput_requests_per_s": rate(int(ok.sum())),
        "goodput_requests_per_s": rate(int(good.sum())),
        "goodput_tokens_per_s": rate(int(r.output_tokens[ok & measured(res)][good].sum())),
        "slo_attainment": float(good.mean()) if len(good) else np.nan,
        "num_preemptions": int(r.num_preemptions.sum()),
        "prefix_hit_rate": float(r.prefix_hit_tokens.sum() / served_prompt) if served_prompt else 0.0,
        "num_steps": len(s),
        "kv_pool_blocks": cfg.num_gpu_blocks,
        "peak_kv_blocks": res.peak_kv_blocks,
        "mean_kv_use": time_average(res, s.kv_blocks) / cfg.num_gpu_blocks,
        "mean_running": time_average(res, s.num_running),
        "mean_waiting": time_average(res, s.num_waiting),
        "max_waiting": int(s.num_waiting.max()) if len(s) else 0,
        "wall_s": res.wall_s,
    }
    for name, values in latencies(res).items():
        for stat, v in stats(values).items():
            out[f"{name.removesuffix('_s')}_{stat}_s"] = v
    return out


def summary_frame(res: SimResult) -> pd.DataFrame:
    """Latency table: rows queue wait, TTFT, TPOT, e2e; columns mean, p50, p95, p99 (seconds)."""
    return pd.DataFrame({k.removesuffix("_s"): stats(v) for k, v in latencies(res).items()}).T


def request_frame(res: SimResult) -> pd.DataFrame:
    r = res.requests
    df = pd.DataFrame({f: getattr(r, f) for f in r.__dataclass_fields__})
    counted = r.finished & measured(res)
    for name, values in latencies(res).items():
        df[name] = np.nan
        df.loc[counted, name] = values
    df["rejected_reason"] = [REJECT_REASONS[int(c)] for c in r.rejected]
    return df


def step_frame(res: SimResult, max_points: int | None = 2000) -> pd.DataFrame:
    """Per-step records, thinned to at most `max_points` rows for plotting (every k-th step)."""
    s = res.steps
    stride = max(1, -(-len(s) // max_points)) if max_points else 1
    df = pd.DataFrame({f: getattr(s, f)[::stride] for f in s.__dataclass_fields__})
    df["kv_use"] = df["kv_blocks"] / res.config.num_gpu_blocks
    return df
