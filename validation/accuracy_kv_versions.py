"""vLLM KV capacity per profiler era: every log of data/measurements/vllm_kv_observations.csv (GPU blocks) under
its own vLLM version (planner.memory.vllm_pool.vllm_era) and under today's V1 rule, with the median |error| per era.

    python -m validation.accuracy_kv_versions      # ~5 s

The hybrid logs (vllm_hybrid_kv_observations.csv, all V1) state the KV memory they had, so they check the layout
and not the profiler: tests/test_vllm_hybrid_logs.py holds them within 5% whatever the era rule.
"""

from __future__ import annotations

import csv
import statistics

from planner.accuracy.kv_capacity_points import KV_CSV, KV_ROWS, kv_versions, predicted_blocks
from planner.memory.vllm_pool import vllm_era


def main() -> None:
    with open(KV_CSV, newline="", encoding="utf-8") as f:
        observed = {r["id"]: int(r["gpu_blocks"]) for r in csv.DictReader(f)}
    versions = kv_versions()
    per_era: dict[str, list[tuple[float, float]]] = {}
    head = ("log", "version", "era", "logged", "V1 rule", "error", "own era", "error")
    print("{:4s} {:22s} {:9s} {:>7s} {:>8s} {:>7s} {:>8s} {:>7s}".format(*head))
    for rid in KV_ROWS:
        obs, v = observed[rid], versions[rid]
        today, own = predicted_blocks(rid, ""), predicted_blocks(rid)
        e_today, e_own = 100 * (today - obs) / obs, 100 * (own - obs) / obs
        era = vllm_era(v)
        per_era.setdefault("V0" if era.startswith("v0") else "V1", []).append((e_today, e_own))
        print(f"{rid:4s} {v:22s} {era:9s} {obs:7,d} {today:8,d} {e_today:+6.1f}% {own:8,d} {e_own:+6.1f}%")
    print("\nmedian |error| per era: today's V1 rule -> each log's own version")
    for era, errs in sorted(per_era.items()):
        before = statistics.median(abs(a) for a, _ in errs)
        after = statistics.median(abs(b) for _, b in errs)
        print(f"  {era}: {before:5.1f}% -> {after:4.1f}%  ({len(errs)} logs)")


if __name__ == "__main__":
    main()
