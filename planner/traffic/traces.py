"""Trace replay: load real request traces into a Workload, then rescale time and sample.

Formats (see data/traces/README.md):
- Azure LLM inference 2023 CSV `TIMESTAMP,ContextTokens,GeneratedTokens` (timestamps are datetimes);
- Mooncake JSONL `{"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}`, one prefix hash id per
  512-token block, equal ids = a reusable prefix;
- generic CSV `arrival_s,prompt_tokens,output_tokens`.
Arrivals are shifted so the first request arrives at t = 0. Bad files raise InputError naming the row and column
(rows counted as in a spreadsheet: the header is row 1).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import InputError
from planner.core.json_input import load_json
from planner.core.paths import traces_dir
from planner.traffic.workload import Workload

TRACES_DIR = traces_dir()
NAMED_TRACES = {
    "azure_conv": "AzureLLMInferenceTrace_conv.csv",
    "azure_code": "AzureLLMInferenceTrace_code.csv",
    "mooncake": "mooncake_conversation_trace.jsonl",
}
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
GENERIC_COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens")
MOONCAKE_BLOCK_TOKENS = 512  # Mooncake FAST'25 README: one hash id per 512-token block
MAX_TRACE_BYTES = 512 * 2**20
MAX_TRACE_NUMBER = 1e15  # ms since 1970 is ~1.8e12; no token count comes near it (10^400 would overflow float)


def _short(value) -> str:
    """A value for an error message, cut short (a hostile line can hold a 5,000-digit number)."""
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 128 else f"{str(value)[:12]}..."
    return text if len(text) <= 40 else text[:37] + "..."


def resolve_trace_path(path_or_name: str | Path, field: str = "trace") -> Path:
    """A bundled trace by name (azure_conv, azure_code, mooncake) or any existing file path."""
    name = str(path_or_name).strip()
    path = TRACES_DIR / NAMED_TRACES[name] if name in NAMED_TRACES else Path(name).expanduser()
    if not path.is_file():
        raise InputError(field, f"no trace file at {path} (names: {', '.join(NAMED_TRACES)})")
    return path


def load_trace(path_or_name: str | Path, fmt: str = "auto") -> Workload:
    """Load a trace; fmt is auto (by extension and header), azure, mooncake or generic."""
    path = resolve_trace_path(path_or_name)
    text = _read_text(path)
    if fmt == "auto":
        fmt = "mooncake" if text.lstrip().startswith("{") else _csv_kind(text, path)
    loaders = {"azure": _parse_azure, "mooncake": _parse_mooncake, "generic": _parse_generic}
    if fmt not in loaders:
        raise InputError("format", f"unknown trace format {fmt!r}; use auto, azure, mooncake or generic")
    return loaders[fmt](text, path)


def _read_text(path: Path) -> str:
    if path.stat().st_size > MAX_TRACE_BYTES:
        raise InputError(str(path), f"trace larger than {MAX_TRACE_BYTES // 2**20} MiB")
    raw = path.read_bytes()
    if b"\x00" in raw[:65536]:
        raise InputError(str(path), "binary data, not a text trace")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(str(path), f"not UTF-8 text (byte {err.start})") from None
    if not text.strip():
        raise InputError(str(path), "empty file")
    return text


def _csv_kind(text: str, path: Path) -> str:
    header = tuple(h.strip() for h in next(csv.reader(io.StringIO(text)), []))
    if header[:3] == AZURE_COLUMNS:
        return "azure"
    if header[:3] == GENERIC_COLUMNS:
        return "generic"
    raise InputError(
        f"{path.name}: row 1",
        f"header {','.join(header)!r} is neither {','.join(AZURE_COLUMNS)} nor {','.join(GENERIC_COLUMNS)}",
    )


def _read_csv(text: str, path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, ValueError) as err:
        raise InputError(path.name, f"not a readable CSV: {str(err).splitlines()[0]}") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{path.name}: row 1", f"missing column(s) {', '.join(missing)}; expected {','.join(columns)}")
    if df.empty:
        raise InputError(path.name, "no data rows")
    return df


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _int_column(df: pd.DataFrame, col: str, path: Path, minimum: int) -> np.ndarray:
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if bad.any():
        i = _first_bad(bad)
        raise InputError(f"{path.name}: row {i + 2}, column {col}", f"{df[col].iloc[i]!r} is not a whole number")
    low = values < minimum
    if low.any():
        i = _first_bad(low)
        raise InputError(f"{path.name}: row {i + 2}, column {col}", f"{df[col].iloc[i]} is below {minimum}")
    return values.astype(np.int64)


def _time_column(values: np.ndarray, raw: pd.Series, col: str, path: Path) -> np.ndarray:
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        i = _first_bad(bad)
        raise InputError(f"{path.name}: row {i + 2}, column {col}", f"{raw.iloc[i]!r} is not a time >= 0")
    return values


def _workload(
    arrival_s: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    source: str,
    prefix_ids: list | None = None,
    prefix_block_tokens: int = 16,
) -> Workload:
    order = np.argsort(arrival_s, kind="stable")  # replay in time order; ties keep file order
    arrival_s = arrival_s[order] - arrival_s[order[0]]
    prefix = None if prefix_ids is None else tuple(prefix_ids[i] for i in order)
    return Workload(arrival_s, prompt[order], output[order], prefix, prefix_block_tokens, source=source)


def _parse_azure(text: str, path: Path) -> Workload:
    df = _read_csv(text, path, AZURE_COLUMNS)
    stamps = pd.to_datetime(df["TIMESTAMP"], format="ISO8601", errors="coerce")
    seconds = (stamps - stamps.min()).dt.total_seconds().to_numpy(dtype=float)
    arrival_s = _time_column(seconds, df["TIMESTAMP"], "TIMESTAMP", path)
    prompt = _int_column(df, "ContextTokens", path, 1)
    output = _int_column(df, "GeneratedTokens", path, 1)
    return _workload(arrival_s, prompt, output, f"Azure 2023 trace {path.name}")


def _parse_generic(text: str, path: Path) -> Workload:
    df = _read_csv(text, path, GENERIC_COLUMNS)
    seconds = pd.to_numeric(df["arrival_s"], errors="coerce").to_numpy(dtype=float)
    arrival_s = _time_column(seconds, df["arrival_s"], "arrival_s", path)
    prompt = _int_column(df, "prompt_tokens", path, 1)
    output = _int_column(df, "output_tokens", path, 1)
    return _workload(arrival_s, prompt, output, f"trace {path.name}")


def _parse_mooncake(text: str, path: Path) -> Workload:
    rows = [line for line in text.splitlines()]
    arrival_ms, prompt, output, prefix = [], [], [], []
    for lineno, line in enumerate(rows, start=1):
        if not line.strip():
            continue
        rec = _mooncake_record(line, lineno, path)
        arrival_ms.append(rec[0])
        prompt.append(rec[1])
        output.append(rec[2])
        prefix.append(rec[3])
    return _workload(
        np.asarray(arrival_ms, dtype=float) / 1000.0,
        np.asarray(prompt, dtype=np.int64),
        np.asarray(output, dtype=np.int64),
        f"Mooncake trace {path.name}",
        prefix,
        MOONCAKE_BLOCK_TOKENS,
    )


def _mooncake_record(line: str, lineno: int, path: Path) -> tuple[float, int, int, np.ndarray]:
    where = f"{path.name}: row {lineno}"
    obj = load_json(line, where, check_ints=False)  # finite floats, bounded depth; integers checked below
    if not isinstance(obj, dict):
        raise InputError(where, "expected a JSON object")
    out = []
    for key, minimum in (("timestamp", 0), ("input_length", 1), ("output_length", 1)):
        val = obj.get(key)
        if isinstance(val, bool) or not isinstance(val, (int, float)) or not minimum <= val <= MAX_TRACE_NUMBER:
            raise InputError(f"{where}, column {key}", f"{_short(val)} is not a number from {minimum} to 1e15")
        if key != "timestamp" and val != int(val):
            raise InputError(f"{where}, column {key}", f"{val!r} is not a whole number")
        out.append(val)
    hashes = obj.get("hash_ids", [])
    if not isinstance(hashes, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in hashes):
        raise InputError(f"{where}, column hash_ids", "must be a list of integers")
    try:
        ids = np.asarray(hashes, dtype=np.int64)
    except OverflowError:
        raise InputError(f"{where}, column hash_ids", "must be 64-bit integers") from None
    return float(out[0]), int(out[1]), int(out[2]), ids


def rescale(workload: Workload, speedup: float = 1.0) -> Workload:
    """Compress time by `speedup` (2 = twice the arrival rate): arrival_s / speedup."""
    if not (isinstance(speedup, (int, float)) and math.isfinite(speedup) and speedup > 0):
        raise InputError("speedup", f"must be a number > 0, got {speedup!r}")
    if speedup == 1.0:
        return workload
    return Workload(
        workload.arrival_s / speedup,
        workload.prompt_tokens,
        workload.output_tokens,
        workload.prefix_ids,
        workload.prefix_block_tokens,
        seed=workload.seed,
        source=f"{workload.source}, time x1/{speedup:g}",
    )


def sample(
    workload: Workload,
    max_requests: int | None = None,
    fraction: float | None = None,
    start_s: float = 0.0,
    duration_s: float | None = None,
    seed: int = 0,
) -> Workload:
    """Keep the window [start_s, start_s + duration_s), then a seeded random subset (time order kept);
    thinning by `fraction` lowers the rate, `max_requests` caps the count. Arrivals restart at 0."""
    arr = workload.arrival_s
    end_s = math.inf if duration_s is None else start_s + duration_s
    idx = np.flatnonzero((arr >= start_s) & (arr < end_s))
    rng = np.random.default_rng(seed)
    if fraction is not None:
        if not (0 < fraction <= 1):
            raise InputError("fraction", f"must be in (0, 1], got {fraction!r}")
        idx = idx[rng.random(len(idx)) < fraction]
    if max_requests is not None:
        if max_requests < 1:
            raise InputError("max_requests", "must be >= 1")
        if len(idx) > max_requests:
            idx = np.sort(rng.choice(idx, size=max_requests, replace=False))
    if len(idx) == 0:
        raise InputError("duration_s" if duration_s is not None else "fraction", "no requests left after sampling")
    out = workload.take(idx, source=f"{workload.source}, sampled (seed {seed})", seed=seed)
    return Workload(
        out.arrival_s - out.arrival_s[0],
        out.prompt_tokens,
        out.output_tokens,
        out.prefix_ids,
        out.prefix_block_tokens,
        seed=seed,
        source=out.source,
    )
