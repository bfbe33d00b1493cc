"""Measured serving runs at a client concurrency as scenarios, predicted by the same closed loop a user runs with
`simulate --users N`: a ServingPoint (one run: engine, model, part, layout, lengths, clients, its measured means, how
its engine launched and how its client measured it), the replica it ran (`resolved`), its predicted mean TTFT and TPOT
(`predict`), and validate's table. Rows of aiconfigurator's silicon CSV become ServingPoints in
planner.accuracy.aiconfigurator_rows (the column mapping is there); a client's own result files in `upload_points`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.accuracy.bench_protocol import INFERENCEMAX, BenchProtocol, burst_protocol
from planner.accuracy.bench_rules import (
    bench_settings,
    clients_per_rank,
    reuses_cached_prompts,
)
from planner.accuracy.inferencemax_launch import inferencemax_mtp
from planner.accuracy.names import resolve_gpu, resolve_model
from planner.accuracy.user_points import UserData
from planner.core.catalog import get_model
from planner.core.errors import InputError
from planner.core.scenario import Resolved, Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel
from planner.sim.records import latencies
from planner.sim.serving import TRAILING_ROUNDS, Replica, benchmark_clients, run_serving
from planner.sim.settings import ServerSettings
from planner.traffic.generators import open_loop, repeated_prompts

OPEN_LOOP_REQUESTS = 300  # requests simulated for a run at a request rate (the mean settles within a few hundred)
MEASURED_ROUNDS = 2  # requests per user measured after the warm-up round (aiperf measures 20; the mean settles by 2)
WARMUP_ROUNDS = 1  # requests per user discarded first (aiperf: --warmup-request-count 2N)


@dataclass(frozen=True)
class ServingPoint:
    """One measured run: N users in a closed loop of fixed-length requests on one replica."""

    id: str
    engine: str
    version: str
    model: str  # the file's name
    gpu: str  # the file's name
    preset: str  # planner preset id ("" when none)
    gpu_id: str  # catalogue id ("" when none)
    weights: str
    tp: int
    pp: int
    dp: int
    expert_parallel: bool
    isl: int
    osl: int
    concurrency: int
    ttft_ms: float | None  # None: not measured
    tpot_ms: float | None
    excluded: str = ""  # why the row is not predicted ("" when usable)
    notes: tuple[str, ...] = ()
    request_rate: float | None = None  # arrivals per second (open loop); None = `concurrency` closed-loop users
    bench_rules: bool = False  # launched as aiconfigurator's benchmark rules set engines (planner.accuracy.bench_rules)
    protocol: BenchProtocol | None = None  # how the client measured it (bench_protocol); None: steady state only
    kv_cache_dtype: str = "auto"  # the KV cache dtype launched (a Deployment.kv_cache_dtype id)
    mem_fraction_static: float | None = None  # SGLang's --mem-fraction-static as launched (None: SGLang's default)
    mtp_depth: int = 0  # draft tokens a step of the run's multi-token prediction (bench_rules); 0: none
    measured_on: str = ""  # the run's date, YYYY-MM-DD ("" unknown): launches changed over time (bench_rules)

    @property
    def clients_per_rank(self) -> int:
        """Closed-loop clients one simulated attention-DP rank serves (all of them when DP is 1)."""
        return clients_per_rank(self.concurrency, self.dp)

    @property
    def rounds(self) -> tuple[int, int, int, int]:
        """(clients, requests simulated, first measured, first after the measured) of the simulated rank's closed
        loop: WARMUP_ROUNDS requests per client discarded, MEASURED_ROUNDS averaged, TRAILING_ROUNDS run after them
        (request j is client j mod N's (j // N)-th request)."""
        users = self.clients_per_rank
        warmup, end = users * WARMUP_ROUNDS, users * (WARMUP_ROUNDS + MEASURED_ROUNDS)
        return users, end + users * TRAILING_ROUNDS, warmup, end

    def settings(self, r: Resolved, seed: int = 0) -> ServerSettings:
        """How the run launched its engine: aiconfigurator's benchmark rules for its rows, else the scenario's own."""
        if self.bench_rules and not self.request_rate:
            return bench_settings(
                r,
                self.clients_per_rank,
                self.isl,
                seed,
                self.protocol == INFERENCEMAX,
                self.osl,
                inferencemax_mtp(self.mtp_depth),
                self.measured_on,
            )
        return ServerSettings.of(r, seed=seed)

    @property
    def model_class(self) -> str:
        """moe/mla (mixture of experts or latent attention) or dense; "" without a preset."""
        if not self.preset:
            return ""
        m = get_model(self.preset)
        return "moe/mla" if m.is_moe or m.is_mla else "dense"


def resolved(p: ServingPoint) -> Resolved:
    """The replica the row ran: preset, part, layout and weights under the row's engine."""
    dep = Deployment(
        num_gpus=p.tp * p.pp * p.dp,
        tensor_parallel_size=p.tp,
        pipeline_parallel_size=p.pp,
        data_parallel_size=p.dp,
        enable_expert_parallel=p.expert_parallel,
        weights=p.weights,
        kv_cache_dtype=p.kv_cache_dtype,
        mem_fraction_static=p.mem_fraction_static,
    )
    return resolve(Scenario(model=p.preset, gpu=p.gpu_id, deployment=dep, engine=p.engine))


@dataclass(frozen=True)
class ServingPrediction:
    ttft_ms: float
    tpot_ms: float
    num_requests: int
    burst_ttft_ms: float = float("nan")  # the first round's means (the warm-up round of the run simulated)
    burst_tpot_ms: float = float("nan")


def predict(p: ServingPoint, seed: int = 0) -> ServingPrediction:
    """Mean TTFT and TPOT of the measured requests of N benchmark clients (`simulate --users N --think-time 0`:
    planner.sim.serving.benchmark_clients). Steady state: WARMUP_ROUNDS requests per user discarded, the next
    MEASURED_ROUNDS averaged, TRAILING_ROUNDS simulated after them so that they run at N in flight; the engine
    profile's wave_fraction φ of them arrive in waves, so the steady means are (1 − φ) × those of clients spread out
    + φ × those of clients in lockstep. A row whose client is known
    (p.protocol, planner.accuracy.bench_protocol) measured R rounds of N starting with a burst of N on an idle
    server: its means are (burst round + (R − 1) × steady) / R, the burst round being the first round of the
    lockstep simulation."""
    r = resolved(p)
    if p.request_rate:
        return _predict(r, p, seed, wave=False)
    phi = PerfModel(r).eff.wave_fraction
    if phi <= 0 and p.protocol is None:
        return _predict(r, p, seed, wave=False)
    return weighed(p, *predict_parts(p, seed, r), phi)


def weighed(p: ServingPoint, spread: ServingPrediction, wave: ServingPrediction, phi: float) -> ServingPrediction:
    """`predict`'s means from its two runs (predict_parts) and the wave fraction φ: (1 − φ) × spread + φ × lockstep,
    then the client's burst round weighed 1/R where the client is known."""
    mix = lambda a, b: (1 - phi) * a + phi * b  # noqa: E731
    ttft, tpot = mix(spread.ttft_ms, wave.ttft_ms), mix(spread.tpot_ms, wave.tpot_ms)
    if p.protocol is not None:
        ttft = p.protocol.measured_mean(wave.burst_ttft_ms, ttft)
        tpot = p.protocol.measured_mean(wave.burst_tpot_ms, tpot)
    return ServingPrediction(ttft, tpot, spread.num_requests)


def predict_parts(
    p: ServingPoint, seed: int = 0, r: Resolved | None = None
) -> tuple[ServingPrediction, ServingPrediction]:
    """The two closed-loop simulations `predict` weighs, (clients spread out, clients started together): each with
    its steady means (the measured rounds) and its first round's (`burst_*`; in the second, the burst of N on an idle
    server). benchmarks/ttft_decomposition.py sets them beside the measured means."""
    r = r or resolved(p)
    return _predict(r, p, seed, wave=False), _predict(r, p, seed, wave=True)


def length_specs(p: ServingPoint) -> tuple[str, str]:
    """(prompt, output) length distributions of the row's requests: its client's (fixed when unknown)."""
    if p.protocol is None:
        return f"fixed:{p.isl}", f"fixed:{p.osl}"
    return p.protocol.length_spec(p.isl), p.protocol.length_spec(p.osl)


def _predict(r: Resolved, p: ServingPoint, seed: int, wave: bool) -> ServingPrediction:
    prompt, output = length_specs(p)
    if p.request_rate:  # a client sending at a rate: Poisson arrivals (vllm bench serve --request-rate default)
        n, warmup = OPEN_LOOP_REQUESTS, 0
        end = n
        wl = open_loop(n, p.request_rate, prompt, output, "poisson", 1.0, seed=seed)
    else:
        users, n, warmup, end = p.rounds
        wl = benchmark_clients(r, users, n, prompt, output, seed, wave=wave)
    rep = Replica(r, p.settings(r, seed))
    res = run_serving(rep, client_prompts(p, rep, wl, seed))
    lat = latencies(res)
    done = np.flatnonzero(res.requests.finished)
    keep = (done >= warmup) & (done < end)  # closed loop: request j is user j mod N's (j // N)-th request
    if not keep.any():
        raise InputError("concurrency", "no measured request finished in the simulation")
    ttft, tpot = lat["ttft_s"][keep], lat["tpot_s"][keep]
    first = done < warmup  # the first round: in the lockstep run, the burst of N on an idle server
    burst_ttft = 1e3 * float(np.nanmean(lat["ttft_s"][first])) if first.any() else np.nan
    burst_tpot = 1e3 * float(np.nanmean(lat["tpot_s"][first])) if first.any() else np.nan
    return ServingPrediction(1e3 * float(np.nanmean(ttft)), 1e3 * float(np.nanmean(tpot)), n, burst_ttft, burst_tpot)


def client_prompts(p: ServingPoint, rep: Replica, wl, seed: int = 0):
    """The closed loop `wl` with the prompts its client repeats (BenchProtocol.prompt_pool) marked for the engine's
    prefix cache: aiperf draws from 100 prompts, and vLLM and SGLang launched by aiconfigurator's rules keep their
    prefix caches on, its TensorRT-LLM templates do not (bench_rules.reuses_cached_prompts)."""
    share = prompt_repeat_share(p, rep)
    if share <= 0:
        return wl
    return repeated_prompts(wl, p.clients_per_rank, share, rep.scheduler_config.block_size, seed)


def prompt_repeat_share(p: ServingPoint, rep: Replica) -> float:
    """The share of the row's measured prompts served from the prefix cache (BenchProtocol.reuse_share), the cache
    holding what the KV pool has beyond N running requests."""
    proto = p.protocol
    if proto is None or not proto.prompt_pool or p.request_rate or not rep.settings.prefix_caching:
        return 0.0
    if p.bench_rules and not reuses_cached_prompts(rep.resolved.engine.id):
        return 0.0
    users = p.clients_per_rank
    spare = rep.scheduler_config.kv_pool_tokens - users * (p.isl + p.osl)
    return proto.reuse_share(users, max(0, spare) / max(1, p.isl))


# -- as validate's table ------------------------------------------------------------------------------------------
METRICS = (("mean_ttft_ms", "ttft_ms", "ttft at concurrency"), ("mean_tpot_ms", "tpot_ms", "tpot at concurrency"))


def serving_table(points: list[ServingPoint], seed: int = 0) -> pd.DataFrame:
    """Predicted against measured mean TTFT and TPOT for every point (two table rows per CSV row), the columns of
    planner.accuracy.validation.points_table plus `note` (how names were read) and `row` (the CSV row's id)."""
    rows = []
    for p in points:
        pred, status, profile, family, reason = None, "", "", "", p.excluded
        if not reason:
            try:
                pred = predict(p, seed)
                pm = PerfModel(resolved(p))
                status, profile, family = pm.choice.status, pm.choice.source_key, pm.resolved.gpu.family
            except (InputError, ValueError) as err:
                reason = str(err)
        for metric, attr, group in METRICS:
            measured = getattr(p, attr)
            if measured is None:
                continue
            value = getattr(pred, attr) if pred is not None else np.nan
            rows.append(
                {
                    "id": f"{p.id}:{attr.split('_')[0]}",
                    "row": p.id,
                    "source": "aiconfigurator silicon CSV",
                    "model": p.model,
                    "gpu": p.gpu_id or p.gpu,
                    "engine": p.engine,
                    "tp": str(p.tp),
                    "metric": metric,
                    "unit": "ms",
                    "measured": measured,
                    "predicted": value,
                    "error_pct": 100 * (value - measured) / measured if pred is not None else np.nan,
                    "profile": profile,
                    "status": status,
                    "family": family,
                    "group": group if not reason else "",
                    "reason": reason,
                    "note": "; ".join(p.notes),
                }
            )
    return pd.DataFrame(rows)


# -- a client's own result files (vllm bench serve, SGLang bench_serving, GuideLLM) ------------------------------
def upload_points(
    data: UserData, model: str | None, gpu: str | None, tp: int, engine: str, weights: str | None = None
) -> list[ServingPoint]:
    """The runs of an uploaded result file on the replica the flags name (the file records no GPU or layout):
    the model from --model or the file's model id, the GPU from --gpu; a run without either is skipped, saying so."""
    preset, note, fmt = resolve_model(model or data.model_id or "")
    gpu_id, gpu_note = resolve_gpu(gpu or "")
    points = []
    for i, u in enumerate(data.points):
        users = u.users or max(1, round(u.batch))
        excluded = ""
        if not preset:
            excluded = f"unknown model {model or data.model_id!r}: pass --model (a preset id)"
        elif not gpu_id:
            excluded = f"unknown GPU {gpu!r}: pass --gpu (the file does not record it)" if gpu else "no GPU: pass --gpu"
        elif u.request_rate is None and not u.users:
            excluded = "neither a request rate nor a client concurrency (a batch of all requests at once)"
        protocol = burst_protocol(u.rounds) if u.rounds else None
        scored = f"scored as {protocol.name}" if protocol is not None else ""
        notes = tuple(x for x in (note, gpu_note, u.note, scored) if x)
        points.append(
            ServingPoint(
                id=f"{data.kind}[{i}] {u.label}",
                engine=engine,
                version="",
                model=model or data.model_id,
                gpu=gpu or "",
                preset=preset or "",
                gpu_id=gpu_id or "",
                weights=weights or fmt or "bf16",
                tp=tp,
                pp=1,
                dp=1,
                expert_parallel=False,
                isl=max(1, round(u.input_tokens)),
                osl=max(1, round(u.output_tokens)),
                concurrency=users,
                ttft_ms=u.ttft_ms,
                tpot_ms=u.tpot_ms,
                excluded=excluded,
                notes=notes,
                request_rate=u.request_rate,
                protocol=protocol,
            )
        )
    return points
