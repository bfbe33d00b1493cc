"""The error band beside a number on a page: "typically 17–26 ms" under a metric, the family it came from in a
caption (planner.accuracy.bands: the 10th–90th percentile of measured / predicted out of sample)."""

from __future__ import annotations

from planner.accuracy.bands import Band, format_value, scenario_band
from planner.core.scenario import Resolved


def band_of(r: Resolved, metric: str, value: float | None) -> Band | None:
    """The band of a predicted figure on the scenario (None: no value or no family)."""
    return scenario_band(r, metric, value) if value is not None else None


def range_text(b: Band | None, key: str) -> str:
    """'typically 17–26 ms' (key names the unit as in --json: *_s, *tokens_per_s, a rate)."""
    if b is None:
        return ""
    lo, hi = format_value(b.low, key), format_value(b.high, key)
    lo_num, _, lo_unit = lo.partition(" ")
    hi_unit = hi.partition(" ")[2]
    return f"typically {lo_num if lo_unit == hi_unit else lo}–{hi}"


def metric_band(b: Band | None, key: str) -> dict:
    """st.metric keyword arguments that show the band in grey under the value (nothing without a band)."""
    if b is None:
        return {}
    return {"delta": range_text(b, key), "delta_color": "off", "delta_arrow": "off"}


def bands_caption(bands: list[Band | None]) -> str:
    """One line naming the families the bands on a page came from, with their row counts."""
    names = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "end-to-end", "throughput": "throughput", "kv_capacity": "KV"}
    by_family: dict[tuple[str, int], list[str]] = {}
    for b in bands:
        if b is not None and names.get(b.metric, b.metric) not in by_family.setdefault((b.family, b.rows), []):
            by_family[(b.family, b.rows)].append(names.get(b.metric, b.metric))
    by_family = {k: v for k, v in by_family.items() if v}
    if not by_family:
        return ""
    parts = "; ".join(f"{', '.join(m)}: {fam}, n={n:,}" for (fam, n), m in by_family.items())
    return (
        "Grey ranges: where the measurement typically lands (10th–90th percentile of measured / predicted on "
        "rows of benchmark campaigns the fit never saw, predicted through `simulate`; data/error_bands.yaml) for "
        "the nearest "
        f"family with enough rows — {parts}."
    )
