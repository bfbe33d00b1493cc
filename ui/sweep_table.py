"""The Traffic page's rate-sweep table for people: named columns in display units (ms for latencies, req/s,
tokens/s), rounded; empty cells where a figure does not exist (not "None")."""

from __future__ import annotations

import pandas as pd

# row key -> (column name, scale, digits); the scale turns seconds into ms where the page shows ms
SWEEP_COLUMNS = {
    "rate_per_s": ("rate (req/s)", 1.0, 3),
    "sustains": ("sustains", None, None),
    "reason": ("why not", None, None),
    "offered_requests_per_s": ("offered (req/s)", 1.0, 2),
    "served_requests_per_s": ("served (req/s)", 1.0, 2),
    "goodput_served_requests_per_s": ("goodput (req/s)", 1.0, 2),
    "ttft_p95_s": ("p95 TTFT (ms)", 1e3, 0),
    "tpot_p95_s": ("p95 TPOT (ms)", 1e3, 1),
    "e2e_p95_s": ("p95 end-to-end (s)", 1.0, 2),
    "queue_p95_s": ("p95 queue wait (ms)", 1e3, 0),
    "throughput_tokens_per_s": ("output tokens/s", 1.0, 0),
    "preemptions": ("preemptions", None, None),
    "rejected": ("rejected", None, None),
    "mean_running": ("mean running", 1.0, 1),
    "max_waiting": ("longest queue", None, None),
}
SWEEP_FORMATS = {
    "rate (req/s)": "%.3g",
    "offered (req/s)": "%.2f",
    "served (req/s)": "%.2f",
    "goodput (req/s)": "%.2f",
    "p95 TTFT (ms)": "%.0f",
    "p95 TPOT (ms)": "%.1f",
    "p95 end-to-end (s)": "%.2f",
    "p95 queue wait (ms)": "%.0f",
    "output tokens/s": "%.0f",
    "mean running": "%.1f",
}


def sweep_table(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    out = pd.DataFrame()
    for key, (name, scale, digits) in SWEEP_COLUMNS.items():
        if key not in df:
            continue
        col = df[key]
        if scale is not None:
            col = (pd.to_numeric(col, errors="coerce") * scale).round(digits)
        out[name] = col
    return out
