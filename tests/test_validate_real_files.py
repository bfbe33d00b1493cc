"""`validate` reads real files as they are: aiconfigurator's silicon CSV predicted by the closed-loop
simulator, common GPU and checkpoint names resolved (and said), and every skipped row counted with its reason."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import ROOT

from planner.accuracy.aiconfigurator_rows import parse_row, read_aiconfigurator
from planner.accuracy.names import resolve_gpu, resolve_model
from planner.cli import main

FIXTURES = ROOT / "tests" / "fixtures"
ROWS = FIXTURES / "aiconfigurator_rows.csv"  # 6 rows copied verbatim from data/measurements/aiconfigurator/
PREFIXES = (
    "2026_04_06_llama_3_1_70b_h200_sxm_vllm_f",
    "dsr1_gb200_trtllm_fp8_disagg_1024x8192_c",
    "openai_gpt_oss_120b",
    "qwen_qwen3_235b_a22b_fp8",
    "nvidia_deepseek_r1_nvfp4",
    "2026_04_06_deepseek_r1_b200_sxm_sglang_f",
)


@pytest.mark.parametrize(
    "text, gpu_id",
    [
        ("H200 SXM 141GB", "H200"),
        ("h200_sxm", "H200"),
        ("b200_sxm", "B200"),
        ("gb200", "GB200"),
        ("A100 80GB", "A100-80GB"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),  # no form factor: the SXM part, with a note
        ("H100 PCIe", "H100-PCIe"),
        ("RTX PRO 6000 Blackwell", "RTX-PRO-6000"),
        ("TPU v5e", None),
    ],
)
def test_gpu_names_as_benchmark_files_write_them(text, gpu_id):
    assert resolve_gpu(text)[0] == gpu_id


@pytest.mark.parametrize(
    "text, preset, fmt",
    [
        ("meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.1-70B", None),  # same config.json dimensions
        ("nvidia/Llama-3.1-8B-Instruct-FP8", "meta-llama/Llama-3.1-8B", "fp8"),
        ("Qwen/Qwen3-235B-A22B-FP8", "Qwen/Qwen3-235B-A22B-FP8", None),  # a preset itself (its checkpoint is FP8)
        ("nvidia/DeepSeek-R1-NVFP4", "deepseek-ai/DeepSeek-R1", "nvfp4"),
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-ai/DeepSeek-R1", None),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-30B-A3B-Instruct-2507", None),  # a preset itself
        ("openai/gpt-oss-120b", "openai/gpt-oss-120b", None),  # a preset since the current families were added
    ],
)
def test_checkpoint_names_map_to_the_preset_of_the_same_architecture(text, preset, fmt):
    got, note, hint = resolve_model(text)
    assert (got, hint) == (preset, fmt)
    assert bool(note) == (got is not None and got != text)  # every non-exact match says so


def test_aiconfigurator_rows_map_onto_a_replica_or_give_their_reason():
    points = read_aiconfigurator(ROWS.read_text())
    pts = {prefix: next(p for p in points if p.id.startswith(prefix)) for prefix in PREFIXES}
    llama = pts["2026_04_06_llama_3_1_70b_h200_sxm_vllm_f"]
    assert (llama.preset, llama.gpu_id, llama.engine, llama.weights) == (
        "meta-llama/Llama-3.1-70B",
        "H200",
        "vllm",
        "fp8",
    )
    assert (llama.tp, llama.dp, llama.concurrency, llama.isl, llama.osl, llama.excluded) == (2, 1, 4, 1024, 1024, "")
    assert "disaggregated" in pts["dsr1_gb200_trtllm_fp8_disagg_1024x8192_c"].excluded
    assert pts["openai_gpt_oss_120b"].preset == "openai/gpt-oss-120b"  # readable since the current families
    assert "tensor (2) and by expert (2)" in pts["qwen_qwen3_235b_a22b_fp8"].excluded
    # batch_size 56 per replica; the run's 224 clients (silicon_concurrency=224, c224 in the id) over 4 replicas
    r1 = pts["nvidia_deepseek_r1_nvfp4"]
    assert r1.concurrency == 56 and r1.weights == "nvfp4" and r1.expert_parallel and r1.tp == 4
    assert any("224 clients over 4 replicas" in n for n in r1.notes)
    assert "aiconfigurator benchmark rules" in r1.notes[-1]  # launched as its benchmark launches the engine
    # the id says tp8_ep8 on one 8-GPU node; the columns say tp_size 64 with moe 8 x 8 (their square)
    sq = pts["2026_04_06_deepseek_r1_b200_sxm_sglang_f"]
    assert (sq.tp, sq.dp, sq.expert_parallel, sq.excluded) == (8, 1, True, "")
    assert any("square" in n for n in sq.notes)


def test_the_database_dumps_square_columns_read_as_the_files_ids_name_them():
    # aiconfigurator's database dump holds InferenceMAX's runs without the layout in the id; its columns hold the same
    # square as the files' rows whose id names it (tp_size 64 / attention_dp_size 64 with MoE 8 x 8 -> _tp8_ep8_): 8
    # GPUs, experts by EP 8, DP attention when the DP column holds the 64. The same columns under aiperf (a genuine
    # aiconfigurator layout of MoE TP x EP) stay "not modelled"
    row = dict(
        id="dsr1_b200_sglang_fp8_agg_1024x1024_c64_cfg87",
        silicon_data_source="db-dump/2026-04-27; config_id=87; workflow_run_id=1",
        backend="sglang",
        model_path="deepseek-ai/DeepSeek-V3",
        system="b200_sxm",
        mode="agg",
        precision="fp8",
        isl="1024",
        osl="1024",
        batch_size="1",
        tp_size="64",
        attention_dp_size="1",
        moe_tp_size="8",
        moe_ep_size="8",
        silicon_ttft_ms="300",
        silicon_tpot_ms="12",
    )
    p = parse_row(row, 2)
    assert (p.tp, p.dp, p.expert_parallel, p.concurrency, p.excluded) == (8, 1, True, 64, "")
    assert any("square in the columns" in n and "8 GPUs" in n for n in p.notes)
    dp = parse_row({**row, "tp_size": "1", "attention_dp_size": "64"}, 3)
    assert (dp.tp, dp.dp, dp.expert_parallel, dp.excluded) == (1, 8, True, "")
    four = parse_row({**row, "tp_size": "16", "moe_tp_size": "4", "moe_ep_size": "4"}, 4)
    assert (four.tp, four.dp, four.expert_parallel) == (4, 1, True)
    aiperf = parse_row({**row, "silicon_data_source": "source_file=x.csv", "batch_size": "8"}, 5)
    assert "tensor (8) and by expert (8)" in aiperf.excluded


def test_a_bad_measurement_names_its_row_and_column():
    row = dict(id="x", backend="vllm", model_path="meta-llama/Llama-3.1-8B", system="h100_sxm", mode="agg")
    row.update(isl="128", osl="128", batch_size="1", silicon_ttft_ms="-3", silicon_tpot_ms="5")
    with pytest.raises(Exception) as err:
        parse_row(row, 7)
    assert err.value.field == "row 7 (x), column silicon_ttft_ms"


def test_validate_predicts_the_aiconfigurator_file_and_counts_what_it_skipped(capsys):
    assert main(["validate", "--points", str(ROWS), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "aiconfigurator" and out["rows"] == 6
    assert (out["rows_predicted"], out["rows_skipped"]) == (4, 2) and sum(
        out["skip_reasons"].values()
    ) == 2  # gpt-oss readable
    assert set(out["summary"]) == {"mean_ttft_ms", "mean_tpot_ms"}
    by_id = {p["id"]: p for p in out["points"]}
    llama = by_id["2026_04_06_llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x1024_c4_tp2_ep1_913:tpot"]
    assert llama["measured"] == pytest.approx(13.91392) and llama["predicted"] > 0 and llama["reason"] == ""
    assert "read as H200" in llama["note"]


def test_published_points_resolve_common_names(tmp_path, capsys):
    text = (FIXTURES / "points_mixed.csv").read_text().splitlines()
    header, first = text[0], text[1]
    cols = header.split(",")
    cells = first.split(",")
    cells[cols.index("gpu")] = "H100 SXM 80GB"
    cells[cols.index("model")] = "meta-llama/Llama-3.1-8B-Instruct"
    (tmp_path / "p.csv").write_text("\n".join([header, ",".join(cells)]) + "\n")
    assert main(["validate", "--points", str(tmp_path / "p.csv"), "--json"]) == 0
    point = json.loads(capsys.readouterr().out)["points"][0]
    assert point["reason"] == "" and point["predicted"] > 0 and "read as H100-SXM" in point["note"]


def test_sglang_jsonl_is_read_run_by_run():
    from planner.accuracy.user_points import parse_upload

    data = parse_upload("s.jsonl", (FIXTURES / "sglang_bench_serving.jsonl").read_text())
    assert data.kind == "sglang_bench_serving" and len(data.points) == 2
    closed, rate = data.points
    assert (closed.users, closed.request_rate, closed.input_tokens, closed.output_tokens) == (8, None, 1024, 256)
    assert (rate.users, rate.request_rate, rate.batch) == (None, 2.0, 7.7)  # SGLang's measured mean concurrency


@pytest.mark.parametrize("name", ["sglang_bench_serving.jsonl", "benchmark_serving.json", "guidellm.json"])
def test_a_clients_result_file_is_predicted_on_the_replica_the_flags_name(name, capsys):
    args = ["validate", "--points", str(FIXTURES / name), "--json", "--model", "meta-llama/Llama-3.1-8B-Instruct"]
    assert main([*args, "--gpu", "H100 SXM 80GB"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows_skipped"] == 0 and out["rows_predicted"] == out["rows"] >= 1
    assert all(p["predicted"] > 0 and "read as H100-SXM" in p["note"] for p in out["points"])
    assert main(args) == 0  # no --gpu: every run skipped, saying which flag is missing
    out = json.loads(capsys.readouterr().out)
    assert out["rows_predicted"] == 0 and list(out["skip_reasons"]) == ["no GPU: pass --gpu"]


def test_a_closed_loop_result_file_is_scored_as_its_client_ran_it():
    # vllm bench serve --max-concurrency 16 --request-rate inf, 320 completed (tests/fixtures/benchmark_serving.json):
    # every task created at once behind a semaphore of 16, so 320 / 16 = 20 rounds measured, the first a burst of 16;
    # predicted through `simulate` as that client's 16 streams of 320 requests, no warm-up (serving_points.
    # simulate_flags), the means over all 320
    from planner.accuracy.serving_points import simulate_flags, upload_points
    from planner.accuracy.user_points import parse_upload
    from planner.cli.validate_cmd import predict_point

    data = parse_upload("b.json", (FIXTURES / "benchmark_serving.json").read_text())
    (u,) = data.points
    assert (u.users, u.rounds, u.request_rate) == (16, 20, None)
    (p,) = upload_points(data, "meta-llama/Llama-3.1-8B", "H100-SXM", 1, "vllm")
    assert p.protocol is not None and p.protocol.rounds == 20
    assert any("scored as a burst of N, 20 rounds of N measured" in n for n in p.notes)  # the row says how
    flags = simulate_flags(p)
    value = lambda name: flags[flags.index(name) + 1]  # noqa: E731
    assert (value("--users"), value("--client"), value("--num-requests"), value("--warmup-requests")) == (
        "16",
        "vllm-bench",
        "320",
        "0",
    )
    pred = predict_point(p)
    assert pred.num_requests == 320 and pred.ttft_ms > 0 and pred.tpot_ms > 0
    # without the file's protocol: steady state, one round of 16 left out as warm-up and two measured
    steady = simulate_flags(dataclasses.replace(p, protocol=None))
    assert (steady[steady.index("--num-requests") + 1], steady[steady.index("--warmup-requests") + 1]) == ("32", "16")
    # a run at a finite rate has no burst
    (rate,) = parse_upload("r.json", (FIXTURES / "benchmark_serving_rate.json").read_text()).points
    assert rate.rounds is None


def test_a_mixed_rate_and_concurrency_sweep_is_predicted_row_by_row(tmp_path, capsys):
    # a `vllm bench serve` sweep saved as one list: four runs at a request rate (Poisson arrivals, no cap), two at
    # --max-concurrency N with rate inf; every run predicted through `simulate` (--rate R or --users N)
    rate = json.loads((FIXTURES / "benchmark_serving_rate.json").read_text())
    closed = json.loads((FIXTURES / "benchmark_serving.json").read_text())
    runs = [{**rate, "request_rate": r, "request_throughput": 0.99 * r} for r in (1.0, 2.0, 4.0, 8.0)]
    runs += [{**closed, "max_concurrency": n, "completed": 20 * n} for n in (4, 16)]
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(runs))
    argv = ["validate", "--points", str(path), "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-SXM", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["rows"], out["rows_predicted"], out["rows_skipped"]) == (6, 6, 0)
    by_row = {p["id"].rsplit(":", 1)[0]: p for p in out["points"] if p["metric"] == "mean_ttft_ms"}
    assert len(by_row) == 6 and all(p["predicted"] > 0 for p in by_row.values())


def test_identical_rows_are_simulated_once(monkeypatch):
    # two identical runs in one file: one simulation, both rows predicted with the same figures
    import planner.cli.validate_cmd as vc
    from planner.accuracy.serving_points import upload_points
    from planner.accuracy.user_points import parse_upload

    calls = []
    real = vc.simulate_argv
    monkeypatch.setattr(vc, "simulate_argv", lambda argv: calls.append(argv) or real(argv))
    one = json.loads((FIXTURES / "benchmark_serving.json").read_text())
    data = parse_upload("two.json", json.dumps([one, one]))
    points = upload_points(data, "meta-llama/Llama-3.1-8B", "H100-SXM", 1, "vllm")
    predict = vc.predictions(points, workers=1)
    a, b = (predict(p) for p in points)
    assert len(calls) == 1 and a == b and a.ttft_ms > 0
