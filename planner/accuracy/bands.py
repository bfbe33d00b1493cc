"""How far off a prediction typically is: the error band of the nearest family with enough out-of-sample rows.

A family is (engine, model class, GPU generation, metric). data/error_bands.yaml (written by validation/error_bands.py
from predictions the fit never saw) holds, per family, the 10th and 90th percentiles of measured / predicted. A
prediction v of that family is then "typically v × low to v × high". Families coarsen one key at a time in a fixed
order (generation, then model class, then engine) until one has at least `min_rows` rows; the band names the family
it used and its row count, so "TPOT 21 ms (typically 17–26 ms for MoE/MLA on Hopper with SGLang, n=143)".

The band always contains the prediction (low ≤ 1 ≤ high): a family whose misses all fall on one side still says
how far they reach, and the prediction itself stays a possible answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from planner.core.catalog import DATA_DIR, _read_yaml
from planner.core.scenario import Resolved

BANDS_PATH = DATA_DIR / "error_bands.yaml"
ANY = "*"
METRICS = ("ttft", "tpot", "e2e", "throughput", "kv_capacity")
# lower is better for latencies: the pessimistic end is the high one; for throughput and KV capacity the low one
HIGHER_IS_BETTER = frozenset({"throughput", "kv_capacity"})
GENERATIONS = {
    "ampere": "ampere",
    "ada": "ada",
    "turing": "turing",
    "hopper": "hopper",
    "blackwell": "blackwell",
    "blackwell-rtx": "blackwell",
    "cdna3": "amd",
    "cdna4": "amd",
}
ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM", "llama.cpp": "llama.cpp"}
CLASS_LABELS = {"dense": "dense models", "moe/mla": "MoE/MLA"}
GENERATION_LABELS = {"amd": "AMD", "ada": "Ada", "ampere": "Ampere", "hopper": "Hopper", "blackwell": "Blackwell"}


def generation(gpu_family: str) -> str:
    """The GPU generation a band is kept for (data/gpus.yaml `family` → ampere, hopper, blackwell, amd, ...)."""
    return GENERATIONS.get(gpu_family, gpu_family or ANY)


def model_class(is_moe: bool, is_mla: bool) -> str:
    return "moe/mla" if is_moe or is_mla else "dense"


@dataclass(frozen=True)
class Family:
    engine: str
    model_class: str
    generation: str
    metric: str

    def coarser(self) -> list[Family]:
        """This family and its fallbacks, nearest first: drop the generation, the model class, then the engine."""
        e, c, g, m = self.engine, self.model_class, self.generation, self.metric
        keys = [(e, c, g), (e, c, ANY), (e, ANY, g), (ANY, c, g), (e, ANY, ANY), (ANY, c, ANY), (ANY, ANY, g)]
        keys.append((ANY, ANY, ANY))
        out: list[Family] = []
        for key in keys:
            fam = Family(*key, m)
            if fam not in out:
                out.append(fam)
        return out

    @property
    def label(self) -> str:
        """'MoE/MLA on Hopper with SGLang'; a dropped key is left out ('all families' when every key is)."""
        what = CLASS_LABELS.get(self.model_class, "") if self.model_class != ANY else ""
        on = GENERATION_LABELS.get(self.generation, self.generation) if self.generation != ANY else ""
        eng = ENGINE_LABELS.get(self.engine, self.engine) if self.engine != ANY else ""
        parts = [what or ("any model" if (on or eng) else "all families")]
        parts += [f"on {on}"] if on else []
        parts += [f"with {eng}"] if eng else []
        return " ".join(parts)


@dataclass(frozen=True)
class BandRow:
    """One family's out-of-sample ratios measured / predicted (10th, 50th, 90th percentile) and row count."""

    family: Family
    rows: int
    ratio_low: float
    ratio_median: float
    ratio_high: float
    median_abs_pct: float


@dataclass(frozen=True)
class BandTable:
    min_rows: int
    rows: dict[Family, BandRow]

    def nearest(self, family: Family) -> BandRow | None:
        """The first family in `family.coarser()` with at least min_rows rows; when none has, the coarsest one the
        table holds (KV capacity has a handful of logs in all); None when the metric has no row at all."""
        found = None
        for fam in family.coarser():
            row = self.rows.get(fam)
            if row is not None and row.rows >= self.min_rows:
                return row
            found = row or found
        return found


@dataclass(frozen=True)
class Band:
    """A predicted value with the range it typically lands in."""

    metric: str
    value: float
    low: float
    high: float
    ratio_low: float
    ratio_high: float
    family: str  # the family the band comes from ('MoE/MLA on Hopper with SGLang')
    rows: int

    @property
    def pessimistic(self) -> float:
        """The end a capacity plan should hold at: the high latency, the low throughput."""
        return self.low if self.metric in HIGHER_IS_BETTER else self.high

    def to_dict(self) -> dict:
        return {
            "low": self.low,
            "high": self.high,
            "ratio_low": self.ratio_low,
            "ratio_high": self.ratio_high,
            "family": self.family,
            "rows": self.rows,
        }


def table_from_mapping(data: dict) -> BandTable:
    """A BandTable from error_bands.yaml's mapping (also how tests build a tiny table by hand)."""
    rows = {}
    for r in data.get("bands", []):
        fam = Family(str(r["engine"]), str(r["model_class"]), str(r["generation"]), str(r["metric"]))
        rows[fam] = BandRow(
            fam, int(r["rows"]), float(r["low"]), float(r["median"]), float(r["high"]), float(r["median_abs_pct"])
        )
    return BandTable(int(data.get("min_rows", 20)), rows)


@lru_cache(maxsize=1)
def band_table() -> BandTable:
    return table_from_mapping(_read_yaml(BANDS_PATH))


def band(family: Family, value: float, table: BandTable | None = None) -> Band | None:
    """value × [low, high] ratio of the nearest family with enough rows (None: no family, or no value)."""
    row = (table or band_table()).nearest(family)
    if row is None or value is None or value != value:
        return None
    lo, hi = min(row.ratio_low, 1.0), max(row.ratio_high, 1.0)
    return Band(family.metric, value, value * lo, value * hi, lo, hi, row.family.label, row.rows)


def family_of(r: Resolved, metric: str) -> Family:
    """The family of a prediction on the resolved scenario: its engine, model class and GPU generation."""
    return Family(r.engine.id, model_class(r.model.is_moe, r.model.is_mla), generation(r.gpu.family), metric)


def scenario_band(r: Resolved, metric: str, value: float) -> Band | None:
    return band(family_of(r, metric), value)


def bands_json(r: Resolved, predicted: dict[str, tuple[str, object]]) -> dict:
    """The `bands` object a --json adds: for each key, {low, high, ratio_low, ratio_high, family, rows}.

    `predicted` maps an output key to (metric, value); a value that is a mapping of percentiles (simulate's
    {"mean", "p50", ...}) gets low and high as mappings with the same keys. A key without a value is left out."""
    out = {}
    for key, (metric, value) in predicted.items():
        if isinstance(value, dict):
            inner = {k: scenario_band(r, metric, v) for k, v in value.items() if isinstance(v, (int, float))}
            first = next((b for b in inner.values() if b is not None), None)
            if first is None:
                continue
            d = first.to_dict()
            d["low"] = {k: (b.low if b else None) for k, b in inner.items()}
            d["high"] = {k: (b.high if b else None) for k, b in inner.items()}
            out[key] = d
        elif isinstance(value, (int, float)) and (b := scenario_band(r, metric, value)) is not None:
            out[key] = b.to_dict()
    return out


def format_value(value: float, key: str) -> str:
    """A predicted figure in the unit its key names: *_s as ms (s from 10 s), tokens/s, req/s."""
    if key.endswith("_s") and not key.endswith("per_s"):
        if value < 1:
            ms = value * 1e3
            return f"{ms:.3g} ms" if ms < 100 else f"{ms:,.0f} ms"
        return f"{value:.3g} s" if value < 100 else f"{value:,.0f} s"
    if "tokens_per_s" in key:
        return f"{value:,.0f} tokens/s"
    return f"{value:.3g} req/s" if value < 1000 else f"{value:,.0f} req/s"


def typically(low: float, high: float, key: str, family: str, rows: int) -> str:
    """'typically 17–26 ms for MoE/MLA on Hopper with SGLang, n=143'."""
    lo, hi = format_value(low, key), format_value(high, key)
    unit = lo.split(" ", 1)[1] if lo.split(" ", 1)[1:] == hi.split(" ", 1)[1:] else ""
    span = f"{lo.split(' ', 1)[0]}–{hi}" if unit else f"{lo}–{hi}"
    return f"typically {span} for {family}, n={rows:,}"


def band_line(key: str, d: dict) -> str:
    """A --json band as one line of text (a percentile band by its mean)."""
    low, high = d["low"], d["high"]
    if isinstance(low, dict):
        low, high, key = low.get("mean"), high.get("mean"), f"{key} (mean)"
    if low is None or high is None:
        return f"{key}: no band"
    return f"{key}: " + typically(low, high, key.split(" ")[0], d["family"], d["rows"])


def bands_text(bands: dict) -> str:
    """The text output's lines for a --json `bands` object, one per predicted figure."""
    return "".join(f"\n  band {band_line(key, b)}" for key, b in bands.items())


def serving_bands(out: dict) -> dict[str, tuple[str, object]]:
    """The predicted figures of a serving run's --json (simulate, fleet): latency percentiles and throughput."""
    predicted = {key: (metric, out.get(key)) for key, metric in (("ttft_s", "ttft"), ("tpot_s", "tpot"))}
    predicted["e2e_s"] = ("e2e", out.get("e2e_s"))
    predicted["throughput_tokens_per_s"] = ("throughput", out.get("throughput_tokens_per_s"))
    return predicted


def band_records(table: BandTable | None = None) -> list[dict]:
    """The table's families as rows for a page (one dict per family and metric, as error_bands.yaml holds them)."""
    out = []
    for fam, row in (table or band_table()).rows.items():
        out.append(
            {
                "metric": fam.metric,
                "engine": fam.engine,
                "model class": fam.model_class,
                "GPU generation": fam.generation,
                "rows": row.rows,
                "median |error| %": row.median_abs_pct,
                "measured / predicted p10": row.ratio_low,
                "p50": row.ratio_median,
                "p90": row.ratio_high,
            }
        )
    return out


RANKING_ROW_BAND_KEYS = ("bands", "replicas_pessimistic", "slo_holds_at_band_high")


def ranking_row_bands(r: Resolved | None, row: dict, slo, target_rps: float, headroom: float) -> dict:
    """The band keys of one `recommend` row (r: its single-replica scenario; None for a row without one: every key
    None): a band per predicted figure; replicas if each replica sustains only the low end of its throughput band,
    ceil(target × headroom / (capacity × ratio_low)); and whether the operating point's p95 TTFT and TPOT at the
    high ends of their bands still meet the SLO (False: the plan is latency-bound inside the band, and `capacity`
    on that deployment says how many replicas hold there)."""
    out = dict.fromkeys(RANKING_ROW_BAND_KEYS)
    rate = row.get("max_rate_per_replica")
    if r is None or not rate:
        return out
    keys = {"max_rate_per_replica": "throughput", "ttft_p95_s": "ttft", "tpot_p95_s": "tpot", "e2e_p95_s": "e2e"}
    out["bands"] = bands_json(r, {k: (metric, row.get(k)) for k, metric in keys.items()})
    low = scenario_band(r, "throughput", rate)
    ratio_low = low.ratio_low if low else 1.0
    out["replicas_pessimistic"] = max(1, math.ceil(target_rps * headroom / (rate * ratio_low) - 1e-9))
    ttft, tpot = row.get("ttft_p95_s"), row.get("tpot_p95_s")
    if ttft is not None:
        high = {m: (b.ratio_high if (b := scenario_band(r, m, 1.0)) else 1.0) for m in ("ttft", "tpot")}
        holds = ttft * high["ttft"] <= slo.ttft_p95_s
        out["slo_holds_at_band_high"] = holds and (tpot is None or tpot * high["tpot"] <= slo.tpot_p95_s)
    return out
