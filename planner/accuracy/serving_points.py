"""Measured serving runs at a client concurrency (aiconfigurator's silicon CSV) as scenarios, predicted by the same
closed loop a user runs with `simulate --users N`.

aiconfigurator's columns (data/measurements/aiconfigurator/README.md) map onto a replica as follows; the benchmark
itself is aiperf (ai-dynamo/aiconfigurator@095f58a5 src/aiconfigurator/generator/config/backend_templates/benchmark/
bench_run.sh.j2): `aiperf profile --concurrency N --num-requests 20N --warmup-request-count 2N --isl I --osl O`
with `--isl-stddev 0 --osl-stddev 0` (deployment_config.yaml defaults) and `ignore_eos`: N users, each sending its
next request the moment its previous reply ends, every prompt I tokens, every reply exactly O tokens; the means are
over the 20N measured requests, after 2N warm-up requests.

- backend vllm / sglang / trtllm -> engine vllm / sglang / tensorrt-llm;
- system h100_sxm, h200_sxm, b200_sxm, gb200 -> the catalogue part (planner.accuracy.names.resolve_gpu);
- model_path -> a preset of the same architecture (names.resolve_model; no preset: "unknown model");
- gemm_quant_mode fp8 / fp8_block -> fp8 weights, nvfp4 -> nvfp4 (a blank precision: the checkpoint's 16 bits);
  the KV cache stays 16-bit (the files do not record it), except on InferenceMAX's rows, whose launch scripts set
  FP8 KV almost everywhere (bench_rules.inferencemax_kv_cache_dtype, said in the row's note);
- tp_size -> TP, pp_size -> PP, attention_dp_size -> DP (blank or 0 = 1); the MoE layers span TP × DP GPUs, by
  expert when moe_ep_size = TP × DP (EP on), by tensor slice when moe_tp_size = TP × DP; a mix of both
  (moe_tp_size > 1 and moe_ep_size > 1) is not a layout the planner models and the row says so;
- N users of ONE replica = batch_size × attention-DP ranks (aiconfigurator's batch is per DP rank: c256 with 64
  DP ranks has batch_size 4). That is the run's whole client concurrency (`silicon_concurrency=` in
  silicon_data_source, `_cN_` in the id) on 2,647 of the 2,710 aggregated rows; on the other 63 (TensorRT-LLM) the
  clients were 2 to 32 times more, spread over as many replicas, and the row's note says so. Under attention DP
  one rank is simulated with N / DP of the clients (planner.accuracy.bench_rules);
- the engine runs as aiconfigurator's benchmark rules launch it (planner.accuracy.bench_rules: max_num_tokens /
  max_prefill_tokens = ISL + 1500, max_batch_size = batch, TensorRT-LLM without chunked prefill), not with the
  engine's defaults; TensorRT-LLM DeepSeek rows with attention DP as InferenceX's scripts launch them (balance hold);
- rows of `source_file=2026-04-06.csv` name their launch layout in the id (`_tp8_ep8_`) while the columns hold its
  square (tp_size 64 or attention_dp_size 64 with moe_tp_size 8 × moe_ep_size 8 on one 8-GPU node): there the id
  wins (8 GPUs; DP attention when attention_dp_size > 1, TP otherwise; experts by EP when ep = tp; the clients are
  the id's `_cN_`), said in a note;
- the client that measured the row (planner.accuracy.bench_protocol): aiperf as above, or, for the rows of
  InferenceMAX's files, vLLM's benchmark_serving (10N prompts, lengths uniform in [0.8, 1] x ISL / OSL) with
  InferenceMAX's own launch (bench_rules); either way the measured requests start as a burst of N on an idle server,
  and that round counts 1/R of the mean;
- a disaggregated row (mode disagg) is reported, not predicted (its layout has prefill and decode pools the
  validate path does not evaluate yet).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from planner.accuracy.bench_protocol import INFERENCEMAX, BenchProtocol, burst_protocol, protocol_of
from planner.accuracy.bench_rules import (
    ADP_BALANCE_TIMEOUT_ITERS,
    INFERENCEMAX_RULES,
    RULES,
    balanced_adp,
    bench_settings,
    clients_per_rank,
    inferencemax_kv_cache_dtype,
    inferencemax_sglang_launch,
    reuses_cached_prompts,
)
from planner.accuracy.names import resolve_gpu, resolve_model
from planner.accuracy.user_points import UserData
from planner.core.catalog import get_model
from planner.core.errors import InputError
from planner.core.scenario import Resolved, Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel
from planner.sim.records import latencies
from planner.sim.serving import Replica, benchmark_clients, run_serving
from planner.sim.settings import ServerSettings
from planner.traffic.generators import open_loop, repeated_prompts

AICONFIGURATOR_COLUMNS = ("backend", "model_path", "system", "mode", "isl", "osl", "batch_size", "silicon_ttft_ms")
BACKENDS = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt-llm", "tensorrt-llm": "tensorrt-llm"}
WEIGHTS = {"fp8": "fp8", "fp8_block": "fp8", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "bf16": "bf16", "fp16": "fp16"}
_ID_LAYOUT = re.compile(r"_tp(\d+)_ep(\d+)_")
_CONCURRENCY = (("silicon_data_source", re.compile(r"silicon_concurrency=(\d+)")), ("id", re.compile(r"_c(\d+)_")))
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

    @property
    def clients_per_rank(self) -> int:
        """Closed-loop clients one simulated attention-DP rank serves (all of them when DP is 1)."""
        return clients_per_rank(self.concurrency, self.dp)

    @property
    def rounds(self) -> tuple[int, int, int]:
        """(clients, requests simulated, warm-up requests) of the simulated rank's closed loop: WARMUP_ROUNDS
        requests per client discarded, MEASURED_ROUNDS averaged."""
        users = self.clients_per_rank
        return users, users * (WARMUP_ROUNDS + MEASURED_ROUNDS), users * WARMUP_ROUNDS

    def settings(self, r: Resolved, seed: int = 0) -> ServerSettings:
        """How the run launched its engine: aiconfigurator's benchmark rules for its rows, else the scenario's own."""
        if self.bench_rules and not self.request_rate:
            return bench_settings(r, self.clients_per_rank, self.isl, seed, self.protocol is INFERENCEMAX, self.osl)
        return ServerSettings.of(r, seed=seed)

    @property
    def model_class(self) -> str:
        """moe/mla (mixture of experts or latent attention) or dense; "" without a preset."""
        if not self.preset:
            return ""
        m = get_model(self.preset)
        return "moe/mla" if m.is_moe or m.is_mla else "dense"


def is_aiconfigurator(fieldnames) -> bool:
    return set(AICONFIGURATOR_COLUMNS) <= set(fieldnames or ())


def read_aiconfigurator(text: str) -> list[ServingPoint]:
    """Every row as a ServingPoint (excluded ones with their reason); InputError names a row's bad number."""
    reader = csv.DictReader(io.StringIO(text))
    if not is_aiconfigurator(reader.fieldnames):
        missing = [c for c in AICONFIGURATOR_COLUMNS if c not in (reader.fieldnames or [])]
        raise InputError("points", f"missing column(s) {', '.join(missing)} (aiconfigurator silicon CSV)")
    return [parse_row(row, n) for n, row in enumerate(reader, start=2)]


def parse_row(row: dict, n: int = 0) -> ServingPoint:
    """One CSV row (n: its line, for messages) as a ServingPoint; the first reason it cannot be predicted wins."""
    where = f"row {n} ({(row.get('id') or '')[:40]})"
    notes: list[str] = []
    preset, model_note, fmt = resolve_model(row.get("model_path") or "")
    gpu_id, gpu_note = resolve_gpu(row.get("system") or "")
    notes += [x for x in (model_note, gpu_note) if x]
    tp, pp = _int(row, "tp_size", 1), _int(row, "pp_size", 1)
    dp, moe_tp, moe_ep = _int(row, "attention_dp_size", 1), _int(row, "moe_tp_size", 1), _int(row, "moe_ep_size", 1)
    squared = _ID_LAYOUT.search(row.get("id") or "")
    clients = _concurrency(row)
    concurrency = _int(row, "batch_size", 0) * dp or clients
    if squared and tp * dp == int(squared[1]) ** 2 > 1:
        concurrency = clients  # the square's batch × DP columns are the run's clients (c64: 1 × 64), not a replica's
        gpus, ep = int(squared[1]), int(squared[2])
        tp, dp = (1, gpus) if dp > 1 else (gpus, 1)
        moe_tp, moe_ep = (1, gpus) if ep == gpus else (gpus, 1)
        notes.append(f"layout read from the id (_tp{gpus}_ep{ep}_: {gpus} GPUs); its columns hold the square")
    if clients > concurrency and clients % concurrency == 0:
        notes.append(f"{clients} clients over {clients // concurrency} replicas: {concurrency} per replica")
    weights = WEIGHTS.get((row.get("gemm_quant_mode") or row.get("precision") or "").strip().lower(), "")
    weights = weights or fmt or "bf16"
    point = ServingPoint(
        id=row.get("id") or where,
        engine=BACKENDS.get((row.get("backend") or "").strip().lower(), (row.get("backend") or "").strip().lower()),
        version=(row.get("backend_version") or "").strip(),
        model=(row.get("model_path") or "").strip(),
        gpu=(row.get("system") or "").strip(),
        preset=preset or "",
        gpu_id=gpu_id or "",
        weights=weights,
        tp=tp,
        pp=pp,
        dp=dp,
        expert_parallel=moe_ep > 1,
        isl=_int(row, "isl", 0),
        osl=_int(row, "osl", 0),
        concurrency=concurrency,
        ttft_ms=_positive(row.get("silicon_ttft_ms"), f"{where}, column silicon_ttft_ms"),
        tpot_ms=_positive(row.get("silicon_tpot_ms"), f"{where}, column silicon_tpot_ms"),
        notes=tuple(notes),
        bench_rules=True,
        protocol=protocol_of(row),
    )
    if dp > 1:
        notes.append(f"one of {dp} attention-DP ranks simulated, {point.clients_per_rank} clients")
    if point.protocol is INFERENCEMAX:
        notes.append(f"assumed measured by {INFERENCEMAX.name} and launched per {INFERENCEMAX_RULES}")
        kv = inferencemax_kv_cache_dtype(point.engine, point.preset, point.gpu_id, point.weights)
        point = replace(point, kv_cache_dtype=kv)
        if kv != "auto":
            notes.append(f"KV cache {kv}, as InferenceMAX's launch script sets it")
        if point.engine == "sglang":
            launch = inferencemax_sglang_launch(point.preset, point.weights, point.gpu_id, point.tp)
            point = replace(point, mem_fraction_static=launch.mem_fraction)
            if launch.mem_fraction is not None:
                notes.append(
                    f"SGLang at --mem-fraction-static {launch.mem_fraction:g} and --chunked-prefill-size "
                    f"{launch.tokens:,}, as InferenceMAX's script sets"
                )
    else:
        notes.append(f"launched per {RULES}")
    if balanced_adp(point.engine, dp, point.preset):
        notes.append(
            f"assumed InferenceX's launch: attention-DP balance timeout_iters {ADP_BALANCE_TIMEOUT_ITERS}, "
            "max_num_tokens (C + ISL + 127) // 64 × 64"
        )
    return replace(point, excluded=_exclusion(point, row, moe_tp, moe_ep), notes=tuple(notes))


def _exclusion(p: ServingPoint, row: dict, moe_tp: int, moe_ep: int) -> str:
    if (row.get("mode") or "agg").strip() != "agg":
        return "disaggregated layout (prefill and decode pools): not evaluated by validate yet"
    if not p.preset:
        return f"unknown model {p.model!r} (no preset of that architecture, or its config is unreadable)"
    if not p.gpu_id:
        return f"unknown GPU {p.gpu!r} (not in data/gpus.yaml)"
    if p.engine not in BACKENDS.values():
        return f"unknown engine {p.engine!r}"
    if p.isl <= 0 or p.osl <= 0 or p.concurrency <= 0:
        return "isl, osl and batch_size must be positive whole numbers"
    if _is_moe(p.preset) and moe_tp > 1 and moe_ep > 1:
        return f"MoE layers split by tensor ({moe_tp}) and by expert ({moe_ep}) at once: not modelled"
    if _is_moe(p.preset) and max(moe_tp, moe_ep) not in (1, p.tp * p.dp):
        return f"MoE group of {max(moe_tp, moe_ep)} GPUs differs from TP × DP = {p.tp * p.dp}: not modelled"
    return ""


def _is_moe(preset: str) -> bool:
    return get_model(preset).is_moe


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
    MEASURED_ROUNDS averaged; the engine profile's wave_fraction φ of them arrive in waves, so the steady means are
    (1 − φ) × those of clients spread out + φ × those of clients in lockstep. A row whose client is known
    (p.protocol, planner.accuracy.bench_protocol) measured R rounds of N starting with a burst of N on an idle
    server: its means are (burst round + (R − 1) × steady) / R, the burst round being the first round of the
    lockstep simulation."""
    r = resolved(p)
    if p.request_rate:
        return _predict(r, p, seed, wave=False)
    phi = PerfModel(r).eff.wave_fraction
    spread = _predict(r, p, seed, wave=False)
    if phi <= 0 and p.protocol is None:
        return spread
    wave = _predict(r, p, seed, wave=True)
    mix = lambda a, b: (1 - phi) * a + phi * b  # noqa: E731
    ttft, tpot = mix(spread.ttft_ms, wave.ttft_ms), mix(spread.tpot_ms, wave.tpot_ms)
    if p.protocol is not None:
        ttft = p.protocol.measured_mean(wave.burst_ttft_ms, ttft)
        tpot = p.protocol.measured_mean(wave.burst_tpot_ms, tpot)
    return ServingPrediction(ttft, tpot, spread.num_requests)


def length_specs(p: ServingPoint) -> tuple[str, str]:
    """(prompt, output) length distributions of the row's requests: its client's (fixed when unknown)."""
    if p.protocol is None:
        return f"fixed:{p.isl}", f"fixed:{p.osl}"
    return p.protocol.length_spec(p.isl), p.protocol.length_spec(p.osl)


def _predict(r: Resolved, p: ServingPoint, seed: int, wave: bool) -> ServingPrediction:
    prompt, output = length_specs(p)
    if p.request_rate:  # a client sending at a rate: Poisson arrivals (vllm bench serve --request-rate default)
        n, warmup = OPEN_LOOP_REQUESTS, 0
        wl = open_loop(n, p.request_rate, prompt, output, "poisson", 1.0, seed=seed)
    else:
        users, n, warmup = p.rounds
        wl = benchmark_clients(r, users, n, prompt, output, seed, wave=wave)
    rep = Replica(r, p.settings(r, seed))
    res = run_serving(rep, client_prompts(p, rep, wl, seed))
    lat = latencies(res)
    done = np.flatnonzero(res.requests.finished)
    keep = done >= warmup  # closed loop: request j is user j mod N's (j // N)-th request
    if not keep.any():
        raise InputError("concurrency", "no measured request finished in the simulation")
    ttft, tpot = lat["ttft_s"][keep], lat["tpot_s"][keep]
    first = ~keep  # the first round: in the lockstep run, the burst of N on an idle server
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


def _concurrency(row: dict) -> int:
    """The run's whole client concurrency: its source's silicon_concurrency, the id's _cN_, else batch_size."""
    for key, pattern in _CONCURRENCY:
        found = pattern.search(row.get(key) or "")
        if found and int(found[1]) > 0:
            return int(found[1])
    return _int(row, "batch_size", 0)


def _int(row: dict, key: str, default: int) -> int:
    text = (row.get(key) or "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        return default
    return int(value) if math.isfinite(value) and value >= 1 else default


def _positive(text, where: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InputError(where, f"not a number: {str(text)[:40]!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(where, f"must be a positive finite number, got {str(text)[:40]!r}")
    return value


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
