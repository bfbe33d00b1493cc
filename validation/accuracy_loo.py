"""Out-of-sample accuracy on aiconfigurator's aggregated rows: leave one model, one GPU, one engine out, refit, predict.

    python -m validation.accuracy_loo                  # refits with a reduced budget (--iters 250), prints the table
    python -m validation.accuracy_loo --serving-only --iters 80   # cheaper still
    python -m validation.accuracy_loo --serving-only --families --iters 500 --per-stratum 6 --write  # the README's
    python -m validation.accuracy_loo --write          # also writes data/accuracy_aiconfigurator.yaml
    python -m validation.accuracy_loo --per-stratum 4  # rows per (engine, model, GPU) scored (default 4)
    python -m validation.accuracy_loo --csv loo.csv    # also every scored row's signed errors, fold by fold

validation/fit_efficiency.py fits data/efficiency.yaml on the published points and on up to SERVING_PER_STRATUM rows
per (engine, model, GPU) of the aiconfigurator split (each row simulated once under the prior constants and
re-priced: validation.serving_traces). Here, for every model, GPU and engine of the split in turn, the same fit
runs WITHOUT that group's rows (the published points stay; a held-out engine keeps only its published points, and an
engine left with nothing gets, as the script gives it, the others' median with the request path fitted on their
rows: fit_efficiency.estimated_engine) and predicts the group's rows:

  scored rows   up to --per-stratum rows per (engine, model, GPU), drawn with seed 1 (a draw other than the fit's),
                that the planner can simulate; mean TTFT and mean TPOT re-priced from each row's trace under the
                refitted constants; throughput = concurrency × output tokens / (TTFT + (output − 1) × TPOT), the
                closed loop's output tokens per second (N users, zero think time), from predicted and from measured
                means alike (the rows give no throughput of their own)
  reduced fit   --iters Nelder-Mead iterations per pass (the script runs 500 for engines with serving rows), the
                engines' shared constants only (no per-family corrections; with --families the GPU-family
                corrections too, on FAMILY_PER_STRATUM rows per stratum as the script fits them, a held-out GPU
                predicted from its engine's default), and with --serving-only on the serving
                rows alone (no published points: on 2 shared cores the published points' term is most of a fit's
                cost); the printed in-sample line uses the same reduced fit, so the gap to it is the held-out cost

Printed: median |error| (median signed) of mean TTFT, mean TPOT and throughput, in sample (all groups fitted) and for
each leave-one-out kind, overall and per held-out group, with row counts and the wall time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from planner.accuracy.serving_points import prediction, resolved, simulate_flags
from planner.cli.simulate_cmd import simulate_argv
from planner.core.catalog import DATA_DIR
from planner.core.errors import InputError
from planner.latency.efficiency import FIT_FIELDS
from validation import fit_efficiency as fe
from validation import wide_ep
from validation.serving_traces import aiconfigurator_points, stratified_sample

OUT = DATA_DIR / "accuracy_aiconfigurator.yaml"
KINDS = {
    "source": "leave one source out",
    "model": "leave one model out",
    "gpu": "leave one GPU out",
    "engine": "leave one engine out",
}
# issue 55: leave one source out, through `simulate` (TTFT's median signed error within +-10% besides)
TARGETS = {"ttft": 20.0, "tpot": 12.0, "throughput": 12.0}


def group_of(tr, kind: str) -> str:
    """The held-out group of a trace (or a ServingPoint) under `kind`."""
    p = getattr(tr, "point", tr)
    if kind == "source":
        return p.source
    r = _resolved(p)
    return {"model": r.model.name, "gpu": r.gpu.name, "engine": p.engine}[kind]


def _resolved(p):
    if p.id not in _RESOLVED:
        _RESOLVED[p.id] = resolved(p)
    return _RESOLVED[p.id]


_RESOLVED: dict = {}


def model_class(tr) -> str:
    m = _resolved(getattr(tr, "point", tr)).model
    return "moe/mla" if m.is_moe or m.is_mla else "dense"


def throughput(p, ttft_s: float, tpot_s: float) -> float:
    """Output tokens/s of N zero-think closed-loop clients: N × osl / (TTFT + (osl − 1) × TPOT)."""
    return p.concurrency * p.osl / (ttft_s + (p.osl - 1) * tpot_s)


def calibration_file(folder: Path, label: str, engine: str, family: str, prof) -> Path:
    """The fold's constants for (engine, GPU family) as the --calibration file a user would pass (written once)."""
    path = folder / f"{abs(hash((label, engine, family))):x}.yaml"
    if not path.exists():
        doc = {
            "engine": engine,
            "gpu_family": family,
            "profile": prof.model_dump(include=set(FIT_FIELDS)),
            "source": f"accuracy_loo fold {label}",
        }
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _user_path(task: tuple) -> dict | None:
    """One held-out row predicted as a user would get it: its simulate flags (serving_points.simulate_flags) with
    the fold's constants as --calibration, through `simulate` (planner.cli.simulate_cmd.simulate_argv)."""
    p, label, cal = task
    try:
        pred = prediction(simulate_argv(simulate_flags(p, 0) + ["--calibration", str(cal)]))
    except (InputError, ValueError):
        return None
    ttft, tpot = pred.ttft_ms / 1e3, pred.tpot_ms / 1e3
    return {
        "fold": label,
        "row": p.id,
        "source": p.source,
        "engine": p.engine,
        "model": p.preset,
        "gpu": p.gpu_id,
        "model_class": model_class(p),
        "tp": p.tp,
        "concurrency": p.concurrency,
        "isl": p.isl,
        "osl": p.osl,
        "measured_ttft_ms": p.ttft_ms,
        "measured_tpot_ms": p.tpot_ms,
        "predicted_ttft_ms": pred.ttft_ms,
        "predicted_tpot_ms": pred.tpot_ms,
        "ttft": 100 * (ttft * 1e3 / p.ttft_ms - 1),
        "tpot": 100 * (tpot * 1e3 / p.tpot_ms - 1),
        "throughput": 100 * (throughput(p, ttft, tpot) / throughput(p, p.ttft_ms / 1e3, p.tpot_ms / 1e3) - 1),
    }


def prediction_tasks(points: list, fitted: dict, label: str, folder: Path) -> list[tuple]:
    """(row, fold, its --calibration file) for every held-out row of the fold."""
    out = []
    for p in points:
        family = _resolved(p).gpu.family
        prof = fitted.get(f"{p.engine}/{family}", fitted[f"{p.engine}/default"])
        out.append((p, label, calibration_file(folder, label, p.engine, family, prof)))
    return out


def predictions(tasks: list[tuple], jobs: int) -> list[dict]:
    if jobs > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(jobs) as pool:
            rows = pool.map(_user_path, tasks, chunksize=4)
    else:
        rows = list(map(_user_path, tasks))
    return [r for r in rows if r is not None]


_STATE: dict = {}  # set before the worker pool forks: points, resolved, key_of, fit traces, iters


def _held(kind: str, group: str, model: str, gpu: str, engine: str) -> bool:
    """A published point or an anchor goes with its model, GPU or engine; a campaign held out (kind "source") takes
    none of them, which are other sources."""
    return {"model": model, "gpu": gpu, "engine": engine}.get(kind) == group


def _anchor_held(anchor, kind: str, group: str, engine: str) -> bool:
    """An anchor (SGLang's wide-EP prefills: DeepSeek-V3 on H100) goes with its model, its GPU or its engine."""
    r = wide_ep.scenario_for(anchor)
    return _held(kind, group, r.model.name, r.gpu.name, engine)


def _fit_engine(task: tuple) -> tuple:
    """One engine's profiles fitted without `(kind, group)` (None: nothing held out): its published points on the
    held-out model or GPU go too, as its serving rows."""
    engine, kind, group = task
    points, resolved, key_of, traces, iters = (_STATE[k] for k in ("points", "resolved", "key_of", "traces", "iters"))
    if _STATE["serving_only"]:
        points = []
    pts = [
        p
        for p in points
        if p.engine == engine
        and not (kind and _held(kind, group, resolved[p.id].model.name, resolved[p.id].gpu.name, p.engine))
    ]
    trs = [t for t in traces.get(engine, ()) if not (kind and group_of(t, kind) == group)]
    if not pts and not trs:
        return task, None
    anc = [a for a in fe.anchor_points().get(engine, ()) if not (kind and _anchor_held(a, kind, group, engine))]
    fams = _STATE["family_traces"]
    ftrs = [t for t in fams.get(engine, ()) if not (kind and group_of(t, kind) == group)] if fams else None
    fitted, _ = fe.fit_all(
        pts,
        resolved,
        key_of,
        iters=iters,
        verbose=False,
        traces={engine: trs} if trs else None,
        families=fams is not None,
        family_traces={engine: ftrs} if fams else None,
        anchors={engine: anc},
        estimate_others=False,  # profiles_for gives a held-out engine its estimate
    )
    return task, {k: v for k, v in fitted.items() if k.split("/")[0] == engine}


def refits(groups: dict[str, list[str]], engines: list[str], iters: int, jobs: int) -> dict:
    """(engine, kind, group) -> that engine's profiles; only the fits a held-out group changes are run (an engine
    with no row or point of the group keeps its in-sample fit)."""
    points, resolved, key_of = fe.usable_points()
    _STATE.update(points=points, resolved=resolved, key_of=key_of, iters=iters)
    if _STATE["serving_only"]:
        points = []
    tasks = [(e, None, None) for e in engines]
    for kind, names in groups.items():
        for g in names:
            for e in engines:
                touched = any(group_of(t, kind) == g for t in _STATE["traces"].get(e, ()))
                touched |= any(
                    p.engine == e and _held(kind, g, resolved[p.id].model.name, resolved[p.id].gpu.name, e)
                    for p in points
                )
                touched |= any(_anchor_held(a, kind, g, e) for a in fe.anchor_points().get(e, ()))
                if touched:
                    tasks.append((e, kind, g))
    if jobs > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(jobs) as pool:
            done = dict(pool.imap_unordered(_fit_engine, tasks))
    else:
        done = dict(map(_fit_engine, tasks))
    return done


def profiles_for(done: dict, engines: list[str], kind: str | None, group: str | None) -> dict:
    """All engines' profiles with `group` held out; an engine left with nothing gets what fit_efficiency gives an
    engine without points (status estimated): the others' per-constant median, its request path and output lag
    fitted on their rows at once (fit_efficiency.estimated_engine)."""
    out: dict = {}
    for e in engines:
        fit = done.get((e, kind, group), done[(e, None, None)]) if kind else done[(e, None, None)]
        if fit is not None:
            out.update(fit)
    for e in engines:
        if f"{e}/default" not in out:
            others = {k: v for k, v in out.items() if "/" in k}  # the other engines' defaults and families
            rows = (_STATE["family_traces"] or _STATE["traces"]).items()  # the others' rows, not the held-out group's
            traces = {k: [t for t in v if not (kind and group_of(t, kind) == group)] for k, v in rows if k != e}
            out[f"{e}/default"] = fe.estimated_engine(others, traces, "held out: the other engines' median")
    return out


def scored_points(per_stratum: int) -> list:
    """Up to `per_stratum` aggregated rows per (engine, model, GPU), drawn with seed 1 (a draw other than the fit's),
    that have both means measured and a client concurrency."""
    rows = stratified_sample(aiconfigurator_points(), per_stratum, seed=1)
    out = []
    for p in rows:
        if p.excluded or not (p.ttft_ms and p.tpot_ms) or p.request_rate:
            continue
        try:
            _resolved(p)
        except (InputError, ValueError):  # a layout its engine refuses: `validate` reports it, nothing to score
            continue
        out.append(p)
    return out


def summary(df: pd.DataFrame) -> dict:
    out = {"rows": len(df)}
    for m in TARGETS:
        out[f"{m}_median_abs_pct"] = round(float(df[m].abs().median()), 1)
        out[f"{m}_median_signed_pct"] = round(float(df[m].median()), 1)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=250, help="Nelder-Mead iterations per pass (reduced budget)")
    ap.add_argument("--per-stratum", type=int, default=4, help="scored rows per (engine, model, GPU)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for the refits")
    ap.add_argument(
        "--serving-only", action="store_true", help="refit on the serving rows alone (no published points): cheaper"
    )
    ap.add_argument(
        "--families",
        action="store_true",
        help="also fit the GPU-family corrections (stage 2, on FAMILY_PER_STRATUM rows per stratum) as the script does",
    )
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(OUT.parents[1])}")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--csv", type=Path, help="also write every scored row's signed errors, fold by fold")
    ap.add_argument(
        "--from-csv",
        type=Path,
        help="no refit: the table (and with --write the file) from an earlier run's --csv (its method line: --method)",
    )
    ap.add_argument("--method", default="", help="with --from-csv: the method line of the run that wrote the CSV")
    args = ap.parse_args(argv)
    if args.from_csv:
        doc = table(pd.read_csv(args.from_csv))
        doc["method"] = args.method or f"validation/accuracy_loo.py, predictions read from {args.from_csv.name}"
        print(render(doc))
        if args.write:
            write(doc, args.out)
        return 0
    t0 = time.time()
    fit_set = fe.serving_traces()
    scored = scored_points(args.per_stratum)
    print(f"traced {sum(map(len, fit_set.values()))} fit rows; {len(scored)} rows to score in {time.time() - t0:.0f} s")
    fam_set = fe.serving_traces(fe.FAMILY_PER_STRATUM) if args.families else None
    _STATE.update(traces=fit_set, serving_only=args.serving_only, family_traces=fam_set)
    engines = sorted({p.engine for p in scored} | set(fit_set))
    groups = {kind: sorted({group_of(t, kind) for t in scored}) for kind in KINDS}
    t1 = time.time()
    done = refits(groups, engines, args.iters, args.jobs)
    print(f"{len(done)} engine fits in {time.time() - t1:.0f} s ({args.jobs} workers)")
    folder = Path(tempfile.mkdtemp(prefix="accuracy_loo_"))
    tasks = prediction_tasks(scored, profiles_for(done, engines, None, None), "in sample", folder)
    for kind, names in groups.items():
        for g in names:
            held = [p for p in scored if group_of(p, kind) == g]
            tasks += prediction_tasks(held, profiles_for(done, engines, kind, g), f"{kind}:{g}", folder)
    t2 = time.time()
    df = pd.DataFrame(predictions(tasks, args.jobs))
    print(f"{len(df)} predictions through `simulate` in {time.time() - t2:.0f} s")
    if args.csv:
        df.to_csv(args.csv, index=False)
    doc = table(df)
    fits = (
        f"family corrections on {fe.FAMILY_PER_STRATUM} rows per stratum"
        if args.families
        else "shared constants only (no family corrections)"
    )
    doc["method"] = (
        f"validation/accuracy_loo.py: scored rows up to {args.per_stratum} per (engine, model, GPU), seed 1; "
        f"refits with {args.iters} Nelder-Mead iterations per pass, {fits}"
        f"{', on the serving rows alone (no published points)' if args.serving_only else ''} "
        f"({len(done)} engine fits, {args.jobs} workers); "
        f"every held-out row predicted through `simulate` with its flags and the fold's constants as --calibration; "
        f"wall {time.time() - t0:.0f} s"
    )
    print(render(doc))
    if args.write:
        write(doc, args.out)
    return 0


def write(doc: dict, out: Path) -> None:
    out.write_text(
        "# GENERATED by validation/accuracy_loo.py --write (do not edit): median |error| and median signed error\n"
        "# in %, on aiconfigurator's aggregated rows (data/measurements/aiconfigurator/), each predicted through\n"
        "# `simulate` with its flags; in sample and leave one source / model / GPU / engine out.\n"
        + yaml.safe_dump(doc, sort_keys=False, width=120),
        encoding="utf-8",
    )
    print(f"wrote {out}")


def table(df: pd.DataFrame) -> dict:
    ins = df[df["fold"] == "in sample"]
    doc = {"in_sample": {"all": summary(ins)}}
    for by in ("engine", "model_class", "gpu"):
        doc["in_sample"][by] = {str(k): summary(g) for k, g in sorted(ins.groupby(by))}
    for kind in KINDS:
        held = df[df["fold"].str.startswith(f"{kind}:")]
        doc[f"leave_one_{kind}_out"] = {
            "all": summary(held),
            **{f.split(":", 1)[1]: summary(g) for f, g in sorted(held.groupby("fold"))},
            **{f"class {k}": summary(g) for k, g in sorted(held.groupby("model_class"))},
        }
    everything = df[df["fold"] != "in sample"]
    doc["out_of_sample_all_kinds"] = summary(everything)
    doc["targets_pct"] = TARGETS
    return doc


def render(doc: dict) -> str:
    lines = [
        "",
        f"{'':34s} {'rows':>5s}  {'TTFT':>15s}  {'TPOT':>15s}  {'throughput':>15s}   (median |err| (signed) %)",
    ]

    def line(name, s):
        cells = "  ".join(
            f"{s[f'{m}_median_abs_pct']:6.1f} ({s[f'{m}_median_signed_pct']:+6.1f})"
            for m in ("ttft", "tpot", "throughput")
        )
        lines.append(f"{name[:34]:34s} {s['rows']:5d}  {cells}")

    for section, body in doc.items():
        if not isinstance(body, dict) or section == "targets_pct":
            continue
        if "rows" in body:
            line(section, body)
            continue
        lines.append(section)
        for k, v in body.items():
            if "rows" in v:
                line(f"  {k}", v)
            else:
                for kk, vv in v.items():
                    line(f"  {k} {kk}", vv)
    return "\n".join(lines)


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
