"""Measured serving runs at a client concurrency as scenarios, predicted by the command a user runs: a ServingPoint
(one run: engine, model, part, layout, lengths, clients, its measured means, how its engine launched and how its
client measured it), the replica it ran (`resolved`), the run said as `simulate` flags (`simulate_flags`; predicted
through planner.cli.simulate_cmd by planner.cli.validate_cmd.predict_point), and validate's table. Rows of
aiconfigurator's silicon CSV become ServingPoints in planner.accuracy.aiconfigurator_rows (the column mapping is
there); a client's own result files in `upload_points`.
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
from planner.sim.settings import ServerSettings

OPEN_LOOP_REQUESTS = 300  # requests simulated for a run at a request rate (the mean settles within a few hundred)
MEASURED_ROUNDS = 2  # a row whose client is unknown: rounds of N measured after WARMUP_ROUNDS (the mean settles by 2)
WARMUP_ROUNDS = 1  # rounds of N left out first


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
    source: str = ""  # the campaign the row comes from (source_of): held out whole by the accuracy benchmarks, never
    # an input of the prediction (simulate_flags does not read it)

    @property
    def clients_per_rank(self) -> int:
        """Closed-loop clients one simulated attention-DP rank serves (all of them when DP is 1)."""
        return clients_per_rank(self.concurrency, self.dp)

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


def simulate_flags(p: ServingPoint, seed: int = 0) -> list[str]:
    """The `servingplan simulate` flags that say this row as a user would enter it: model, GPUs and layout, weights
    and KV dtype, the engine and the settings it launched with (under the engine's own flag names), and the client
    with its concurrency, lengths, request count and warm-up. Nothing else of the row (its source, date or image)
    reaches the prediction: `validate` and the accuracy benchmarks run these flags through the CLI's own
    planner.cli.simulate_cmd.simulate_argv."""
    r = resolved(p)
    dep = r.deployment
    flags = ["--model", p.preset, "--gpu", p.gpu_id, "--engine", p.engine, "--tp", str(p.tp), "--pp", str(p.pp)]
    flags += ["--dp", str(p.dp), "--ep", str(dep.moe_shard_size if p.expert_parallel else 1)]
    flags += ["--weights", p.weights, "--kv-dtype", p.kv_cache_dtype, "--seed", str(seed)]
    if p.mem_fraction_static is not None:
        flags += ["--mem-fraction-static", repr(p.mem_fraction_static)]
    flags += engine_flags(p.settings(r, seed), p.engine)
    return flags + client_flags(p)


# SchedulerConfig fields a launch sets (bench_rules) -> the engine's flag (planner.cli.scenario_args)
_OVERRIDE_FLAGS = {
    "max_prefill_tokens": "--max-prefill-tokens",
    "scheduler_recv_interval": "--scheduler-recv-interval",
    "batch_wait_timeout_iters": "--batch-wait-timeout-iters",
    "batch_wait_max_tokens_ratio": "--batch-wait-max-tokens-ratio",
    "adp_balance_timeout_iters": "--attention-dp-timeout-iters",
}


def engine_flags(s: ServerSettings, engine: str) -> list[str]:
    """The launch settings `s` as the simulate flags a user passes for them."""
    flags = ["--max-num-seqs", str(s.max_num_seqs), "--max-num-batched-tokens", str(s.max_num_batched_tokens)]
    if not s.prefix_caching or (engine == "tensorrt-llm" and not reuses_cached_prompts(engine)):
        flags.append("--no-enable-prefix-caching")
    for key, value in s.scheduler_overrides:
        if key == "enable_chunked_prefill":
            flags += ["--enable-chunked-prefill", "true" if value else "false"]
        elif key in _OVERRIDE_FLAGS and value:
            flags += [_OVERRIDE_FLAGS[key], repr(value) if isinstance(value, float) else str(value)]
        elif key not in _OVERRIDE_FLAGS:
            raise InputError(key, "a launch setting with no engine flag cannot be predicted through the CLI")
    if s.spec is not None:
        flags += ["--spec-method", s.spec.method, "--spec-k", str(s.spec.k), "--spec-alpha", repr(s.spec.alpha)]
    return flags


def client_flags(p: ServingPoint) -> list[str]:
    """The row's traffic as simulate flags: N streams of its client (its rounds, warm-up and lengths), or its rate."""
    prompt, output = length_specs(p)
    lengths = ["--input-dist", prompt, "--output-dist", output]
    if p.request_rate:  # a client sending at a rate: Poisson arrivals (vllm bench serve --request-rate default)
        return ["--rate", repr(p.request_rate), "--num-requests", str(OPEN_LOOP_REQUESTS)] + lengths
    proto = p.protocol
    client = proto.client if proto is not None else "vllm-bench"
    rounds = proto.rounds if proto is not None else MEASURED_ROUNDS
    warmup = proto.warmup_flag_rounds if proto is not None else WARMUP_ROUNDS
    flags = ["--users", str(p.concurrency), "--client", client, "--num-requests", str(rounds * p.concurrency)]
    flags += ["--warmup-requests", str(warmup * p.concurrency)] + lengths
    pooled = proto is not None and proto.prompt_pool and (not p.bench_rules or reuses_cached_prompts(p.engine))
    return flags + ["--prompt-pool", str(proto.prompt_pool if pooled else 0)]  # 0: every prompt new


def length_specs(p: ServingPoint) -> tuple[str, str]:
    """(prompt, output) length distributions of the row's requests: its client's (fixed when unknown)."""
    if p.protocol is None:
        return f"fixed:{p.isl}", f"fixed:{p.osl}"
    return p.protocol.length_spec(p.isl), p.protocol.length_spec(p.osl)


def prediction(out: dict) -> ServingPrediction:
    """A row's predicted means from `simulate --json`'s output: the measured requests' mean TTFT and TPOT."""
    ttft, tpot = out["ttft_s"]["mean"], out["tpot_s"]["mean"]
    if ttft is None:
        raise InputError("concurrency", "no measured request finished in the simulation")
    return ServingPrediction(1e3 * ttft, 1e3 * (tpot if tpot is not None else float("nan")), out["num_requests"])


# -- as validate's table ------------------------------------------------------------------------------------------
METRICS = (("mean_ttft_ms", "ttft_ms", "ttft at concurrency"), ("mean_tpot_ms", "tpot_ms", "tpot at concurrency"))


def serving_table(points: list[ServingPoint], predict, seed: int = 0) -> pd.DataFrame:
    """Predicted against measured mean TTFT and TPOT for every point (two table rows per CSV row), the columns of
    planner.accuracy.validation.points_table plus `note` (how names were read) and `row` (the CSV row's id).
    `predict(point, seed)` -> ServingPrediction is the CLI's (planner.cli.validate_cmd.predict_point: the row's
    simulate_flags through `simulate`)."""
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
