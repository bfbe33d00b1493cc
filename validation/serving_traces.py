"""A measured closed-loop run's simulated steps, and the weights that turn their step times into its mean TTFT and
mean TPOT: what the efficiency fit needs to re-price a serving point under other constants without re-simulating.

The run is the one `simulate` runs for the row's flags (planner.accuracy.serving_points.simulate_flags, built by
planner.cli.simulate_cmd.run_inputs): its client's N streams started together, the client's warm-up left out, its
request count and lengths. The SEQUENCE of steps a replica runs (which requests are admitted, chunked, decoded in
which step) depends on the engine's scheduler and KV pool, and only weakly on how long each step lasts: a request
arrives when a reply ends (plus the client's turnaround). So one simulation per point fixes its steps (tokens,
sequences, context read, attention pairs, requests starting) and the time windows of its measured requests; under
another profile each step's time is PerfModel's step formula again, and

    mean TTFT = request path  + Σ_j w_ttft[j] × t_j        w_ttft[j] = mean over measured requests of the
                                                                fraction of step j inside [arrival, first token]
    mean TPOT = Σ_j w_tpot[j] × t_j                             w_tpot[j] = likewise over [first token, finish],
                                                                divided by the request's output tokens − 1

(t_j includes request_overhead_s for each request starting in step j). The approximation is the schedule's
invariance: the client turnaround (2 ms plus the request path) and lengths that differ (InferenceMAX's [0.8, 1] ×
ISL) make arrivals depend on step times, so re-pricing after a change of constants is checked against a fresh
simulation (tests/test_serving_fit.py), and validation/accuracy_loo.py scores the fitted constants through
`simulate` itself.

Steps with the same (tokens, sequences, starting requests) are merged into at most KV_BINS bins of context read
(weighted means), so a point of thousands of steps re-prices in a few dozen rows; a step's time is affine in the
context read on either side of the roofline, so merging within a bin moves the sum only where a bin straddles the
memory/compute corner.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.accuracy.serving_points import ServingPoint, simulate_flags
from planner.core.errors import InputError
from planner.latency.efficiency import EfficiencyProfile
from planner.latency.perf_model import PerfModel
from planner.sim.records import measured
from planner.sim.serving import Replica, run_serving

KV_BINS = 6  # context-read bins per (tokens, sequences, starting requests) group


class RecordingCost:
    """PerfModel as a StepCost that records each step's arguments. It offers none of the fast-path hooks
    (decode_affine, decode_step_fn, step_times_s), so the simulator calls step_time_s exactly once per step, in
    order (planner.sim.lockstep's generic path gives the same steps as the fast path, only slower)."""

    def __init__(self, pm: PerfModel):
        self.pm = pm
        self.request_overhead_s = pm.request_overhead_s
        self.rows: list[tuple[float, float, float, float, float]] = []

    def step_time_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs) -> float:
        dt = self.pm.step_time_s(new_tokens, num_seqs, kv_read_tokens, attn_pairs)
        self.rows.append((float(new_tokens), float(num_seqs), float(kv_read_tokens), float(attn_pairs), dt))
        return dt


@dataclass(frozen=True)
class Steps:
    """One simulation's steps (merged) and the weights of its measured requests' mean TTFT and TPOT."""

    new_tokens: np.ndarray
    num_seqs: np.ndarray
    kv_read: np.ndarray
    pairs: np.ndarray
    starting: np.ndarray  # requests whose first chunk runs in the step (request_overhead_s each)
    w_ttft: np.ndarray
    w_tpot: np.ndarray
    simulated_ttft_s: float  # the simulation's own means (a check of the re-pricing at the traced profile)
    simulated_tpot_s: float


@dataclass(frozen=True)
class ServingTrace:
    """One point's run as `simulate` runs its flags (its client's streams started together, the warm-up left out);
    `pm` is its PerfModel (geometry computed once)."""

    point: ServingPoint
    pm: PerfModel
    run: Steps

    @property
    def simulated_ttft_s(self) -> float:
        return self.run.simulated_ttft_s

    @property
    def simulated_tpot_s(self) -> float:
        return self.run.simulated_tpot_s

    def predict(self, profile: EfficiencyProfile | None = None) -> tuple[float, float]:
        """(mean TTFT, mean TPOT) in seconds under `profile` (None: the traced one)."""
        pm = self.pm if profile is None else self.pm.with_profile(profile)
        x = self.run
        t = pm.total_s(x.new_tokens, x.num_seqs, x.kv_read, x.pairs) + x.starting * pm.request_overhead_s
        ttft, tpot = float(x.w_ttft @ t), float(x.w_tpot @ t)
        return pm.request_path_s + ttft + pm.eff.first_token_lag_steps * tpot, tpot


def trace(p: ServingPoint, replica: Replica, workload, profile: EfficiencyProfile | None = None) -> ServingTrace:
    """Simulate point `p`'s run (`replica` and `workload` from its simulate flags: planner.cli.simulate_cmd.
    run_inputs) with a recording step cost under `profile` (the engine's constants to simulate with; None: data/
    efficiency.yaml's)."""
    pm = PerfModel(replica.resolved, profile=profile)
    if p.request_rate:
        raise InputError("points", "only closed-loop points (a client concurrency) are traced")
    return ServingTrace(p, pm, _steps(replica, workload, pm))


def _steps(rep: Replica, wl, pm: PerfModel) -> Steps:
    """The run's steps weighed by its measured requests (the client's warm-up left out)."""
    cost = RecordingCost(pm)
    rep.__dict__["step_cost"] = cost  # the replica's cached step cost, replaced before first use
    res = run_serving(rep, wl)
    rows = np.array(cost.rows, dtype=float).reshape(-1, 5)
    steps = res.steps
    if len(rows) != len(steps):
        raise InputError("points", f"{len(rows)} step calls for {len(steps)} steps: trace not aligned")
    t0, dt = np.asarray(steps.time_s, dtype=float), np.asarray(steps.duration_s, dtype=float)
    ro = pm.request_overhead_s
    starting = np.rint((dt - rows[:, 4]) / ro) if ro > 0 else np.zeros(len(dt))
    req = res.requests
    keep = np.flatnonzero(req.finished & measured(res))
    if not len(keep):
        raise InputError("concurrency", "no measured request finished in the simulation")
    a, f, e = req.arrival_s[keep], req.first_token_s[keep], req.finish_s[keep]
    out_steps = np.maximum(req.output_tokens[keep] - 1, 1).astype(float)
    w_ttft = _window_weights(t0, dt, a, f, np.ones(len(keep))) / len(keep)
    w_tpot = _window_weights(t0, dt, f, e, 1.0 / out_steps) / len(keep)
    sim_tpot = float(np.mean((e - f) / out_steps))
    sim_ttft = float(np.mean(f - a)) + res.config.frontend_latency_s + res.config.first_token_lag_steps * sim_tpot
    return _merged(rows[:, :4], starting, w_ttft, w_tpot, sim_ttft, sim_tpot)


def _window_weights(t0: np.ndarray, dt: np.ndarray, lo: np.ndarray, hi: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Σ over windows [lo_i, hi_i] of scale_i × (the fraction of each step inside the window)."""
    end = t0 + dt
    safe = np.where(dt > 0, dt, 1.0)
    run = np.zeros(len(t0) + 1)  # difference array: whole steps inside a window
    point = np.zeros(len(t0))  # the partial first and last steps' corrections
    for x, y, s in zip(lo.tolist(), hi.tolist(), scale.tolist()):
        i = int(np.searchsorted(end, x, side="right"))  # the first step ending after x
        j = int(np.searchsorted(t0, y, side="left"))  # steps [i, j) start before y
        if j <= i:
            continue
        run[i] += s
        run[j] -= s
        for k in {i, j - 1}:
            point[k] += s * ((min(end[k], y) - max(t0[k], x)) / safe[k] - 1.0)
    return np.cumsum(run)[:-1] + point


def _merged(args, starting, w_ttft, w_tpot, sim_ttft, sim_tpot) -> Steps:
    used = (w_ttft > 0) | (w_tpot > 0)
    args, starting, w_ttft, w_tpot = args[used], starting[used], w_ttft[used], w_tpot[used]
    keys = np.column_stack([args[:, 0], args[:, 1], starting])
    order = np.lexsort((args[:, 2], keys[:, 2], keys[:, 1], keys[:, 0]))
    args, keys, w_ttft, w_tpot = args[order], keys[order], w_ttft[order], w_tpot[order]
    cols: list[list[float]] = [[], [], [], [], [], [], []]
    bounds = np.flatnonzero(np.any(np.diff(keys, axis=0) != 0, axis=1)) + 1
    for grp in np.split(np.arange(len(keys)), bounds):
        if not len(grp):
            continue
        for b in np.array_split(grp, min(KV_BINS, len(grp))):
            w = w_ttft[b] + w_tpot[b]
            total = float(w.sum())
            wm = w / total if total > 0 else np.full(len(b), 1.0 / len(b))
            for c, v in zip(
                cols,
                (
                    args[b[0], 0],
                    args[b[0], 1],
                    float(wm @ args[b, 2]),
                    float(wm @ args[b, 3]),
                    keys[b[0], 2],
                    float(w_ttft[b].sum()),
                    float(w_tpot[b].sum()),
                ),
            ):
                c.append(float(v))
    n, s, kv, pairs, start, wt, wp = (np.array(c, dtype=float) for c in cols)
    return Steps(n, s, kv, pairs, start, wt, wp, sim_ttft, sim_tpot)


def stratified_sample(points: list[ServingPoint], per_stratum: int | None, seed: int = 0) -> list[ServingPoint]:
    """Aggregated rows, up to `per_stratum` per (engine, model, GPU) (None: all), chosen by a seeded generator from
    the rows sorted by id, so a rerun draws the same rows."""
    agg = sorted((p for p in points if "disaggregated" not in p.excluded), key=lambda p: p.id)
    if per_stratum is None:
        return agg
    rng = np.random.default_rng(seed)
    strata: dict[tuple, list] = {}
    for p in agg:
        strata.setdefault((p.engine, p.model, p.gpu), []).append(p)
    out = []
    for key in sorted(strata):
        rows = strata[key]
        pick = rng.choice(len(rows), size=min(per_stratum, len(rows)), replace=False)
        out += [rows[i] for i in sorted(pick)]
    return out


def aiconfigurator_points() -> list[ServingPoint]:
    """Every row of the aiconfigurator calibration split (data/measurements/aiconfigurator/)."""
    from planner.accuracy.aiconfigurator_rows import read_aiconfigurator
    from planner.core.paths import measurements_dir

    csv = measurements_dir() / "aiconfigurator" / "silicon_calibration.csv"
    return read_aiconfigurator(csv.read_text(encoding="utf-8"))


def fit_traces(
    per_stratum: int | None, profile: EfficiencyProfile | None, run_inputs, seed: int = 0
) -> list[ServingTrace]:
    """Traces of the sampled aggregated rows that can be simulated and have both means measured (rows the planner
    cannot predict, as `validate` reports them, are left out). `run_inputs(flags, profile)` -> (replica, workload):
    the CLI's (planner.cli.simulate_cmd.run_inputs), so the fit traces the run a user's `simulate` would."""
    out = []
    for p in stratified_sample(aiconfigurator_points(), per_stratum, seed):
        if p.excluded or p.ttft_ms is None or p.tpot_ms is None or p.request_rate:
            continue
        try:
            replica, wl = run_inputs(simulate_flags(p, seed), profile)
            out.append(trace(p, replica, wl, profile))
        except (InputError, ValueError):
            continue
    return out
