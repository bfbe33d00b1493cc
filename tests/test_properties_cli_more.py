"""Property tests (hypothesis) over the other subcommands: estimate, simulate, capacity, report, walkthrough,
spec-decode, validate, prefix-cache, paged, flash-attn, quant, tp, lora.

Same contract as tests/test_properties_cli.py (README): exit 0 with output (valid JSON under --json), or exit 2
with exactly one line on stderr, starting `error: `, that names the flag at fault; never a traceback. Runs
`planner.cli.main` in-process (an exception escaping it is what would print a traceback).

Values that make a command allocate or loop without bound are kept out of the random draws (each example must
stay fast); inputs that once crashed are pinned in `test_former_crashes_are_named_errors` below.
"""

from __future__ import annotations

import csv
import io
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties_cli import MEMORY_FLAGS, flag_value, junk, run_cli

from planner.accuracy.validation import POINT_COLUMNS
from planner.core.catalog import gpus, model_presets, weight_precisions
from planner.core.engine_defaults import ENGINES
from planner.teaching.walkthroughs import WALKTHROUGHS
from planner.techniques.lora import ALL_MODULES

# 13 commands × EXAMPLES examples, a few ms to ~0.2 s (capacity) each: ~20 s for the file at 150.
# SERVINGPLAN_CLI_EXAMPLES=2000 for a longer hunt.
EXAMPLES = int(os.environ.get("SERVINGPLAN_CLI_EXAMPLES", "150"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    # the same examples every run (a CI run must not fail on a search's luck); SERVINGPLAN_CLI_EXAMPLES hunts afresh
    derandomize="SERVINGPLAN_CLI_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

small_int = st.integers(-3, 5000).map(str)
count = st.one_of(small_int, flag_value)  # a count a formula uses (never a loop or an allocation)
real = st.one_of(st.floats(-10, 10).map(str), st.floats(0, 1).map(str), flag_value)
# gamma arrivals: a cv whose square under/overflows (1e-300, 1e300) divides by zero:
# test_former_crashes_are_named_errors
cv = st.one_of(st.floats(0.01, 100).map(str), st.sampled_from(["0", "-1", "nan", "inf", "x", ""]))
fraction = st.one_of(st.floats(-0.5, 1.5).map(str), st.sampled_from(["0", "1", "nan", "inf", "-0"]), junk)
engine = st.one_of(st.sampled_from(ENGINES), junk)
# A length SPEC (fixed:N | uniform:LO,HI | lognormal:mean=M,sigma=S[,max=X] | empirical:TRACE) kept to lengths a
# simulation handles quickly; fixed:N beyond int64 is a known crash (test_former_crashes_are_named_errors).
tokens = st.integers(-5, 50_000)
length_spec = st.one_of(
    tokens.map(lambda n: f"fixed:{n}"),
    st.tuples(tokens, tokens).map(lambda t: f"uniform:{t[0]},{t[1]}"),
    st.tuples(st.floats(-10, 50_000), st.floats(-1, 6)).map(lambda t: f"lognormal:mean={t[0]},sigma={t[1]}"),
    st.tuples(st.floats(1, 5000), st.floats(0, 2), tokens).map(
        lambda t: f"lognormal:mean={t[0]},sigma={t[1]},max={t[2]}"
    ),
    st.sampled_from(
        [
            "empirical:azure_conv",
            "empirical:azure_code",
            "empirical:nope",
            "fixed:",
            "uniform:1",
            "lognormal:mean=x",
            "gamma:3",
            "fixed:1e3",
            "fixed:nan",
        ]
    ),
    junk,
)
# sizes the simulators allocate per item: bounded (10**9 of them exhaust memory: test_former_crashes_are_named_errors)
num_requests = st.one_of(st.integers(-3, 150).map(str), st.sampled_from(["0", "nan", "1e3", "", "x"]))
capacity_requests = st.one_of(st.integers(100, 140).map(str), st.integers(-3, 99).map(str), junk)

# scenario flags (shared with `memory`), drawn less often so that most examples reach the command's own checks
SCENARIO = dict(MEMORY_FLAGS)
SCENARIO["--model"] = st.one_of(st.sampled_from(sorted(model_presets())), junk)


def _strict_json(text: str):
    def reject(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=reject)


def check(argv: list[str], names: list[str], strict_json: bool = True) -> None:
    """The contract; `names` are the flags (or documented positions) an error may name. JSON must be RFC JSON
    (no NaN or Infinity)."""
    code, out, err = run_cli(argv)
    assert "Traceback" not in err, f"{argv}:\n{err}"
    assert code in (0, 2), f"exit {code} for {argv}: {err}"
    if code == 0:
        assert out.strip(), f"no output for {argv}"
        fmt = next((a.split("=", 1)[1] for a in argv if a.startswith("--format=")), None)
        if fmt == "json" or (fmt is None and "--json" in argv):  # report: an explicit --format wins over --json
            (_strict_json if strict_json else json.loads)(out)
    else:
        lines = err.strip("\n").split("\n")  # lines as a terminal shows them (splitlines also splits on \x1e ...)
        assert len(lines) == 1, f"{argv} printed {len(lines)} lines:\n{err}"
        assert lines[0].startswith("error: "), lines[0]
        assert any(n in lines[0] for n in names), f"no flag named in {lines[0]!r} ({argv})"


@st.composite
def command(
    draw,
    name: str,
    own: dict,
    required: dict | None = None,
    scenario: bool = True,
    flags: tuple[str, ...] = ("--json",),
    exclusive: tuple[tuple[str, str], ...] = (),
):
    """argv for `name`: its required flags, some of its own optional flags, a few scenario flags, boolean flags."""
    argv, used = [name], []
    for flag, strat in (required or {}).items():
        argv.append(f"{flag}={draw(strat)}")
        used.append(flag)
    chosen = draw(st.lists(st.sampled_from(sorted(own)), unique=True, max_size=len(own))) if own else []
    for a, b in exclusive:
        if a in chosen and b in chosen:
            chosen.remove(b)  # argparse rejects the pair itself; let the values reach the command
    for flag in chosen:
        argv.append(f"{flag}={draw(own[flag])}")
    used += chosen
    if scenario:
        picked = draw(st.lists(st.sampled_from(sorted(SCENARIO)), unique=True, max_size=3))
        if "--gpu" in picked and "--gpu-memory-gb" in picked:
            picked.remove("--gpu")
        argv += [f"{flag}={draw(SCENARIO[flag])}" for flag in picked]
        used += picked + ["--model", "--gpu", "--num-gpus", "--tp"]  # the defaults can clash with a drawn value
        if draw(st.booleans()):
            argv.append("--enforce-eager")
    for flag in flags:
        if draw(st.booleans()):
            argv.append(flag)
    return argv, used


REQUEST = {"--input-tokens": count, "--output-tokens": count, "--engine": engine}
REQUEST_BATCH = REQUEST | {"--batch": count}


def run_property(strategy, extra_names=()):
    @SETTINGS
    @given(strategy)
    def prop(case):
        argv, used = case
        check(argv, used + list(extra_names))

    prop()


def test_estimate():
    run_property(
        command(
            "estimate",
            {"--engine": engine, "--queue-wait-ms": real},
            required={"--batch": count, "--input-tokens": count, "--output-tokens": count},
        )
    )


def test_simulate():
    traffic = st.sampled_from(["--rate", "--users", "--trace"])
    values = {
        "--rate": st.one_of(st.floats(0.01, 50).map(str), flag_value),
        "--users": st.one_of(st.integers(-2, 64).map(str), junk),  # 2**64 users: test_former_crashes_are_named_errors
        "--trace": st.one_of(st.sampled_from(["azure_conv", "azure_code", "mooncake", "nope.csv"]), junk),
    }
    own = {
        "--arrival": st.one_of(st.sampled_from(["poisson", "gamma", "constant"]), junk),
        "--cv": cv,
        "--think-time": real,
        "--time-scale": real,
        "--input-tokens": st.one_of(tokens.map(str), junk),
        "--input-dist": length_spec,
        "--output-tokens": st.one_of(tokens.map(str), junk),
        "--output-dist": length_spec,
        "--max-queue": count,
        "--slo-ttft-ms": real,
        "--slo-tpot-ms": real,
        "--seed": st.one_of(st.integers(-3, 2**70).map(str), junk),
        "--engine": engine,
    }

    @st.composite
    def argv(draw):
        mode = draw(traffic)
        args, used = draw(
            command(
                "simulate",
                own,
                required={mode: values[mode], "--num-requests": num_requests},
                flags=("--json", "--prefix-caching"),
                exclusive=(("--input-tokens", "--input-dist"), ("--output-tokens", "--output-dist")),
            )
        )
        return args, used + ["--trace"]  # a shared trace's own errors name --trace

    run_property(argv())


def test_capacity():
    own = {
        "--profile": st.one_of(st.sampled_from(["chat", "code", "rag", "custom"]), junk),
        "--input-tokens": st.one_of(st.integers(-2, 4000).map(str), junk),
        "--input-dist": length_spec,
        "--output-tokens": st.one_of(st.integers(-2, 1000).map(str), junk),
        "--output-dist": length_spec,
        "--arrival": st.sampled_from(["poisson", "gamma", "constant", "trace"]),
        "--cv": cv,
        "--seed": st.one_of(st.integers(-3, 10**6).map(str), junk),
        "--slo-ttft-p95": real,
        "--slo-tpot-p95": real,
        "--slo-e2e-p99": real,
        "--headroom": st.one_of(st.floats(0.5, 3).map(str), flag_value),
        "--price": st.one_of(
            st.sampled_from(sorted(gpus())).map(lambda g: f"{g}=2.5"),
            st.sampled_from(["H100-SXM=-1", "H100-SXM=nan", "nope=1", "H100-SXM", "=", ""]),
            junk,
        ),
        # rel-tol under ~1e-16 loops forever (1 + tol == 1.0): test_former_crashes_are_named_errors
        "--rel-tol": st.one_of(st.floats(0.005, 0.6).map(str), st.sampled_from(["0", "-1", "nan", "inf", "x"])),
        "--engine": engine,
    }
    run_property(
        command(
            "capacity",
            own,
            required={
                "--target-rate": st.one_of(st.floats(0.1, 100).map(str), flag_value),
                "--num-requests": capacity_requests,
            },
            flags=("--json", "--prefix-caching"),
            exclusive=(("--input-tokens", "--input-dist"), ("--output-tokens", "--output-dist")),
        ),
        extra_names=["--trace"],
    )


def test_report():
    run_property(command("report", {"--format": st.one_of(st.sampled_from(["csv", "json", "md"]), junk)}))


@st.composite
def walkthrough_argv(draw):
    name = draw(st.one_of(st.sampled_from(sorted(WALKTHROUGHS)), junk))
    fields = list(WALKTHROUGHS[name].inputs.model_fields) if name in WALKTHROUGHS else ["batch"]
    pairs = draw(
        st.lists(
            st.one_of(
                st.tuples(st.sampled_from(fields), st.one_of(small_int, st.floats(-2, 1e6).map(str), flag_value)).map(
                    lambda t: f"{t[0]}={t[1]}"
                ),
                st.sampled_from(["nope=1", "=3", "batch", "", "batch=", " = "]),
            ),
            max_size=4,
        )
    )
    argv = ["walkthrough", name] + [f"--set={p}" for p in pairs]
    if draw(st.booleans()):
        argv.append("--json")
    # a bad value names its input field (the FIELD of --set FIELD=VALUE); "NAME" is the positional's name
    return argv, ["--set", "NAME", "name", *fields]


def test_walkthrough():
    run_property(walkthrough_argv())


def test_spec_decode():
    own = {"--draft-model": st.one_of(st.sampled_from(sorted(model_presets())), junk)} | REQUEST_BATCH
    run_property(
        command(
            "spec-decode",
            own,
            required={"--alpha": fraction, "--k": st.one_of(st.integers(-2, 40).map(str), flag_value)},
        )
    )


# --- validate: a tmp CSV in the format of published_points.csv ----------------------------------------------------
cell = st.one_of(
    st.sampled_from(
        [
            "",
            "1",
            "2",
            "0",
            "-1",
            "nan",
            "inf",
            "1e309",
            "x",
            "8",
            "128",
            "fp16",
            "bf16",
            "vLLM",
            "H100 80GB",
            "A100 80GB",
            "meta-llama/Llama-2-7b",
            "static BS=8",
            "output_throughput_per_gpu",
            "ttft_ms",
            "tpot_ms",
        ]
    ),
    st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=6),
)  # a newline: test_former_crashes_are_named_errors


@st.composite
def points_csv(draw) -> str:
    columns = list(POINT_COLUMNS)
    if draw(st.integers(0, 9)) == 0:
        columns.remove(draw(st.sampled_from(columns)))  # a missing column
    rows = draw(st.lists(st.lists(cell, min_size=len(columns), max_size=len(columns)), max_size=5))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    writer.writerows(rows)
    return out.getvalue()


def test_validate(tmp_path):
    path = tmp_path / "points.csv"

    @SETTINGS
    @given(points_csv(), st.booleans())
    def prop(text, as_json):
        path.write_text(text, encoding="utf-8")
        argv = ["validate", "--points", str(path)] + (["--json"] if as_json else [])
        check(argv, ["--points", "column", "row"])  # the module's contract: a bad row names row and column

    prop()
    check(["validate", "--points", str(tmp_path / "missing.csv")], ["--points"])


def test_prefix_cache():
    own = REQUEST | {
        "--prefix-tokens": count,
        "--hit-rate": fraction,
        "--num-sharing": count,
        "--queue-wait-ms": real,
        "--prefill-rate": real,
        "--trace": st.sampled_from(["mooncake", "azure_conv", "nope.csv"]),
    }
    run_property(command("prefix-cache", own))


def test_paged():
    own = {
        "--prompt-dist": length_spec,
        "--output-dist": length_spec,
        "--samples": st.one_of(
            st.integers(-3, 3000).map(str), junk
        ),  # 10**9 samples: test_former_crashes_are_named_errors
        "--seed": st.one_of(st.integers(-3, 2**70).map(str), junk),
        "--reserve-tokens": count,
    }
    run_property(command("paged", own))


def test_flash_attn():
    run_property(command("flash-attn", {"--batch": count, "--seq-len": count, "--block": count}))


def test_quant():
    formats = st.lists(st.one_of(st.sampled_from(sorted(weight_precisions())), junk), max_size=4).map(",".join)
    run_property(command("quant", REQUEST_BATCH | {"--formats": formats}))


def test_tp():
    run_property(command("tp", REQUEST_BATCH))


def test_lora():
    modules = st.lists(st.one_of(st.sampled_from(ALL_MODULES), junk), max_size=4).map(",".join)
    run_property(
        command(
            "lora", REQUEST | {"--rank": count, "--modules": modules, "--max-loras": count, "--keep-requests": count}
        )
    )


# --- inputs that once crashed (found by the probes behind this file): now each exits 2 naming its flag ----------
FORMER_CRASHES = [
    (["simulate", "--users", str(2**64), "--think-time", "1", "--num-requests", "100"], "OverflowError"),
    (["simulate", "--rate", "1", "--num-requests", "100", "--input-dist", f"fixed:{10**20}"], "OverflowError"),
    (["paged", "--seed", "-1", "--samples", "100"], "ValueError: expected non-negative integer"),
    (["paged", "--samples", str(10**20)], "ValueError: Maximum allowed dimension exceeded"),
    (["validate", "--points", "NON_UTF8"], "UnicodeDecodeError"),
    (
        ["simulate", "--rate", "1", "--num-requests", "100", "--arrival", "gamma", "--cv", "1e-300"],
        "ZeroDivisionError: tiny cv",
    ),
    (
        [
            "capacity",
            "--target-rate",
            "5",
            "--num-requests",
            "100",
            "--profile",
            "custom",
            "--arrival",
            "gamma",
            "--cv",
            "1e300",
        ],
        "ZeroDivisionError: huge cv",
    ),
    (["simulate", "--rate", "1e300", "--num-requests", "100"], "names rate_per_s instead of --rate"),
    (
        ["simulate", "--rate", "1", "--num-requests", "100", "--block-size", "2048"],
        "names block_size, not --block-size",
    ),
    (["paged", "--prompt-dist", "fixed:0"], "names prompt, not --prompt-dist"),
    (["validate", "--points", "NEWLINE_ID"], "a newline in a row's id splits the error over two lines"),
    (["paged", "--gpu-memory-gb", "1", "--json"], 'prints "concurrency_gain": Infinity (not JSON)'),
    (["capacity", "--target-rate", "5", "--rel-tol", "1e-300"], "bisection that never ends"),
    (
        ["spec-decode", "--alpha", "0.8", "--k", "4", "--batch", str(2**64), "--json"],
        "cast overflow, meaningless numbers",
    ),
    (["walkthrough", "kv-cache", "--set", "num_layers=-3"], "names num_layers, not --set"),
]


@pytest.mark.parametrize("argv,what", FORMER_CRASHES, ids=[f"{a[0]}-{i}" for i, (a, _) in enumerate(FORMER_CRASHES)])
def test_former_crashes_are_named_errors(argv, what, tmp_path):
    if "NON_UTF8" in argv:
        bad = tmp_path / "points.csv"
        bad.write_bytes(b"id,model\n\xff\xfe\n")
        argv = [str(bad) if a == "NON_UTF8" else a for a in argv]
    if "NEWLINE_ID" in argv:
        bad = tmp_path / "points.csv"
        bad.write_text(",".join(POINT_COLUMNS) + '\n"a\nb",m,g,1,fp16,auto,vllm,1,1,1,,ttft,x,ms\n')
        argv = [str(bad) if a == "NEWLINE_ID" else a for a in argv]
    names = [a for a in argv if a.startswith("--")]
    code, out, err = run_cli(argv)  # strict: the flag spelled as typed, one line, RFC JSON
    if code == 0 and "--json" in argv:
        _strict_json(out)
    assert code in (0, 2) and "Traceback" not in err, (code, err)
    assert code == 0 or (len(err.strip("\n").split("\n")) == 1 and any(n in err for n in names)), err
