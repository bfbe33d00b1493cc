"""Log axes with enough labels: decade ticks (dtick=1: 1, 10, 100 …, issue 16) label one value, or none, on data
that spans less than a decade (the Pareto chart's p95 latencies of 3-9 s showed only "10"). `log_axis` keeps decades
when three fall within the data, else labels 1-2-5 steps, else every digit, else the ends and their geometric
middle, in full (",~g": 20, 50, not plotly's bare "2 5"), so a log axis always carries at least three labelled ticks
when its data are not all equal."""

from __future__ import annotations

import math
from collections.abc import Iterable

STEPS = ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9))  # mantissas tried in turn: decades first


def log_ticks(values: Iterable) -> list[float] | None:
    """Tick values for a log axis over `values` (None: decades do; module note)."""
    v = [float(x) for x in values if x is not None and math.isfinite(float(x)) and float(x) > 0]
    if not v:
        return None
    lo, hi = min(v), max(v)
    for mantissas in STEPS:
        ticks = [
            m * 10.0**e
            for e in range(math.floor(math.log10(lo)), math.floor(math.log10(hi)) + 1)
            for m in mantissas
            if lo <= m * 10.0**e <= hi
        ]
        if len(ticks) >= 3:
            return None if mantissas == (1,) else ticks
    if hi == lo:
        return [float(f"{lo:.3g}")]
    return [float(f"{x:.3g}") for x in (lo, math.sqrt(lo * hi), hi)]


def log_axis(values: Iterable, tickformat: str = ",~g") -> dict:
    """A plotly log axis over `values` with at least three labelled ticks (decades when three fall within)."""
    ticks = log_ticks(values)
    if ticks is None:
        return dict(type="log", dtick=1, tickformat=tickformat)
    return dict(type="log", tickvals=ticks, tickformat=tickformat)
