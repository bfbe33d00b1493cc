"""The user's own load-test results, read into points the roofline model can predict
(fitting: planner.accuracy.profile_fit).

Three upload formats:

- vLLM `benchmark_serving.py --save-result` / `vllm bench serve --save-result` JSON: one result object (or a list of
  them, one per request rate). Field names as vLLM writes them (vllm-project/vllm benchmarks/benchmark_serving.py,
  `benchmark()` result dict and `main()` result_json, checked at commit 0049e29c): "model_id", "request_rate"
  (a number or the string "inf"), "max_concurrency" (null unless set), "completed", "duration",
  "total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput", "input_lens" /
  "output_lens" (per request, only with detailed results), "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
  "mean_tpot_ms", "median_tpot_ms", "mean_itl_ms", and "mean_e2el_ms" when e2el is among --percentile-metrics.
- SGLang `bench_serving --output-file` JSONL: one result object per line, appended run after run
  (sgl-project/sglang python/sglang/bench_serving.py, the `result` dict written in `benchmark()`): the same
  request_rate / max_concurrency / completed / total_*_tokens / mean_ttft_ms / mean_tpot_ms names as vLLM, plus
  "mean_e2e_latency_ms" (vLLM: "mean_e2el_ms") and "concurrency", the measured mean number of requests in flight.
- GuideLLM JSON report (vllm-project/guidellm src/guidellm/benchmark/schemas/generative/metrics.py,
  GenerativeMetrics): {"benchmarks": [{"config": {"strategy": {...}}, "metrics": {NAME: {"successful": {"mean",
  "median", "percentiles", ...}, "errored": ..., "incomplete": ..., "total": ...}}}]} with NAME among
  time_to_first_token_ms, inter_token_latency_ms (excludes the first token: vLLM's TPOT),
  time_per_output_token_ms (includes the first token), prompt_token_count, output_token_count,
  request_concurrency, requests_per_second, request_latency (seconds). Only "successful" requests are read.
- A CSV with columns batch, input_tokens, output_tokens, tpot_ms, ttft_ms (one of the two times may be blank).
- AIPerf's profile_export_aiperf.json (planner.accuracy.aiperf_export), told by its content.
The point types and the number check every reader applies live in planner.accuracy.user_values.

A serving run at a request rate has no fixed batch: its effective batch is taken as the concurrency, which is
max_concurrency when the client capped it, GuideLLM's measured mean concurrency, or else Little's law
L = λ × W (request throughput × mean end-to-end latency). That is an approximation, and each such point says so.
Its TTFT is predicted as one prompt's prefill (no queueing, no interleaving with other requests' decode steps).
"""

from __future__ import annotations

import csv
import io
import math

from planner.accuracy.aiperf_export import is_aiperf, parse_aiperf
from planner.accuracy.user_values import MAX_MODEL_ID_CHARS, UserData, UserPoint, check_number
from planner.core.errors import InputError
from planner.core.json_input import load_json

_check = check_number

CSV_COLUMNS = ("batch", "input_tokens", "output_tokens", "tpot_ms", "ttft_ms")
CSV_ALIASES = {
    "input": "input_tokens",
    "input_len": "input_tokens",
    "prompt_tokens": "input_tokens",
    "output": "output_tokens",
    "output_len": "output_tokens",
    "tpot": "tpot_ms",
    "ttft": "ttft_ms",
    "concurrency": "batch",
    "batch_size": "batch",
}


def parse_upload(name: str, data: bytes | str, max_points: int | None = None) -> UserData:
    """Dispatch on content: JSON with "benchmarks" is GuideLLM, other JSON benchmark_serving, else the CSV. With
    `max_points`, a CSV is read row by row and reading stops after that many points (the data's notes say so); a
    JSON document's results past it are not read."""
    text = data.decode("utf-8-sig", errors="replace") if isinstance(data, bytes) else data
    text = text.removeprefix("\ufeff")  # a byte-order mark left by a Windows editor
    if not text.strip():
        raise InputError(name or "upload", "is empty")
    data = _parse_text(name, text, max_points)
    if max_points is not None and len(data.points) > max_points:
        kept = data.points[:max_points]
        note = f"reading stopped after the first {max_points:,} points (the limit): the file holds more"
        return UserData(data.kind, kept, data.model_id, (*data.notes, note))
    return data


def _parse_text(name: str, text: str, max_points: int | None) -> UserData:
    if text.lstrip()[:1] in "{[":
        try:
            doc = load_json(text, name or "upload", check_numbers=False)  # depth and digits; _check names a bad number
        except InputError as err:
            doc = _json_lines(text)  # SGLang's bench_serving appends one result per line
            if doc is None:
                raise err from None
        if isinstance(doc, dict) and "benchmarks" in doc:
            return parse_guidellm(doc)
        if is_aiperf(doc):
            return parse_aiperf(doc)
        return parse_benchmark_serving(doc)
    try:
        return parse_csv(text, max_points)
    except csv.Error as err:  # e.g. a cell over the csv module's 131,072-character field limit
        raise InputError(name or "CSV", f"is not a readable CSV ({str(err)[:80]})") from None


def _json_lines(text: str) -> list | None:
    """SGLang's appended JSONL (one result per line), or None if a line is not a JSON object."""
    docs = []
    for line in text.splitlines():
        if line.strip():
            try:
                docs.append(load_json(line, "line", check_numbers=False))
            except InputError:
                return None
    return docs if len(docs) > 1 and all(isinstance(d, dict) for d in docs) else None


# -- vLLM benchmark_serving --------------------------------------------------------------------------------------
def parse_benchmark_serving(doc) -> UserData:
    """Points from one benchmark_serving result (or a list of them); InputError names the missing/bad field."""
    results = doc if isinstance(doc, list) else [doc]
    if not results or not all(isinstance(r, dict) for r in results):
        raise InputError("benchmark_serving JSON", "must be a result object or a list of result objects")
    points = [_serving_point(r, f"result[{i}]" if isinstance(doc, list) else "result") for i, r in enumerate(results)]
    model = results[0].get("model_id") or results[0].get("model") or results[0].get("tokenizer_id") or ""
    model = model[:MAX_MODEL_ID_CHARS] if isinstance(model, str) else ""  # a name, never a whole field or a list
    sglang = any("mean_e2e_latency_ms" in r for r in results)
    return UserData(
        "sglang_bench_serving" if sglang else "benchmark_serving",
        tuple(points),
        model,
        (
            "effective batch = max_concurrency when set, else Little's law: request throughput × mean "
            "end-to-end latency",
            "TTFT compared with one prompt's prefill (queueing not modelled)",
        ),
    )


def _serving_point(r: dict, where: str) -> UserPoint:
    completed = _number(r, "completed", where)
    mean_in = _mean_len(r, "input_lens", "total_input_tokens", completed, where)
    mean_out = _mean_len(r, "output_lens", "total_output_tokens", completed, where)
    tpot = _first_number(r, ("mean_tpot_ms", "median_tpot_ms"), where)
    ttft = _first_number(r, ("mean_ttft_ms", "median_ttft_ms"), where)
    rate = r.get("request_rate")
    if r.get("max_concurrency") is not None:
        batch, how = _number(r, "max_concurrency", where), "max_concurrency"
    elif r.get("concurrency") is not None:  # SGLang: measured mean requests in flight
        batch, how = _number(r, "concurrency", where), "SGLang's measured mean concurrency"
    else:
        e2e_key = next((k for k in ("mean_e2el_ms", "mean_e2e_latency_ms") if r.get(k) is not None), None)
        e2e_ms = _check(r[e2e_key], f"{where}.{e2e_key}") if e2e_key else ttft + (mean_out - 1) * tpot
        throughput = r.get("request_throughput")
        lam = _number(r, "request_throughput", where) if throughput is not None else _number(r, "request_rate", where)
        batch, how = lam * e2e_ms / 1e3, f"Little's law {lam:.3g} req/s × {e2e_ms / 1e3:.3g} s"
    cap = _number(r, "max_concurrency", where) if r.get("max_concurrency") is not None else None
    label = f"rate {_shown(rate)}" + (f", concurrency {cap:g}" if cap is not None else "")
    closed = cap is not None and _finite_rate(rate) is None
    users = max(1, round(cap)) if closed else None
    return UserPoint.serving_run(
        label,
        batch,
        how,
        (mean_in, mean_out),
        tpot_ms=tpot,
        ttft_ms=ttft,
        request_rate=_finite_rate(rate),
        users=users,
        rounds=max(1, round(completed / users)) if users else None,
    )


def _finite_rate(rate) -> float | None:
    """A request rate per second, or None for "inf" (every request sent at once, or as a slot frees)."""
    try:
        value = float(rate)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def _mean_len(r: dict, lens_key: str, total_key: str, completed: float, where: str) -> float:
    lens = r.get(lens_key)
    if isinstance(lens, list) and lens:
        values = [_check(v, f"{where}.{lens_key}[{i}]") for i, v in enumerate(lens)]
        return sum(values) / len(values)
    return _number(r, total_key, where) / completed


# -- GuideLLM ------------------------------------------------------------------------------------------------------
def parse_guidellm(doc: dict) -> UserData:
    """Points from a GuideLLM report: one per benchmark (strategy), from its successful requests."""
    benches = doc.get("benchmarks")
    if not isinstance(benches, list) or not benches:
        raise InputError("benchmarks", "must be a non-empty list of GuideLLM benchmarks")
    points = []
    for i, b in enumerate(benches):
        where = f"benchmarks[{i}].metrics"
        m = b.get("metrics") if isinstance(b, dict) else None
        if not isinstance(m, dict):
            raise InputError(where, "missing (not a GuideLLM report?)")
        tpot = _successful(m, "inter_token_latency_ms", where, required=False)
        if tpot is None:  # older reports: per-token time including the first token (slightly high)
            tpot = _successful(m, "time_per_output_token_ms", where)
        ttft = _successful(m, "time_to_first_token_ms", where)
        mean_in, mean_out = _successful(m, "prompt_token_count", where), _successful(m, "output_token_count", where)
        conc = _successful(m, "request_concurrency", where, required=False)
        how = "GuideLLM mean request concurrency"
        if conc is None:
            rps, latency_s = _successful(m, "requests_per_second", where), _successful(m, "request_latency", where)
            conc, how = rps * latency_s, f"Little's law {rps:.3g} req/s × {latency_s:.3g} s"
        strategy = _strategy(b, f"benchmarks[{i}]")
        kind = strategy.get("type_") if isinstance(strategy.get("type_"), str) else ""
        rate = _optional(strategy, "rate", f"benchmarks[{i}].config.strategy")
        streams = _optional(strategy, "streams", f"benchmarks[{i}].config.strategy")
        label = _shown(kind or f"benchmark {i}") + (f" {rate:g}/s" if rate is not None else "")
        users = 1 if kind == "synchronous" else None  # GuideLLM synchronous: one request at a time
        if kind == "concurrent" and streams is not None and streams >= 1:
            users = round(streams)
        rate = rate if kind in ("constant", "poisson") else None
        points.append(
            UserPoint(
                label=label,
                batch=max(conc, 1.0),
                input_tokens=mean_in,
                output_tokens=mean_out,
                tpot_ms=tpot,
                ttft_ms=ttft,
                ttft_batch=1.0,
                note=f"batch ≈ {max(conc, 1.0):.1f} ({how})",
                request_rate=_finite_rate(rate),
                users=users,
            )
        )
    return UserData(
        "guidellm",
        tuple(points),
        "",
        (
            "effective batch = GuideLLM's mean request concurrency",
            "TTFT compared with one prompt's prefill (queueing not modelled)",
        ),
    )


def _strategy(b: dict, where: str) -> dict:
    """A benchmark's scheduling strategy (config.strategy, or args.strategy in older reports); InputError naming the
    field when the report holds something else there (a list, a string)."""
    for key in ("config", "args"):
        section = b.get(key)
        if section is None:
            continue
        if not isinstance(section, dict):
            raise InputError(f"{where}.{key}", f"must be an object, got {type(section).__name__}")
        strategy = section.get("strategy")
        if strategy is None:
            continue
        if not isinstance(strategy, dict):
            raise InputError(f"{where}.{key}.strategy", f"must be an object, got {type(strategy).__name__}")
        return strategy
    return {}


def _optional(d: dict, key: str, where: str) -> float | None:
    """An optional positive number (None when absent or null), checked like every other number."""
    return None if d.get(key) is None else _check(d[key], f"{where}.{key}")


def _shown(text, limit: int = 40) -> str:
    """A file's text for a label: printable and at most `limit` characters (never a whole field)."""
    text = str(text)
    text = text if text.isprintable() else repr(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _successful(m: dict, name: str, where: str, required: bool = True) -> float | None:
    dist = m.get(name)
    stats = dist.get("successful") if isinstance(dist, dict) else None
    if not isinstance(stats, dict) or stats.get("mean") is None:
        if required:
            raise InputError(f"{where}.{name}.successful.mean", "missing")
        return None
    return _check(stats["mean"], f"{where}.{name}.successful.mean")


# -- CSV -----------------------------------------------------------------------------------------------------------
def parse_csv(text: str, max_points: int | None = None) -> UserData:
    """Static-batch points from the simple CSV; InputError names the row and column of a bad cell. Rows are read one
    at a time: with `max_points`, reading stops at the first row past it (one more point than the limit, so the
    caller can say the file had more)."""
    reader = csv.DictReader(io.StringIO(text.strip()))
    header = {h: _column(h) for h in (reader.fieldnames or [])}
    missing = [c for c in ("batch", "input_tokens", "output_tokens") if c not in header.values()]
    if missing:
        raise InputError("CSV", f"missing column(s) {', '.join(missing)}; expected {', '.join(CSV_COLUMNS)}")
    if not {"tpot_ms", "ttft_ms"} & set(header.values()):
        raise InputError("CSV", "needs a tpot_ms or a ttft_ms column")
    points = []
    for n, raw in enumerate(reader, start=2):
        if max_points is not None and len(points) > max_points:
            break  # stop reading: the rest of the file is never parsed
        row = {header[k]: (v or "").strip() for k, v in raw.items() if k in header and isinstance(v, str)}
        cell = {c: _check(row[c], f"row {n}, column {c}") if row.get(c) else None for c in CSV_COLUMNS}
        for c in ("batch", "input_tokens", "output_tokens"):
            if cell[c] is None:
                raise InputError(f"row {n}, column {c}", "is empty")
        if cell["tpot_ms"] is None and cell["ttft_ms"] is None:
            raise InputError(f"row {n}", "gives neither tpot_ms nor ttft_ms")
        points.append(
            UserPoint(
                label=f"row {n}",
                batch=cell["batch"],
                input_tokens=cell["input_tokens"],
                output_tokens=cell["output_tokens"],
                tpot_ms=cell["tpot_ms"],
                ttft_ms=cell["ttft_ms"],
                ttft_batch=cell["batch"],
            )
        )
    if not points:
        raise InputError("CSV", "has a header but no rows")
    return UserData("csv", tuple(points), "", ("static batches: TTFT compared with the whole batch's prefill",))


def _column(header: str) -> str:
    key = header.strip().lower().replace(" ", "_").replace("-", "_").replace("(ms)", "ms").replace("__", "_")
    key = key.removesuffix("_")
    return CSV_ALIASES.get(key, key)


def _number(r: dict, key: str, where: str) -> float:
    if r.get(key) is None:
        raise InputError(f"{where}.{key}", "missing (is this a benchmark_serving --save-result file?)")
    return _check(r[key], f"{where}.{key}")


def _first_number(r: dict, keys: tuple[str, ...], where: str) -> float:
    for key in keys:
        if r.get(key) is not None:
            return _check(r[key], f"{where}.{key}")
    raise InputError(f"{where}.{keys[0]}", "missing (is this a benchmark_serving --save-result file?)")
