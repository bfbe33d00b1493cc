"""planner.accuracy.validation: predicted against measured for both measurement files, reasons, summaries, coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from conftest import ROOT

from planner.accuracy.kv_capacity_points import KV_ROWS, kv_table, predicted_blocks
from planner.accuracy.published_points import MEASUREMENTS_CSV, NEEDS_SIMULATOR, evaluate, load_points
from planner.accuracy.validation import (
    coverage_table,
    error_summary,
    overall,
    pair_status,
    points_table,
    read_point_rows,
    summary_dict,
)
from planner.core.errors import InputError
from planner.latency.efficiency import choose_profile

FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="module")
def published():
    return points_table()


def test_published_points_match_the_calibration_module(published):
    ref = evaluate(load_points(MEASUREMENTS_CSV)).set_index("id")
    mine = published.set_index("id")
    assert list(mine.index) == list(ref.index)  # one row per CSV row, in file order
    used = ref["excluded"] == ""
    np.testing.assert_allclose(mine.loc[used, "predicted"], ref.loc[used, "predicted"], rtol=1e-12)
    assert (mine.loc[used, "profile"] == ref.loc[used, "profile"]).all()


def test_every_row_is_predicted_or_says_why(published):
    predicted = published["predicted"].notna()
    assert (published.loc[predicted, "reason"] == "").all()
    assert (published.loc[~predicted, "reason"] != "").all()
    assert set(published.loc[~predicted, "reason"]) == {NEEDS_SIMULATOR}  # the 16 SGLang/vLLM points at 4 and 8 QPS
    assert (~predicted).sum() == 16


def test_error_is_signed_percent_of_measured(published):
    r = published.dropna(subset=["predicted"]).iloc[0]
    assert r["error_pct"] == pytest.approx(100 * (r["predicted"] - r["measured"]) / r["measured"])


def test_summaries_count_every_predicted_point(published):
    s = summary_dict(published)
    assert sum(v["n"] for v in s.values()) == 85
    for v in s.values():
        assert 0 <= v["median_abs_error_pct"] <= v["p90_abs_error_pct"]
    o = overall(published)
    assert (o.n, o.unpredicted) == (85, 16)
    assert o.median_abs_error_pct < 15  # the calibration targets (decode 15%, prefill 20%) hold overall
    by = error_summary(published, ["source", "metric", "gpu"])
    assert by["n"].sum() == 85 and {"source", "metric", "gpu"} <= set(by.columns)


def test_kv_rows_match_the_capacity_test_mapping():
    from test_vllm_capacity import ROWS
    from test_vllm_capacity import predicted_blocks as test_predicted_blocks

    assert KV_ROWS == ROWS  # one mapping: the test could import planner.accuracy.kv_capacity_points.KV_ROWS instead
    assert predicted_blocks("B03") == test_predicted_blocks("B03")


def test_kv_table_predicts_the_rebuilt_rows_and_explains_the_rest():
    kv = kv_table().set_index("id")
    assert set(kv.index[kv["predicted"].notna()]) == set(KV_ROWS)
    assert abs(kv.loc["B03", "error_pct"]) < 2 and abs(kv.loc["B10", "error_pct"]) < 2
    assert "PR #2031" in kv.loc["B14", "reason"] and math.isnan(kv.loc["B15", "predicted"])


def test_rows_it_cannot_predict_keep_a_reason():
    df = points_table(FIXTURES / "points_mixed.csv").set_index("id")
    assert "unknown model" in df.loc["X02", "reason"] and math.isnan(df.loc["X02", "predicted"])
    assert df.loc["X03", "reason"] == NEEDS_SIMULATOR
    # X01 copies C129 (Llama-2-7B, A100, TensorRT-LLM, TTFT at 128 tokens): same prediction
    c129 = evaluate().set_index("id").loc["C129", "predicted"]
    assert df.loc["X01", "predicted"] == pytest.approx(c129)
    # X05 names a catalogue GPU id (L4): no vLLM 0.6 points on Ada (its engine_version 0.6.0 runs under vllm-0.6's
    # profile), so that version's shared constants are transferred there (Ada itself was measured with llama.cpp)
    assert (df.loc["X05", "gpu"], df.loc["X05", "status"], df.loc["X05", "profile"]) == (
        "L4",
        "transferred",
        "vllm-0.6/default",
    )


def test_malformed_csv_names_row_and_column():
    with pytest.raises(InputError, match=r"row 3 \(X02\), column value"):
        read_point_rows(FIXTURES / "bad_points.csv")
    with pytest.raises(InputError, match="missing column"):
        read_point_rows(text="id,model\nA,b\n")
    with pytest.raises(InputError, match="no rows"):
        read_point_rows(text=(FIXTURES / "points_mixed.csv").read_text().splitlines()[0] + "\n")
    header = (FIXTURES / "points_mixed.csv").read_text().splitlines()[:2]
    for bad in ("nan", "-3", "0"):
        row = header[1].replace(",16.2,", f",{bad},")
        with pytest.raises(InputError, match="column value"):
            read_point_rows(text=header[0] + "\n" + row + "\n")


def test_a_profile_under_test_replaces_the_catalogue_one():
    base = choose_profile("tensorrt-llm-0.9", "ampere").profile  # X01 is a TensorRT-LLM 0.9.0 row
    slow = base.model_copy(update={"matmul_efficiency": base.matmul_efficiency / 2})
    df = points_table(FIXTURES / "points_mixed.csv", profiles={"tensorrt-llm-0.9/ampere": slow}).set_index("id")
    ref = points_table(FIXTURES / "points_mixed.csv").set_index("id")
    assert df.loc["X01", "status"] == "user-calibrated"
    assert df.loc["X01", "predicted"] > ref.loc["X01", "predicted"]  # TTFT is compute-bound: half the FLOP/s


def test_coverage_marks_calibrated_and_estimated_pairs():
    cov = coverage_table().set_index(["gpu", "engine"])
    # TensorRT-LLM 1.x has no Ampere rows (its v0.9.0 tables calibrate tensorrt-llm-0.9): transferred there
    assert cov.loc[("A100-80GB", "tensorrt-llm"), "calibration"] == "transferred"
    assert cov.loc[("H100-SXM", "tensorrt-llm"), "calibration"] == "calibrated"
    assert cov.loc[("H100-SXM", "vllm"), ("status", "calibration")].tolist() == ["calibrated", "calibrated"]
    assert cov.loc[("L4", "vllm"), ("status", "calibration")].tolist() == ["transferred", "transferred"]
    assert cov.loc[("T4", "vllm"), ("status", "calibration")].tolist() == ["estimated", "estimated"]
    # aiconfigurator's rows calibrate SGLang and Blackwell (validation/fit_efficiency.py)
    assert cov.loc[("H100-SXM", "sglang"), "calibration"] == "calibrated"
    assert cov.loc[("B200", "vllm"), "calibration"] == "calibrated"


def test_pair_status_lists_the_measured_pairs(published):
    pairs = pair_status(published)
    assert pairs["n"].sum() == 85
    assert set(zip(pairs["gpu"], pairs["engine"])) >= {("A100-80GB", "vllm-0.6"), ("H100-SXM", "tensorrt-llm-0.9")}
    assert set(pairs["calibration"]) == {"calibrated"}


def test_out_of_sample_summary_is_recorded_for_every_scheme():
    from planner.accuracy.validation import out_of_sample_summary

    oos = out_of_sample_summary()
    assert set(oos["scheme"]) == {"in-sample", "LOFO", "LOEO"}
    grp = oos[oos["by"] == "group"].set_index(["scheme", "key"])["median_abs_pct"]
    # out of sample is worse than in-sample (the honest figures the README quotes): LOEO predicts every point, as in
    # sample, and is worse for every group; LOFO predicts only the points of families with another family of the
    # same engine to learn from (prefill: 25 of 45, without Splitwise's 16 and LMDeploy's 4, the worst in sample), so
    # its median is compared where its points are most of the group's
    assert all(grp[("LOEO", g)] > grp[("in-sample", g)] for g in ("decode", "prefill", "throughput"))
    assert all(grp[("LOFO", g)] > grp[("in-sample", g)] for g in ("decode", "throughput"))


def test_the_serving_out_of_sample_table_reads_every_kind_and_names_the_targets_missed(tmp_path):
    # planner.accuracy.validation.serving_out_of_sample on a hand-written file in accuracy_loo --write's shape: the
    # kind's whole is "all", in sample's breakdowns come one level down ("engine vllm"), and a kind is named as missing
    # a target only where its whole is above it (one model out's TTFT 25.8 > 25; its group at 41.2 is not a kind)
    from planner.accuracy.validation import serving_out_of_sample, serving_targets_missed

    def figs(rows, ttft, tpot, thr):
        return {
            "rows": rows,
            **{f"{m}_median_abs_pct": v for m, v in zip(("ttft", "tpot", "throughput"), (ttft, tpot, thr))},
            **{f"{m}_median_signed_pct": -v for m, v in zip(("ttft", "tpot", "throughput"), (ttft, tpot, thr))},
        }

    doc = {
        "in_sample": {"all": figs(4, 30.0, 10.0, 9.0), "engine": {"vllm": figs(4, 30.0, 10.0, 9.0)}},
        "leave_one_source_out": {"all": figs(4, 24.0, 12.0, 12.0), "inferencemax": figs(3, 22.0, 11.0, 11.0)},
        "leave_one_model_out": {"all": figs(4, 25.8, 14.1, 13.8), "meta-llama/Llama-3.1-8B": figs(2, 41.2, 8.0, 8.4)},
        "leave_one_engine_out": {"all": figs(4, 23.2, 15.5, 12.3)},
        "out_of_sample_all_kinds": figs(8, 24.7, 12.2, 12.4),
        "targets_pct": {"ttft": 25.0, "tpot": 15.0, "throughput": 15.0},
        "method": "hand",
    }
    path = tmp_path / "loo.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    loo, targets, method = serving_out_of_sample(path)
    assert method == "hand" and targets == {"ttft": 25.0, "tpot": 15.0, "throughput": 15.0}
    assert list(zip(loo["kind"], loo["group"], loo["rows"])) == [
        ("in sample", "all", 4),
        ("in sample", "engine vllm", 4),
        ("one source out", "all", 4),
        ("one source out", "inferencemax", 3),
        ("one model out", "all", 4),
        ("one model out", "meta-llama/Llama-3.1-8B", 2),
        ("one engine out", "all", 4),
        ("all kinds", "all", 8),
    ]
    assert loo.iloc[5]["ttft median signed %"] == -41.2
    # in sample's 30% TTFT is not a miss; TPOT one engine out (15.5 > 15) is
    assert serving_targets_missed(loo, targets) == [("ttft", "one model out", 25.8), ("tpot", "one engine out", 15.5)]
    empty, no_targets, no_method = serving_out_of_sample(tmp_path / "absent.yaml")
    assert empty.empty and no_targets == {} and no_method == ""
