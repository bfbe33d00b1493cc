"""Arrival processes, length distributions and trace loading."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.errors import InputError
from planner.traffic.generators import LengthDist, closed_loop, open_loop
from planner.traffic.traces import load_trace, rescale, sample


def test_length_specs_parse_and_sample():
    rng = np.random.default_rng(0)
    assert LengthDist.parse("fixed:512").sample(3, rng).tolist() == [512] * 3
    u = LengthDist.parse("uniform:100,200").sample(10_000, rng)
    assert u.min() >= 100 and u.max() <= 200 and abs(u.mean() - 150) < 2
    ln = LengthDist.parse("lognormal:mean=1000,sigma=0.8").sample(200_000, rng)
    assert ln.mean() == pytest.approx(1000, rel=0.02) and ln.min() >= 1
    capped = LengthDist.parse("lognormal:mean=1000,sigma=0.8,max=1500").sample(10_000, rng)
    assert capped.max() <= 1500


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "gauss:1",
        "fixed:0",
        "fixed:abc",
        "uniform:5",
        "uniform:9,3",
        "lognormal:mean=100",
        "lognormal:mean=x,sigma=1",
        "lognormal:mean=0,sigma=1",
        "empirical:/no/such/file.csv",
        "fixed:1.5",
    ],
)
def test_bad_length_specs_name_the_field(spec):
    with pytest.raises(InputError) as err:
        LengthDist.parse(spec, "prompt")
    assert err.value.field == "prompt"


def test_poisson_gamma_constant_rates_and_cv():
    n = 200_000
    for process, cv in (("poisson", 1.0), ("gamma", 3.0), ("constant", 0.0)):
        wl = open_loop(n, 10.0, "fixed:10", "fixed:10", process=process, cv=cv or 1.0, seed=1)
        gaps = np.diff(wl.arrival_s)
        assert gaps.mean() == pytest.approx(0.1, rel=0.02)
        assert gaps.std() / gaps.mean() == pytest.approx(cv, abs=0.05)


def test_seeded_and_seed_visible():
    a = open_loop(100, 3.0, "uniform:1,100", "uniform:1,100", seed=5)
    b = open_loop(100, 3.0, "uniform:1,100", "uniform:1,100", seed=5)
    c = open_loop(100, 3.0, "uniform:1,100", "uniform:1,100", seed=6)
    assert a.seed == 5 and np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.prompt_tokens, b.prompt_tokens)
    assert not np.array_equal(a.arrival_s, c.arrival_s)


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(rate_per_s=0), "rate_per_s"),
        (dict(num_requests=0), "num_requests"),
        (dict(process="weibull"), "process"),
        (dict(process="gamma", cv=-1), "cv"),
    ],
)
def test_bad_open_loop_input(kw, field):
    args = dict(num_requests=10, rate_per_s=1.0, prompt="fixed:1", output="fixed:1") | kw
    with pytest.raises(InputError) as err:
        open_loop(**args)
    assert err.value.field == field


def test_closed_loop_workload_shape():
    wl = closed_loop(3, 10, 2.0, "fixed:5", "fixed:5", think="fixed", seed=0)
    assert wl.is_closed_loop and wl.user_id.tolist() == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
    assert wl.arrival_s[:3].tolist() == [2.0, 2.0, 2.0] and np.isnan(wl.arrival_s[3:]).all()


def test_azure_conv_trace():
    wl = load_trace("azure_conv")
    assert wl.num_requests == 19_366
    assert wl.arrival_s[0] == 0 and wl.arrival_s[-1] == pytest.approx(3501.72, abs=0.01)
    assert wl.prompt_tokens.mean() == pytest.approx(1154.7, abs=0.1)
    assert wl.output_tokens.mean() == pytest.approx(211.1, abs=0.1)


def test_mooncake_trace_has_prefix_ids():
    wl = load_trace("mooncake")
    assert wl.num_requests == 12_031 and wl.prefix_block_tokens == 512
    assert wl.prompt_tokens.mean() == pytest.approx(12_035.06, abs=0.01)
    assert wl.prefix_ids[0][:3].tolist() == [0, 1, 2]


def test_empirical_lengths_from_trace():
    d = LengthDist.parse("empirical:azure_code")
    x = d.sample(50_000, np.random.default_rng(0), "output")
    assert x.mean() == pytest.approx(27.9, rel=0.05)


def test_generic_csv_rescale_and_sample(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{i},{10 + i},{1 + i}\n" for i in range(100)))
    wl = load_trace(p)
    assert wl.num_requests == 100 and wl.arrival_s[-1] == 99
    assert rescale(wl, 2.0).arrival_s[-1] == 49.5
    s = sample(wl, max_requests=10, seed=3)
    assert s.num_requests == 10 and s.arrival_s[0] == 0 and np.all(np.diff(s.arrival_s) >= 0) and s.seed == 3
    w = sample(wl, start_s=10, duration_s=20)
    assert w.num_requests == 20 and w.prompt_tokens[0] == 20
    assert 20 < sample(wl, fraction=0.5, seed=1).num_requests < 80


@pytest.mark.parametrize(
    "content, where",
    [
        ("a,b,c\n1,2,3\n", "row 1"),
        ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,abc,5\n", "row 3, column prompt_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n-1,10,5\n", "row 3, column arrival_s"),
        ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,10,-5\n", "row 3, column output_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\nnan,10,5\n", "row 2, column arrival_s"),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,5\nyesterday,10,5\n",
            "row 3, column TIMESTAMP",
        ),
        ("arrival_s,prompt_tokens,output_tokens\n", "t.csv"),
        ("", "t.csv"),
    ],
)
def test_malformed_csv_names_row_and_column(tmp_path, content, where):
    p = tmp_path / "t.csv"
    p.write_text(content)
    with pytest.raises(InputError) as err:
        load_trace(p)
    assert where in err.value.field


def test_binary_junk_and_bad_jsonl(tmp_path):
    junk = tmp_path / "junk.csv"
    junk.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputError):
        load_trace(junk)
    bad = tmp_path / "m.jsonl"
    bad.write_text(
        '{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [1]}\n'
        '{"timestamp": 1, "input_length": -5, "output_length": 2}\n'
    )
    with pytest.raises(InputError) as err:
        load_trace(bad)
    assert "row 2, column input_length" in err.value.field
    with pytest.raises(InputError):
        load_trace(tmp_path / "missing.csv")
