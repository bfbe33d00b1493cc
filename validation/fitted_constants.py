"""Each engine's fitted constants, the rows behind them and how far the fit moved each from its prior.

    python -m validation.fitted_constants            # every engine's `default` profile
    python -m validation.fitted_constants --family   # and each GPU family's corrected profile

Read from data/efficiency.yaml (validation/fit_efficiency.py writes it); the priors are the fit's (PRIORS). A constant
the rows cannot see (a serving-only constant of an engine without closed-loop rows) stays at its prior or at 0, and
the `seen by` column says which rows identify it: published static points, closed-loop serving rows, or both.
"""

from __future__ import annotations

import argparse

import yaml

from planner.latency.efficiency import EFFICIENCY_PATH, FIT_FIELDS
from validation import fit_efficiency as fe


def rows(profiles: dict, families: bool) -> list[tuple]:
    out = []
    for engine, fams in profiles.items():
        for fam, prof in fams.items():
            if fam != "default" and not families:
                continue
            for name in FIT_FIELDS:
                prior = fe.PRIORS[name][0]
                value = prof.get(name)
                moved = value / prior if value and prior else float("nan")
                seen = "serving rows" if name in fe.SERVING_ONLY else "points + serving rows"
                out.append((engine, fam, name, value, prior, moved, prof.get("num_points"), seen))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", action="store_true", help="also each GPU family's profile")
    args = ap.parse_args(argv)
    profiles = yaml.safe_load(EFFICIENCY_PATH.read_text(encoding="utf-8"))["profiles"]
    print(
        f"{'engine':17s} {'profile':9s} {'constant':24s} {'fitted':>11s} {'prior':>11s} {'x prior':>8s} rows  seen by"
    )
    for engine, fam, name, value, prior, moved, n, seen in rows(profiles, args.family):
        v = "–" if value is None else f"{value:11.4g}"
        print(f"{engine:17s} {fam:9s} {name:24s} {v:>11s} {prior:11.4g} {moved:8.2f} {n!s:>4s}  {seen}")
    for engine, fams in profiles.items():
        print(f"{engine}: {fams['default'].get('note', '')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
