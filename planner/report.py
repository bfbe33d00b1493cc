"""The sizing report: the plan (deployment, replicas, cost, the SLO and whether it holds) and every input and
output behind it, one row per figure.

Rows are (section, name, value, unit, note): values in SI units as the planner computes them (bytes, seconds,
tokens, USD), the note holding the formula or the assumption. The same rows become CSV, JSON or Markdown (with
chart images when the caller renders them; planner/ itself never draws). Sections, in order: the plan (capacity
search of planner.capacity.capacity_plan.capacity_plan at the scenario's target rate, SLO and traffic), the latency at
the operating point (continuous batching, simulated at target / replicas per replica), the deployment choice
(chosen and runner-up, when a ranking from planner.capacity.recommend is given), the assumptions and their
calibration status, then the inputs, memory and tensor-parallel options.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict

from planner.capacity.capacity_plan import CapacityPlan, capacity_plan
from planner.capacity.cost import replica_scenario
from planner.core.errors import InputError
from planner.core.safe_text import csv_cell, markdown_cell
from planner.core.scenario import Resolved, Scenario, resolve
from planner.core.units import GB, GiB
from planner.latency.metrics import estimate, memory_limit
from planner.memory.plan import MemoryPlan, breakdown_per_gpu, plan_memory
from planner.memory.plan_sweeps import tp_options
from planner.report_plan import ReportRow, assumption_rows, choice_rows, latency_ratios, plan_rows
from planner.teaching.inputs import split_context

COLUMNS = ("section", "name", "value", "unit", "note")
REPORT_OUTPUT_TOKENS = 300  # the one-request reference row splits tokens per request with the primer's 300-token answer


def _input_rows(s: Scenario, r: Resolved) -> list[ReportRow]:
    m, g, d = r.model, r.gpu, r.deployment
    rows = [
        ReportRow("input: model", "model", m.name, "", "preset id" if s.model_spec is None else "uploaded or manual"),
        ReportRow("input: model", "model_type", m.model_type),
    ]
    for field in (
        "num_layers",
        "hidden_size",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
        "max_position_embeddings",
        "tie_word_embeddings",
        "sliding_window",
        "num_sliding_layers",
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        "num_shared_experts",
        "kv_lora_rank",
    ):
        value = getattr(m, field)
        rows.append(ReportRow("input: model", field, "" if value is None else value, "", "config.json"))
    rows += [
        ReportRow("input: GPU", "gpu", g.id, "", g.name),
        ReportRow("input: GPU", "memory_gb", g.memory_gb, "GB", "marketed, decimal GB (textbook sums)"),
        ReportRow("input: GPU", "usable_memory_bytes", g.usable_memory_bytes, "B", "what CUDA reports (vLLM)"),
        ReportRow("input: GPU", "hbm_bandwidth", g.hbm_bytes_per_s, "B/s", "data/gpus.yaml"),
        ReportRow("input: GPU", "tflops_bf16", g.tflops_bf16 or "", "TFLOP/s", "dense, data/gpus.yaml"),
        ReportRow("input: GPU", "tflops_fp16", g.tflops_fp16, "TFLOP/s", "dense, data/gpus.yaml"),
        ReportRow("input: GPU", "usd_per_hour", g.usd_per_hour, "USD/h", g.price_date),
        ReportRow("input: precision", "weights", r.weights.id, "", r.weights.label),
        ReportRow(
            "input: precision",
            "bits_per_weight",
            r.weights.bits_per_weight,
            "bits",
            "effective, incl. scales" + ("; embeddings kept 16-bit" if r.weights.keeps_embeddings_16bit else ""),
        ),
        ReportRow("input: precision", "kv_cache_dtype", r.kv.id, "", r.kv.label),
        ReportRow("input: precision", "kv_bytes_per_value", r.kv_bytes, "B", "auto = activation dtype"),
    ]
    for field, value in d.model_dump().items():
        rows.append(
            ReportRow(
                "input: engine",
                field,
                "" if value is None else value,
                "",
                "vLLM engine argument" if field not in ("num_gpus", "weights", "kv_cache_dtype") else "deployment",
            )
        )
    rows += [
        ReportRow("input: engine", "num_replicas", d.num_replicas, "", "num_gpus / tensor_parallel_size"),
        ReportRow(
            "input: engine",
            "max_model_len (resolved)",
            r.max_model_len,
            "tokens",
            "max_model_len or the model's max_position_embeddings",
        ),
        ReportRow(
            "input: workload", "context_tokens", r.context_tokens, "tokens", "prompt + output per request (memory rows)"
        ),
        ReportRow("input: workload", "engine", s.engine),
    ]
    return rows


def _memory_rows(p: MemoryPlan) -> list[ReportRow]:
    sec = "memory (textbook)"
    rows = [
        ReportRow(sec, "params", p.params, "", "counted from config.json"),
        ReportRow(sec, "active_params", p.active_params, "", "per token (MoE: top-k + shared experts)"),
        ReportRow(sec, "weight_bytes", p.weight_bytes, "B", "parameters × bytes per parameter"),
        ReportRow(sec, "weight_bytes_per_gpu", p.weight_bytes_per_gpu, "B", "weights / TP"),
        ReportRow(
            sec, "kv_bytes_per_token", p.kv_bytes_per_token, "B", "2 × layers × KV heads × head dim × bytes per value"
        ),
        ReportRow(sec, "kv_bytes_per_token_per_gpu", p.kv_bytes_per_token_per_gpu, "B", "KV heads split by TP"),
        ReportRow(
            sec, "kv_bytes_per_request", p.kv_bytes_per_request, "B", f"KV per token × {p.context_tokens:,} tokens"
        ),
        ReportRow(sec, "gpu_memory_bytes", p.gpu_memory_bytes, "B", "marketed GB × 1e9"),
        ReportRow(
            sec,
            "textbook_max_requests",
            p.textbook_max_requests,
            "requests",
            "floor((GPU memory − weights per GPU) / KV per request per GPU), per replica; an upper bound",
        ),
        ReportRow(
            sec,
            "textbook_max_requests_total",
            p.textbook_max_requests * p.num_replicas,
            "requests",
            "per replica × replicas",
        ),
    ]
    sec = "memory (vLLM)"
    pool = p.pool
    rows += [
        ReportRow(sec, "budget_bytes", pool.budget_bytes, "B", "gpu_memory_utilization × usable memory"),
        ReportRow(sec, "activation_bytes", pool.activation_bytes, "B", "profiling pass at max_num_batched_tokens"),
        ReportRow(sec, "non_torch_bytes", pool.non_torch_bytes, "B", "CUDA context, NCCL (data/vllm_memory.yaml)"),
        ReportRow(sec, "cuda_graph_bytes", pool.cuda_graph_bytes, "B", "0 with enforce_eager"),
        ReportRow(
            sec,
            "kv_pool_bytes_per_gpu",
            p.kv_pool_bytes_per_gpu,
            "B",
            "budget − weights − activations − non-torch − CUDA graphs",
        ),
        ReportRow(sec, "num_gpu_blocks", p.num_gpu_blocks, "blocks", "floor(pool / (block_size × KV bytes per token))"),
        ReportRow(sec, "kv_cache_tokens", p.kv_cache_tokens, "tokens", "blocks × block_size (vLLM logs it)"),
        ReportRow(sec, "max_concurrency", p.max_concurrency, "×", "KV tokens / max_model_len (vLLM logs it)"),
        ReportRow(sec, "max_concurrency_total", p.max_concurrency * p.num_replicas, "×", "per replica × replicas"),
        ReportRow(
            sec,
            "paged_max_requests",
            p.paged_max_requests,
            "requests",
            f"blocks / ceil({p.context_tokens:,} / block_size)",
        ),
        ReportRow(
            sec,
            "contiguous_max_requests",
            p.contiguous_max_requests,
            "requests",
            "pool / (max_model_len × KV bytes per token): every request reserving max_model_len",
        ),
        ReportRow(sec, "fits", p.fits, "", "; ".join(p.warnings)),
    ]
    rows += [
        ReportRow("memory per GPU", part, value, "B", "breakdown of usable memory")
        for part, value in breakdown_per_gpu(p).items()
    ]
    return rows


def _tp_rows(r: Resolved) -> list[ReportRow]:
    rows = []
    for opt in tp_options(r):
        sec, tp = "tensor-parallel options", opt["tp"]
        rows += [
            ReportRow(sec, f"TP={tp} weights_per_gpu_bytes", opt["weights_per_gpu_bytes"], "B", "weights / TP"),
            ReportRow(sec, f"TP={tp} kv_pool_per_gpu_bytes", opt["kv_pool_per_gpu_bytes"], "B", "vLLM pool"),
            ReportRow(sec, f"TP={tp} kv_cache_tokens", opt["kv_cache_tokens"], "tokens", "per replica"),
            ReportRow(sec, f"TP={tp} max_concurrency", opt["max_concurrency"], "×", "per replica"),
            ReportRow(sec, f"TP={tp} fits", opt["fits"], "", opt["note"]),
        ]
    return rows


def _latency_rows(r: Resolved) -> list[ReportRow]:
    """One request alone on a replica (static batch of 1): the floor under the operating point's latency."""
    prompt, output = split_context(r.context_tokens, REPORT_OUTPUT_TOKENS)
    sec = "reference: one request alone"
    try:
        limit = memory_limit(r, prompt, output)
    except InputError as err:
        return [ReportRow(sec, "estimate", "", "", f"not estimated: {err}")]
    if limit < 1 or prompt + output > r.max_model_len:
        return [ReportRow(sec, "estimate", "", "", "not estimated: no request of this length fits the KV pool")]
    e = estimate(r, 1, prompt, output)
    note = f"{prompt:,} prompt + {output:,} output tokens, nothing else running (roofline model)"
    return [
        ReportRow(sec, "memory_limit_batch", limit, "requests", "requests of prompt + output in the pool"),
        ReportRow(sec, "ttft_s", e.ttft_s, "s", f"prefill, {e.prefill_bound}-bound; {note}"),
        ReportRow(sec, "tpot_s", e.tpot_s, "s", f"mean decode step, {e.bound}-bound"),
        ReportRow(sec, "e2e_s", e.e2e_s, "s", "TTFT + (N − 1) × TPOT"),
        ReportRow(sec, "ridge_batch", e.ridge_batch or "", "requests", "decode turns compute-bound here"),
    ]


def report_rows(
    scenario: Scenario,
    ranking: list[dict] | None = None,
    prices: dict[str, float] | None = None,
    capacity: CapacityPlan | InputError | None = None,
) -> list[ReportRow]:
    """The plan, then every input and output of the scenario (module note); `ranking` = recommend()'s rows,
    `capacity` = capacity_plan()'s result for this scenario (or the InputError it raised) when the caller already
    has it."""
    r = resolve(scenario)
    memory = plan_memory(r)
    cap = capacity if capacity is not None else _capacity(scenario, prices)
    return (
        plan_rows(scenario, r, cap)
        + choice_rows(scenario, r, cap, ranking)
        + assumption_rows(scenario, r, cap)
        + _input_rows(scenario, r)
        + _memory_rows(memory)
        + _tp_rows(r)
        + _latency_rows(r)
    )


def _capacity(s: Scenario, prices: dict[str, float] | None) -> CapacityPlan | InputError:
    """The capacity plan, or the InputError that stopped it (the report says why instead of the plan)."""
    try:
        ratios = latency_ratios(resolve(replica_scenario(s)))  # replicas_pessimistic's latency-bound search
        return capacity_plan(s, s.target_rate, s.traffic, s.slo, s.headroom, prices, latency_ratios=ratios)
    except InputError as err:
        return err


def to_csv(rows: list[ReportRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(  # text cells neutralised; numbers (a negative one too) written as numbers
        (csv_cell(row.section), csv_cell(row.name), _csv_value(row.value), csv_cell(row.unit), csv_cell(row.note))
        for row in rows
    )
    return out.getvalue()


def _csv_value(value):
    """Floats to 10 significant digits (166.8, not 166.79999999999998); text neutralised; everything else as is."""
    return f"{value:.10g}" if isinstance(value, float) else csv_cell(value)


def to_json(rows: list[ReportRow]) -> str:
    return json.dumps([asdict(row) for row in rows], indent=2)


def human(value, unit: str) -> str:
    """A value with its unit as a person reads it: bytes also in GB and GiB (labelled), seconds below 1 in ms,
    dollars with a $, large numbers with separators. The unit is part of the text, so it always matches."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, (int, float)):
        return f"{value} {unit}".strip() if value != "" else ""
    if unit == "B" and abs(value) >= 1e6:
        return f"{value:,.0f} B ({value / GB:,.2f} GB, {value / GiB:,.2f} GiB)"
    if unit == "s":
        return f"{value * 1e3:,.1f} ms" if abs(value) < 1 else f"{value:,.3f} s"
    if unit.startswith("USD"):
        return f"${value:,.2f}{unit[3:]}" if abs(value) >= 1 else f"${value:,.4f}{unit[3:]}"
    if isinstance(value, float) and not value.is_integer():
        text = f"{value:,.4g}"
    else:
        text = f"{value:,.0f}"
    return f"{text} {unit}".strip()


def _cell(text: str) -> str:
    return markdown_cell(text)  # no link, image, code or raw HTML from a name or a note


def to_markdown(rows: list[ReportRow], images: dict[str, bytes] | None = None, title: str = "Sizing report") -> str:
    """Markdown: one table per section, then the charts as PNG files named `<key>.png` next to the report."""
    lines = [
        f"# {markdown_cell(title)}",
        "",
        "Each value with its unit (the CSV holds SI values: bytes, seconds, USD); GB = 1e9 bytes, GiB = 2^30 bytes.",
        "",
    ]
    section = None
    for row in rows:
        if row.section != section:
            section = row.section
            lines += ["", f"## {section}", "", "| name | value | note |", "|---|---|---|"]
        lines.append(f"| {_cell(row.name)} | {_cell(human(row.value, row.unit))} | {_cell(row.note)} |")
    if images:
        lines += ["", "## Charts", ""]
        for key in images:
            lines += [f"![{key.replace('_', ' ')}]({key}.png)", ""]
    return "\n".join(lines) + "\n"
