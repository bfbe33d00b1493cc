"""Whether one simulated run at a fixed offered rate is sustainable: the ONE verdict used by `capacity`,
`recommend`, the Capacity page and the load-test knee.

A run has a warm-up (the batch fills from empty: early requests see an idle server) and a drain (after the last
arrival the load falls). Both are discarded: the run is judged on the requests that ARRIVE in the steady window,
between the WARMUP_Q and DRAIN_Q quantiles of the arrival times (20th and 90th percentile).

Verdict (`judge`): the run sustains its rate when, over that window,
1. the queue does not grow: the waiting queue's least-squares trend (requests per second, from the per-step
   records, time-weighted) is at most MAX_QUEUE_GROWTH × the offered rate (5%). An overloaded server adds
   (λ − μ) waiting requests per second; a stable one fluctuates around a level. This, unlike "completions ≥
   95% of arrivals", does not mistake the batch filling up (requests RUNNING, not waiting) for overload, so the
   answer does not depend on the run length;
2. the SLO holds on the window's requests: p95 TTFT ≤ target, p95 TPOT ≤ target, p99 end-to-end ≤ target (if set).
`served_ratio` = 1 − trend / offered (the share of the offered rate the server keeps up with).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from planner.core.workload import SLO
from planner.sim.records import SimResult, latencies

WARMUP_Q, DRAIN_Q = 0.2, 0.9  # steady window: arrivals between these quantiles
MAX_QUEUE_GROWTH = 0.05  # waiting-queue trend at most 5% of the offered rate
STABILITY_MARGIN = 0.05  # offered rate at most 95% of the saturated throughput
SATURATION_RATE_PER_S = 1e6  # "everything arrives at once": the saturation run's rate
MIN_WINDOW_REQUESTS = 10
# sessions: the steady window must see at least this share of the nominal request rate. Sessions come back after
# think times, so a run of few sessions at a high rate starts them all at once and then waits on the users: it
# never offers the rate it is judged at (a search would "sustain" any rate). 0.8: a window of 140 sessions has a
# Poisson spread of about 8.5%, so a run that offers the rate passes at 2.4 sigma.
MIN_OFFERED_RATIO = 0.8


def saturated_throughput_rps(res: SimResult) -> float | None:
    """Requests/s a replica completes while saturated: a run whose requests all arrive at once, counted from
    the WARMUP_Q quantile of finish times to the last step with a request still waiting (the batch is full and
    refilled all along). None when the queue empties before that (the batch holds the whole run)."""
    r, s = res.requests, res.steps
    fin = np.sort(r.finish_s[r.finished])
    busy = np.flatnonzero(s.num_waiting > 0)
    if len(fin) < MIN_WINDOW_REQUESTS or not len(busy):
        return None
    t0 = float(np.quantile(fin, WARMUP_Q))
    t1 = float(s.time_s[busy[-1]] + s.duration_s[busy[-1]])
    done = np.count_nonzero((fin > t0) & (fin <= t1))
    return done / (t1 - t0) if t1 > t0 and done >= MIN_WINDOW_REQUESTS else None


@dataclass(frozen=True)
class Verdict:
    rate_per_s: float  # offered, measured over the window
    ttft_p95_s: float | None
    tpot_p95_s: float | None
    e2e_p95_s: float | None
    e2e_p99_s: float | None
    ttft_mean_s: float | None
    e2e_mean_s: float | None
    queue_growth_per_s: float | None  # waiting requests added per second over the window
    served_ratio: float | None  # 1 − growth / offered
    sustains: bool
    reason: str  # why not, or ""


def steady_window(res: SimResult, warmup_q: float = WARMUP_Q, drain_q: float = DRAIN_Q) -> tuple[float, float] | None:
    """(start, end) of the steady window in seconds, or None when too few requests arrived."""
    arr = res.requests.arrival_s
    arr = arr[~np.isnan(arr)]
    if len(arr) < MIN_WINDOW_REQUESTS:
        return None
    t0, t1 = (float(x) for x in np.quantile(arr, [warmup_q, drain_q]))
    return (t0, t1) if t1 > t0 else None


def queue_trend_per_s(res: SimResult, t0: float, t1: float) -> float:
    """Least-squares slope of the number waiting vs time over [t0, t1), weighting each step by its duration
    (idle gaps between steps have nobody waiting)."""
    s = res.steps
    inside = (s.time_s >= t0) & (s.time_s < t1)
    if inside.sum() < 2:
        return 0.0
    t = s.time_s[inside] + s.duration_s[inside] / 2
    w = s.duration_s[inside]
    q = s.num_waiting[inside].astype(float)
    tm, qm = np.average(t, weights=w), np.average(q, weights=w)
    var = np.average((t - tm) ** 2, weights=w)
    return float(np.average((t - tm) * (q - qm), weights=w) / var) if var > 0 else 0.0


def _pct(values: np.ndarray, q: float) -> float | None:
    v = values[~np.isnan(values)]
    return float(np.percentile(v, q)) if len(v) else None


def judge(res: SimResult, slo: SLO, rate_per_s: float | None = None, saturated_rps: float | None = None) -> Verdict:
    """The steady-state verdict of one run (offered at `rate_per_s`) against `slo` (module note);
    `saturated_rps` = saturated_throughput_rps of the same requests, when known."""
    window = steady_window(res)
    if window is None:
        return Verdict(
            rate_per_s or 0.0, None, None, None, None, None, None, None, None, False, "too few requests to judge"
        )
    t0, t1 = window
    r = res.requests
    done = r.finished
    arrival = r.arrival_s[done]
    in_window = (arrival >= t0) & (arrival <= t1)
    offered = float(np.count_nonzero((r.arrival_s >= t0) & (r.arrival_s <= t1)) / (t1 - t0))
    nominal = rate_per_s or offered
    lat = {k: v[in_window] for k, v in latencies(res).items()}
    ttft, tpot = _pct(lat["ttft_s"], 95), _pct(lat["tpot_s"], 95)
    e2e95, e2e99 = _pct(lat["e2e_s"], 95), _pct(lat["e2e_s"], 99)
    growth = queue_trend_per_s(res, t0, t1)
    if saturated_rps:  # fluid estimate: an overloaded server completes its saturated throughput
        growth = max(growth, nominal - saturated_rps)
    ratio = 1.0 - max(growth, 0.0) / offered if offered > 0 else None
    mean = lambda v: float(np.nanmean(v)) if len(v) else None  # noqa: E731
    reason = _reason(ttft, tpot, e2e99, growth, offered, slo)
    if not reason and saturated_rps and nominal > (1 - STABILITY_MARGIN) * saturated_rps:
        reason = (
            f"offered {nominal:,.2f} req/s > {1 - STABILITY_MARGIN:.0%} of the saturated throughput "
            f"{saturated_rps:,.2f} req/s (the queue would grow)"
        )
    return Verdict(
        nominal, ttft, tpot, e2e95, e2e99, mean(lat["ttft_s"]), mean(lat["e2e_s"]), growth, ratio, not reason, reason
    )


def _reason(ttft, tpot, e2e99, growth, offered, slo: SLO) -> str:
    if ttft is None:
        return "nothing completed"
    if growth > MAX_QUEUE_GROWTH * offered:
        return f"queue grows {growth:,.2f} req/s ({growth / offered:.0%} of offered)"
    if ttft > slo.ttft_p95_s:
        return f"p95 TTFT {ttft * 1e3:,.0f} ms > {slo.ttft_p95_s * 1e3:,.0f} ms"
    if tpot is not None and tpot > slo.tpot_p95_s:
        return f"p95 TPOT {tpot * 1e3:,.1f} ms > {slo.tpot_p95_s * 1e3:,.1f} ms"
    if slo.e2e_p99_s is not None and e2e99 is not None and e2e99 > slo.e2e_p99_s:
        return f"p99 end-to-end {e2e99:,.2f} s > {slo.e2e_p99_s:,.2f} s"
    return ""


def offered_rps(res: SimResult) -> float | None:
    """Requests/s arriving in the steady window (None: too few to judge)."""
    window = steady_window(res)
    if window is None:
        return None
    t0, t1 = window
    arr = res.requests.arrival_s
    return float(np.count_nonzero((arr >= t0) & (arr <= t1)) / (t1 - t0))


def short_of_rate(v: Verdict, offered: float | None, rate_per_s: float) -> Verdict:
    """`v` failed when the run offered less than MIN_OFFERED_RATIO × the rate it is judged at (sessions)."""
    if not v.sustains or offered is None or offered >= MIN_OFFERED_RATIO * rate_per_s:
        return v
    why = (
        f"the sessions offer only {offered:,.3g} of {rate_per_s:,.3g} req/s in the steady window: too few sessions "
        "for their think time (raise the request count)"
    )
    return replace(v, sustains=False, reason=why)


def judge_fleet(res, slo: SLO, rate_per_s: float | None = None) -> Verdict:
    """The steady-state verdict of a fleet run (planner/sim/fleet.py FleetResult) against `slo`: the same rule as
    `judge`, on the fleet's requests arriving in the steady window (percentiles over every replica), with the
    waiting queue's growth summed over the replicas (a hot replica whose queue grows fails the fleet)."""
    v = judge(res.fleet, slo, rate_per_s)
    window = steady_window(res.fleet)
    if window is None or v.ttft_p95_s is None:
        return v
    t0, t1 = window
    r = res.fleet.requests
    offered = float(np.count_nonzero((r.arrival_s >= t0) & (r.arrival_s <= t1)) / (t1 - t0))
    growth = sum(queue_trend_per_s(run, t0, t1) for run in res.replicas)
    ratio = 1.0 - max(growth, 0.0) / offered if offered > 0 else None
    reason = _reason(v.ttft_p95_s, v.tpot_p95_s, v.e2e_p99_s, growth, offered, slo)
    v = replace(v, queue_growth_per_s=growth, served_ratio=ratio, sustains=not reason, reason=reason)
    return v if rate_per_s is None else short_of_rate(v, offered, rate_per_s)


def failed_on_latency_only(v: Verdict) -> bool:
    """The run's queue held (and it stayed below the saturation margin); at most a latency target was missed."""
    return v.sustains or v.reason.startswith(("p95 ", "p99 "))


def within_scaled_slo(v: Verdict, slo: SLO, ttft_ratio: float, tpot_ratio: float, e2e_ratio: float) -> bool:
    """Whether the run meets `slo` with its p95 TTFT, p95 TPOT and p99 end-to-end multiplied by the ratios (a
    latency band's high end: measured / predicted), its queue holding as `judge` requires."""
    if not failed_on_latency_only(v) or v.ttft_p95_s is None:
        return False
    ok = v.ttft_p95_s * ttft_ratio <= slo.ttft_p95_s
    ok = ok and (v.tpot_p95_s is None or v.tpot_p95_s * tpot_ratio <= slo.tpot_p95_s)
    return ok and (slo.e2e_p99_s is None or v.e2e_p99_s is None or v.e2e_p99_s * e2e_ratio <= slo.e2e_p99_s)
