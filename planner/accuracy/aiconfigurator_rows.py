"""Rows of aiconfigurator's silicon CSV (mean TTFT and TPOT of measured serving runs at a client concurrency) as
ServingPoints, which planner.accuracy.serving_points predicts with the closed loop of `simulate --users N`.

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
  FP8 KV almost everywhere (inferencemax_launch.inferencemax_kv_cache_dtype, said in the row's note);
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
  the id's `_cN_`), said in a note; the database dump's copies of InferenceMAX's runs hold the same square without
  the layout in the id (tp_size or attention_dp_size g², moe g × g): read the same way, g GPUs with EP g
  (`_square_layout`), said in a note;
- the client that measured the row (planner.accuracy.bench_protocol): aiperf as above, or, for the rows of
  InferenceMAX's files and of the database dump (the same runs: bench_protocol's note), vLLM's benchmark_serving
  (10N prompts, lengths uniform in [0.8, 1] x ISL / OSL) with InferenceMAX's own launch (bench_rules); either way the
  measured requests start as a burst of N on an idle server, and that round counts 1/R of the mean;
- the launch that ran, where the source tells it: TensorRT-LLM's DeepSeek-R1 runs on B200 whose image is InferenceMAX's
  -mtp configs' (tensorrt-llm/release:1.2.0rc6.post3) run multi-token prediction with that script's budget, and its
  TP runs measured before 2026-01-21 run without the 8,192-token floor (planner.accuracy.bench_rules), each said in a
  note;
- a disaggregated row (mode disagg) is reported, not predicted (its layout has prefill and decode pools the
  validate path does not evaluate yet).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import replace

from planner.accuracy.bench_protocol import INFERENCEMAX, INFERENCEMAX_DB_DUMP, INFERENCEMAX_FILES, protocol_of
from planner.accuracy.bench_rules import RULES
from planner.accuracy.inferencemax_launch import (
    ADP_BALANCE_TIMEOUT_ITERS,
    INFERENCEMAX_RULES,
    balanced_adp,
    inferencemax_kv_cache_dtype,
    inferencemax_mtp_depth,
    inferencemax_sglang_launch,
    unfloored_dsr1_trt,
)
from planner.accuracy.names import resolve_gpu, resolve_model
from planner.accuracy.serving_points import ServingPoint
from planner.accuracy.validation import finite_positive
from planner.core.catalog import get_model
from planner.core.errors import InputError

AICONFIGURATOR_COLUMNS = ("backend", "model_path", "system", "mode", "isl", "osl", "batch_size", "silicon_ttft_ms")
BACKENDS = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt-llm", "tensorrt-llm": "tensorrt-llm"}
WEIGHTS = {"fp8": "fp8", "fp8_block": "fp8", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "bf16": "bf16", "fp16": "fp16"}
_MEASURED = re.compile(r"measured=(\d{4}-\d{2}-\d{2})")
_IMAGE = re.compile(r"(?:image=|; )((?:nvcr\.io|lmsysorg/|vllm/)[^;]+)")
_ID_LAYOUT = re.compile(r"_tp(\d+)_ep(\d+)_")
_CONCURRENCY = (("silicon_data_source", re.compile(r"silicon_concurrency=(\d+)")), ("id", re.compile(r"_c(\d+)_")))


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
    protocol = protocol_of(row)
    clients = _concurrency(row)
    concurrency = _int(row, "batch_size", 0) * dp or clients
    square = _square_layout(row, protocol, tp, dp, moe_tp, moe_ep)
    if square:
        gpus, ep, note = square
        concurrency = clients  # the square's batch × DP columns are the run's clients (c64: 1 × 64), not a replica's
        tp, dp = (1, gpus) if dp > 1 else (gpus, 1)
        moe_tp, moe_ep = (1, gpus) if ep == gpus else (gpus, 1)
        notes.append(note)
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
        ttft_ms=finite_positive(row.get("silicon_ttft_ms"), f"{where}, column silicon_ttft_ms"),
        tpot_ms=finite_positive(row.get("silicon_tpot_ms"), f"{where}, column silicon_tpot_ms"),
        notes=tuple(notes),
        bench_rules=True,
        protocol=protocol,
        measured_on=_measured_on(row),
        source=source_of(row),
    )
    if dp > 1:
        notes.append(f"one of {dp} attention-DP ranks simulated, {point.clients_per_rank} clients")
    if point.protocol == INFERENCEMAX:
        notes.append(f"assumed measured by {INFERENCEMAX.name} and launched per {INFERENCEMAX_RULES}")
        kv = inferencemax_kv_cache_dtype(point.engine, point.preset, point.gpu_id, point.weights)
        point = replace(point, kv_cache_dtype=kv)
        if kv != "auto":
            notes.append(f"KV cache {kv}, as InferenceMAX's launch script sets it")
        image = _image(row)
        k = inferencemax_mtp_depth(point.engine, point.preset, point.gpu_id, dp, image, point.measured_on)
        if k:
            point = replace(point, mtp_depth=k)
            image, day = image or "not given", point.measured_on or "not given"
            drafts = f"{k} draft token{'s' if k > 1 else ''}"
            notes.append(
                f"multi-token prediction with {drafts} a step: an InferenceMAX -mtp config's run (image {image}, "
                f"measured {day})"
            )
        if unfloored_dsr1_trt(point.engine, point.preset, dp, point.measured_on) and not k:
            notes.append(
                f"measured {point.measured_on}, before InferenceX's 8,192-token floor: max_num_tokens "
                "(C + ISL + 127) // 64 × 64"
            )
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
            "max_num_tokens max((C + ISL + 127) // 64 × 64, 8,192)"
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


def _square_layout(row: dict, protocol, tp: int, dp: int, moe_tp: int, moe_ep: int) -> tuple[int, int, str] | None:
    """(GPUs, EP, note) of a row whose columns hold the square of its layout (module note), else None. InferenceMAX's
    files name the layout in the id (`_tp8_ep8_`: tp_size 64 or attention_dp_size 64, moe 8 × 8; `_tp4_ep4_`: 16,
    4 × 4); the database dump's copies of the same runs (bench_protocol note) hold the same columns without it, read
    as g GPUs with EP g: all 62 of its square rows whose measured pair repeats a file row's repeat a
    `_tp{g}_ep{g}_` one."""
    named = _ID_LAYOUT.search(row.get("id") or "")
    if named and tp * dp == int(named[1]) ** 2 > 1:
        gpus, ep = int(named[1]), int(named[2])
        return gpus, ep, f"layout read from the id (_tp{gpus}_ep{ep}_: {gpus} GPUs); its columns hold the square"
    if protocol == INFERENCEMAX and moe_tp == moe_ep > 1 and tp * dp == moe_ep * moe_ep:
        g = moe_ep
        return (
            g,
            g,
            (
                f"layout read from the square in the columns (TP × DP {g * g} = MoE {g} × {g}: {g} GPUs, experts by EP "
                f"{g}), as InferenceMAX's runs whose id names it (_tp{g}_ep{g}_) hold it"
            ),
        )
    return None


def source_of(row: dict) -> str:
    """The campaign a row comes from, as the accuracy benchmarks hold it out whole: "inferencemax" for InferenceMAX's
    runs (its two files, the database dump that repeats them, and the Qwen3.5 gap-analysis file, whose rows repeat
    its runs: docs/research/ttft_gaps.md gap 6), else aiconfigurator's gap-analysis folder ("aic-gap/h100_sxm/
    vllm"), else the source's first field."""
    src = (row.get("silicon_data_source") or "").split(";")[0].strip()
    if src.startswith(INFERENCEMAX_FILES + INFERENCEMAX_DB_DUMP) or "qwen3.5-397b-gap-analysis" in src:
        return "inferencemax"
    m = re.search(r"aic-auto-gap-analysis/data/([^/]+)/([^/]+)/", src)
    return f"aic-gap/{m.group(1)}/{m.group(2)}" if m else src[:60]


def _measured_on(row: dict) -> str:
    """The date the row's source says it was measured (YYYY-MM-DD; "" when none)."""
    m = _MEASURED.search(row.get("silicon_data_source") or "")
    return m.group(1) if m else ""


def _image(row: dict) -> str:
    """The container image the row's source names ("" when none)."""
    m = _IMAGE.search(row.get("silicon_data_source") or "")
    return m.group(1).strip() if m else ""


def _is_moe(preset: str) -> bool:
    return get_model(preset).is_moe


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
