"""The benchmark's own engine launch (planner.accuracy.bench_rules) and the two scheduler rules it needs: SGLang's
max_prefill_tokens and TensorRT-LLM's attention-DP balance hold, each counted by hand on a 1 s step."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest

from planner.accuracy import serving_points as sp
from planner.accuracy.aiconfigurator_rows import parse_row, read_aiconfigurator
from planner.accuracy.bench_protocol import INFERENCEMAX
from planner.accuracy.bench_rules import bench_settings, clients_per_rank
from planner.accuracy.inferencemax_launch import (
    ADP_BALANCE_TIMEOUT_ITERS,
    inferencemax_dsr1_trt_tokens,
    inferencemax_mtp,
    inferencemax_mtp_depth,
    inferencemax_mtp_trt_tokens,
)
from planner.core.paths import measurements_dir
from planner.memory.plan import plan_memory
from planner.sim.config import ConstantStepCost
from planner.sim.serving import run_by
from planner.sim.simulator import simulate
from planner.traffic.generators import closed_loop
from planner.traffic.workload import Workload


def _run(arrivals, prompts, outputs, **kw):
    cfg = dict(
        num_gpu_blocks=1000,
        block_size=16,
        max_num_seqs=16,
        max_num_batched_tokens=8192,
        enable_prefix_caching=False,
    )
    wl = Workload(np.asarray(arrivals, float), np.asarray(prompts), np.asarray(outputs))
    return simulate(wl, dict(cfg, **kw), ConstantStepCost(1.0)).requests


def test_sglang_max_prefill_tokens_takes_two_1k_prompts_a_step_where_the_budget_alone_takes_all_four():
    # four 1,024-token prompts at t = 0; max_prefill_tokens 2,524 (ISL + 1500): step 0 takes prompts 0 and 1
    # (1,024 < 2,524 − 1,024 = 1,500 left), not prompt 2 (1,024 >= 476 left); step 1 has 2 decodes, so 2,522 − 0
    # left: prompts 2 and 3. First tokens at the end of step 0 (t = 1 s) and step 1 (t = 2 s).
    capped = _run([0, 0, 0, 0], [1024] * 4, [4] * 4, max_prefill_tokens=2524)
    assert capped.first_token_s.tolist() == [1.0, 1.0, 2.0, 2.0]
    free = _run([0, 0, 0, 0], [1024] * 4, [4] * 4)
    assert free.first_token_s.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_the_first_prompt_of_a_step_may_exceed_max_prefill_tokens_and_is_chunked_by_the_budget():
    # one 5,000-token prompt, max_prefill_tokens 2,000, budget 4,096: step 0 prefills 4,096 tokens, step 1 the other
    # 904 (SGLang admits the step's first request whatever its length: PrefillAdder)
    r = _run([0], [5000], [2], max_prefill_tokens=2000, max_num_batched_tokens=4096)
    assert r.first_token_s.tolist() == [2.0]


def test_adp_balance_holds_a_new_prompt_for_timeout_iters_steps_while_its_rank_decodes():
    # request 0 starts alone (nothing decoding: released at once), prefills in step 0 and decodes from step 1.
    # Request 1 arrives at t = 1.5 (during step 1); held in steps 2, 3, 4 (timeout 3), scheduled in step 5 and has
    # its first token at t = 6. Without the hold: step 2, first token at t = 3.
    held = _run([0, 1.5], [100, 100], [20, 20], adp_balance_timeout_iters=3)
    assert held.first_token_s.tolist() == [1.0, 6.0]
    free = _run([0, 1.5], [100, 100], [20, 20])
    assert free.first_token_s.tolist() == [1.0, 3.0]


def test_adp_balance_releases_at_once_when_the_rank_has_nothing_decoding():
    # request 1 arrives after request 0 finished (1 prefill step + 2 decode steps end at t = 3): the idle engine
    # steps at its arrival (t = 3.5), first token at 4.5, no hold
    r = _run([0, 3.5], [100, 100], [3, 3], adp_balance_timeout_iters=60)
    assert r.first_token_s.tolist() == [1.0, 4.5]


def test_adp_balance_holds_a_new_prompt_while_its_rank_decodes_speculatively():
    # the first test's case with multi-token prediction (one draft, always accepted: 2 tokens a step): requests
    # decoding speculatively are stepped one by one and never join the lock-step batch, yet they are decoding, so
    # request 1 (arrives at t = 1.5) is held in steps 2, 3, 4 and has its first token at t = 6, as without drafts
    held = _run([0, 1.5], [100, 100], [20, 20], adp_balance_timeout_iters=3, spec_k=1, spec_alpha=1.0)
    assert held.first_token_s.tolist() == [1.0, 6.0]
    free = _run([0, 1.5], [100, 100], [20, 20], spec_k=1, spec_alpha=1.0)
    assert free.first_token_s.tolist() == [1.0, 3.0]


def test_adp_balance_lets_the_prompts_a_release_left_waiting_go_unheld_then_holds_the_next_arrival():
    # budget 150 tokens: one 100-token prompt a step beside the decodes. Request 0 alone (released at once) has its
    # first token at t = 1. Requests 1, 2, 3 arrive at t = 1.5, held in steps 2-4 (timeout 3); step 5 (t 5-6)
    # takes request 1, and 2 and 3, waiting since the release, go in steps 6 and 7 unheld (every symmetric rank has
    # one left too): first tokens 6, 7, 8. Request 4 arrives at t = 8.5, after the queue emptied: held in steps 9-11,
    # prefilled in step 12, first token at t = 13. (Held again after each release, the three would finish at 6, 10,
    # 14.)
    arrivals = [0, 1.5, 1.5, 1.5, 8.5]
    r = _run(arrivals, [100] * 5, [30] * 5, adp_balance_timeout_iters=3, max_num_batched_tokens=150)
    assert r.first_token_s.tolist() == [1.0, 6.0, 7.0, 8.0, 13.0]


def test_sglang_recv_interval_holds_an_arrival_until_n_decode_steps_since_the_last_poll():
    # SGLang --scheduler-recv-interval 10 (SchedulerRecvSkipper: decode step +1, prompt step +1000): request 0 is
    # taken at t = 0 and prefilled in step 0 (t 0-1), after which the scheduler polls (nothing yet) and resets its
    # counter. Request 1 arrives at t = 1.5, during the first decode step, and is taken only after the tenth (t = 11):
    # prefilled in t 11-12. Polling every step, it is taken at t = 2 and has its first token at t = 3.
    recv = _run([0, 1.5], [100, 100], [40, 40], admission_policy="sglang", scheduler_recv_interval=10)
    assert recv.first_token_s.tolist() == [1.0, 12.0]
    every = _run([0, 1.5], [100, 100], [40, 40], admission_policy="sglang")
    assert every.first_token_s.tolist() == [1.0, 3.0]


def test_sglang_recv_interval_counts_a_speculative_verification_like_a_decode_step():
    # with speculative decoding the decodes verify drafts in the scheduled chunks (SGLang's TARGET_VERIFY), which
    # SchedulerRecvSkipper weighs 1 like DECODE (sgl-project/sglang managers/scheduler_recv_skipper.py, content id
    # 273726411 of the search index): with no draft accepted, each 1 s step still gives one token, and request 1
    # (arriving at t = 1.5) is taken after ten verification steps, at t = 11, as in the decode-only count above
    spec = dict(admission_policy="sglang", spec_k=2, spec_alpha=0.0)
    recv = _run([0, 1.5], [100, 100], [40, 40], scheduler_recv_interval=10, **spec)
    assert recv.first_token_s.tolist() == [1.0, 12.0]
    every = _run([0, 1.5], [100, 100], [40, 40], **spec)
    assert every.first_token_s.tolist() == [1.0, 3.0]


def test_sglang_recv_interval_costs_an_idle_server_nothing():
    # request 0 (1 prefill + 2 decode steps) is done at t = 3; request 1 arrives at t = 50 on an idle server, which
    # polls at once: first token at t = 51 whatever the interval
    r = _run([0, 50], [100, 100], [3, 3], admission_policy="sglang", scheduler_recv_interval=30)
    assert r.first_token_s.tolist() == [1.0, 51.0]


def test_sglang_recv_interval_only_delays_first_tokens():
    # a light closed loop of 4 users: a longer interval never makes a first token earlier, and the decode steps it
    # runs are the same work (every request still generates all its tokens)
    wl = closed_loop(4, 40, 0.0, "fixed:200", "fixed:64", "fixed", seed=0, stagger_s=20.0)
    cfg = dict(num_gpu_blocks=1000, block_size=16, max_num_seqs=16, max_num_batched_tokens=8192)
    means = []
    for n in (1, 4, 16):
        res = simulate(wl, dict(cfg, admission_policy="sglang", scheduler_recv_interval=n), ConstantStepCost(1.0))
        assert bool(res.requests.finished.all())
        means.append(float(np.mean(res.requests.first_token_s - res.requests.arrival_s)))
    assert means[0] < means[1] < means[2]


def test_tensorrt_llm_batch_wait_holds_a_lone_prompt_for_timeout_iters_steps():
    # batch_wait_timeout_iters 3, ratio 0.9 of 1,000 tokens: request 0 starts alone (nothing decoding, no wait) and
    # prefills in step 0. Request 1 (100 tokens) arrives at t = 1.5: 100 + 1 decode token < 900, so it is held in the
    # steps at t = 2, 3, 4 and prefilled at t = 5, first token at t = 6 (at t = 3 without the wait)
    kw = dict(max_num_batched_tokens=1000, enable_chunked_prefill=False, admission_policy="guaranteed-no-evict")
    held = _run([0, 1.5], [100, 100], [20, 20], batch_wait_timeout_iters=3, batch_wait_max_tokens_ratio=0.9, **kw)
    assert held.first_token_s.tolist() == [1.0, 6.0]
    free = _run([0, 1.5], [100, 100], [20, 20], **kw)
    assert free.first_token_s.tolist() == [1.0, 3.0]


def test_tensorrt_llm_batch_wait_ends_when_the_prompts_fill_the_ratio():
    # nine 100-token prompts arrive at t = 1.5 while request 0 decodes: 900 + 1 tokens >= 0.5 x 1,000, so they go in
    # the step at t = 2 (first tokens at t = 3) although the timeout is 50 steps
    kw = dict(max_num_batched_tokens=1000, enable_chunked_prefill=False, admission_policy="guaranteed-no-evict")
    r = _run([0] + [1.5] * 9, [100] * 10, [20] * 10, batch_wait_timeout_iters=50, batch_wait_max_tokens_ratio=0.5, **kw)
    assert r.first_token_s.tolist() == [1.0] + [3.0] * 9


def test_a_prompt_that_fits_the_budget_runs_without_chunking_when_its_output_does_not():
    # TensorRT-LLM never preempts, so without chunked prefill only the prompt must fit max_num_tokens (1,000 + 8,000
    # tokens would be refused by the prompt + output rule)
    r = _run(
        [0],
        [1000],
        [8000],
        max_num_batched_tokens=2000,
        enable_chunked_prefill=False,
        admission_policy="guaranteed-no-evict",
    )
    assert r.first_token_s.tolist() == [1.0]


def _point(key: str) -> sp.ServingPoint:
    text = (measurements_dir() / "aiconfigurator" / "silicon_calibration.csv").read_text()
    return next(p for p in read_aiconfigurator(text) if key in p.id)


@pytest.mark.parametrize(
    "key, engine, seqs, budget, chunked, extra",
    [
        # vLLM Qwen3-32B on 2 x H100: batch 8, ISL 1,024 -> max_num_tokens 8 + 1,024 + 1,500
        ("qwen3_32b_h100_sxm_vllm_agg_1024x1024_c8_tp2_epnone_31", "vllm", 8, 2532, True, {}),
        # SGLang Qwen3-32B on 2 x H100 (aiperf, aiconfigurator's rules), 16 clients, ISL 1,024: the chunk stays
        # 8,192; max_prefill_tokens 1,024 + 1,500
        (
            "qwen3_32b_h100_sxm_sglang_agg_1024x128_c16_tp2_epnone_1",
            "sglang",
            16,
            8192,
            True,
            {"max_prefill_tokens": 2524},
        ),
        # the database dump's DeepSeek runs (named DeepSeek-V3) are InferenceMAX's: its dsr1_fp8_h200.sh launch
        ("dsr1_h200_sglang_fp8_agg_1024x1024_c4_cfg81", "sglang", 4, 32768, True, {"max_prefill_tokens": 32768}),
        # the same on InferenceMAX's file: its script's --chunked-prefill-size / --max-prefill-tokens 32,768 at
        # --mem-fraction-static 0.82 (before the scripts' fractions, halved to 16,384: SGLang's default fraction left
        # no KV pool at 32,768)
        (
            "deepseek_r1_h200_sxm_sglang_fp8_agg_8192x1024_c4_tp8_ep1_83",
            "sglang",
            4,
            32768,
            True,
            {"max_prefill_tokens": 32768},
        ),
        # vLLM gpt-oss-120b on InferenceMAX's file: max-num-batched-tokens 8,192 whatever the prompt
        ("gpt_oss_120b_h200_sxm_vllm_fp4_agg_8192x1024_c64_tp2_ep1_403", "vllm", 64, 8192, True, {}),
        # TensorRT-LLM DeepSeek-R1 NVFP4, 8 x B200 DP 8, 256 clients: 32 per rank, InferenceX's max((256 + 1,024 +
        # 127) // 64 × 64, 8,192) = 8,192 tokens, balance hold 60 iterations
        (
            "deepseek_r1_b200_sxm_trtllm_fp4_agg_1024x1024_c256_tp8_0_ep8_0_1084",
            "tensorrt-llm",
            32,
            8192,
            False,
            {"adp_balance_timeout_iters": ADP_BALANCE_TIMEOUT_ITERS},
        ),
        # ... an -mtp run (image 1.2.0rc6.post3) at 64 clients: one draft token with attention DP, the FP4 script's
        # B = 64 / 4 = 16 and (2 × 16 + 1,024 + 127) // 64 × 64 = 1,152 tokens, no floor
        (
            "deepseek_r1_b200_sxm_trtllm_fp4_agg_1024x1024_c64_tp8_0_ep8_0_976",
            "tensorrt-llm",
            8,
            1152,
            False,
            {"adp_balance_timeout_iters": ADP_BALANCE_TIMEOUT_ITERS, "spec_k": 1},
        ),
        # ... without attention DP the same rule: 8k prompts at 64 clients, (64 + 8,192 + 127) // 64 × 64 = 8,320, one
        # prompt a step (the default 16,384 would take two)
        ("deepseek_r1_b200_sxm_trtllm_fp4_agg_8192x1024_c64_tp8_ep1_111", "tensorrt-llm", 64, 8320, False, {}),
    ],
)
def test_rows_run_with_their_benchmarks_launch(key, engine, seqs, budget, chunked, extra):
    p = _point(key)
    r = sp.resolved(p)
    s = p.settings(r)
    assert (r.engine.id, s.max_num_seqs, s.max_num_batched_tokens) == (engine, seqs, budget)
    cfg = s.scheduler_fields()
    assert cfg.get("enable_chunked_prefill", True) is chunked
    assert {k: cfg[k] for k in extra} == extra
    spec, inferencemax = inferencemax_mtp(p.mtp_depth), p.protocol is INFERENCEMAX
    assert s == bench_settings(r, p.clients_per_rank, p.isl, 0, inferencemax, p.osl, spec, p.measured_on)


def test_attention_dp_rows_simulate_one_rank_of_the_runs_clients():
    assert clients_per_rank(64, 8) == 8 and clients_per_rank(4, 1) == 4 and clients_per_rank(2, 8) == 1
    p = _point("deepseek_r1_b200_sxm_trtllm_fp8_agg_1024x1024_c64_tp8_ep8_945")
    # the id's square (attention_dp_size 64 x batch_size 1) is the run's 64 clients on 8 GPUs: 8 per rank
    assert (p.dp, p.concurrency, p.clients_per_rank) == (8, 64, 8)
    assert any("InferenceX" in n for n in p.notes)


@pytest.mark.parametrize(
    "key, kv",
    [
        # InferenceMAX's Llama-3.1-70B TensorRT-LLM script: kv_cache_config dtype fp8
        ("2026_04_06_llama_3_1_70b_b200_sxm_trtllm_fp8_agg_1024x8192_c128_tp2_ep1_360", "fp8"),
        # its SGLang DeepSeek-R1 H200 script sets no --kv-cache-dtype: 16-bit
        ("deepseek_r1_h200_sxm_sglang_fp8_agg_8192x1024_c4_tp8_ep1_83", "auto"),
        # gptoss_fp4_h200_trt.sh: dtype auto
        ("gpt_oss_120b_h200_sxm_trtllm_fp4_agg_1024x8192_c64_tp2_ep1_184", "auto"),
        # an aiperf row of aiconfigurator's own: the file does not record it, 16-bit
        ("qwen3_32b_h100_sxm_vllm_agg_1024x1024_c8_tp2_epnone_31", "auto"),
    ],
)
def test_rows_run_with_the_kv_cache_dtype_their_launch_set(key, kv):
    p = _point(key)
    assert p.kv_cache_dtype == kv
    assert sp.resolved(p).kv_bytes == (1.0 if kv == "fp8" else 2.0)


def test_fp8_kv_lets_128_clients_of_1k_8k_fit_llama_70b_on_two_b200():
    # 80 layers x 8 KV heads x 128 x (K, V) = 163,840 values a token, half on each GPU: 81,920 bytes at FP8,
    # 163,840 at 16 bits. 128 clients x (1,024 + 8,192) tokens = 1,179,648 tokens = 96.6 GB a GPU at FP8,
    # 193 GB at 16 bits: only FP8 fits beside 35 GB of weights on a 191.5 GB B200 (measured TTFT 367 ms, no queue)
    p = _point("2026_04_06_llama_3_1_70b_b200_sxm_trtllm_fp8_agg_1024x8192_c128_tp2_ep1_360")
    need = 128 * (1024 + 8192)
    for kv, fits in (("fp8", True), ("auto", False)):
        r = sp.resolved(replace(p, kv_cache_dtype=kv))
        run = run_by(r, p.settings(r))
        assert (plan_memory(run).num_gpu_blocks * run.deployment.block_size >= need) is fits


@pytest.mark.parametrize(
    "key, interval",
    [
        # InferenceX dsr1_fp4_b200.sh: --scheduler-recv-interval 10 below 16 clients, 30 from 16
        ("2026_04_06_deepseek_r1_b200_sxm_sglang_fp4_agg_1024x1024_c8_tp8_ep8_1012", 10),
        ("2026_04_06_deepseek_r1_b200_sxm_sglang_fp4_agg_1024x1024_c32_tp8_ep8_1016", 30),
        # dsr1_fp8_h200.sh sets none: SGLang's default, every step
        ("deepseek_r1_h200_sxm_sglang_fp8_agg_8192x1024_c4_tp8_ep1_83", 1),
        # aiconfigurator's own SGLang launch (aiperf rows) sets none
        ("dsr1_h200_sglang_fp8_agg_1024x1024_c4_cfg81", 1),
    ],
)
def test_inferencemax_b200_sglang_rows_poll_for_requests_as_their_script_sets(key, interval):
    p = _point(key)
    r = sp.resolved(p)
    assert p.settings(r).scheduler_fields().get("scheduler_recv_interval", 1) == interval


@pytest.mark.parametrize(
    "key, wait",
    [
        # InferenceX 70b_fp8_b200_trt_slurm.sh: 1k / 1k below TP 8 waits 20 iterations or 0.9 of max_num_tokens
        (
            "2026_04_06_llama_3_1_70b_b200_sxm_trtllm_fp8_agg_1024x1024_c16_tp2_ep1_915",
            {"batch_wait_timeout_iters": 20},
        ),
        # ... not at TP 8
        ("2026_04_06_llama_3_1_70b_b200_sxm_trtllm_fp8_agg_1024x1024_c16_tp8_ep1_622", {}),
        # ... nor at 8k / 1k
        ("llama_3_1_70b_h200_sxm_trtllm_fp8_agg_8192x1024_c64_tp2", {}),
    ],
)
def test_inferencemax_tensorrt_llm_rows_batch_prompts_as_their_script_sets(key, wait):
    p = _point(key)
    cfg = p.settings(sp.resolved(p)).scheduler_fields()
    assert {k: cfg[k] for k in wait} == wait
    if not wait:
        assert "batch_wait_timeout_iters" not in cfg


@pytest.mark.parametrize(
    "key, chunk, fraction",
    [
        # InferenceX@40f95bc0 dsr1_fp8_b200.sh at TP 4 (its 8k / 1k runs): 8,192-token chunks, fraction 0.95
        ("2026_03_25_deepseek_r1_b200_sxm_sglang_fp8_agg_8192x1024_c8_tp4_0_ep1_0_277", 8192, 0.95),
        # dsr1_fp4_b200.sh: 16,384, 0.85
        ("2026_03_25_deepseek_r1_b200_sxm_sglang_fp4_agg_1024x1024_c8_tp8_0_ep8_0_248", 16384, 0.85),
        # dsr1_fp8_h200.sh: 32,768, 0.82
        ("2026_03_25_deepseek_r1_h200_sxm_sglang_fp8_agg_8192x1024_c4_tp8_0_ep1_0_268", 32768, 0.82),
        # qwen3.5_fp8_b200.sh: 32,768, 0.82; qwen3.5_fp8_h200.sh: 16,384, 0.80
        ("2026_03_25_qwen3_5_397b_b200_sxm_sglang_fp8_agg_1024x1024_c64_tp4_0_ep4_0_334", 32768, 0.82),
        ("2026_03_25_qwen3_5_397b_h200_sxm_sglang_fp8_agg_1024x8192_c4_tp8_0_ep8_0_583", 16384, 0.80),
        # the database dump's run of dsr1_fp8_h200.sh (named DeepSeek-V3): the same launch
        ("dsr1_h200_sglang_fp8_agg_1024x1024_c4_cfg81", 32768, 0.82),
        # aiconfigurator's own SGLang launch (aiperf rows): SGLang's default fraction, its rules' prefill budget
        ("qwen3_32b_h100_sxm_sglang_agg_1024x128_c16_tp2_epnone_1", None, None),
    ],
)
def test_inferencemax_sglang_rows_launch_with_their_scripts_chunk_and_memory_fraction(key, chunk, fraction):
    p = _point(key)
    r = sp.resolved(p)
    assert r.deployment.mem_fraction_static == fraction
    if chunk is not None:
        fields = p.settings(r).scheduler_fields()
        assert (fields["max_num_batched_tokens"], fields["max_prefill_tokens"]) == (chunk, chunk)


def test_the_scripts_memory_fraction_sizes_sglangs_pool():
    # DeepSeek-R1 FP8 on 8 x H200 (150,109,945,856 B usable = 143,155.6 MiB) at --mem-fraction-static 0.82
    # (dsr1_fp8_h200.sh): the pool is 0.82 x (usable less the 2.04 GB SGLang holds at init with a TP group) less
    # the weights (84.1 GB a GPU), 37.3 GB = 530,898 tokens of 70,272 B. SGLang's own default for the script's 32k
    # chunk reserves 512 + 1.5 x 32,768 + 8 / 8 x 1,024 + 2 x 512 = 51,712 MiB, a fraction
    # round((143,155.6 - 51,712) / 143,155.6, 3) = 0.639: 0.639 x 148.07 GB = 94.6 GB, 10.5 GB after the weights
    p = _point("2026_03_25_deepseek_r1_h200_sxm_sglang_fp8_agg_8192x1024_c4_tp8_0_ep1_0_268")
    r = sp.resolved(p)
    plan = plan_memory(run_by(r, p.settings(r)))
    pool = plan.pool
    assert pool.non_torch_bytes == 2_040_109_466
    assert pool.kv_pool_bytes == pytest.approx(0.82 * (150_109_945_856 - 2_040_109_466) - pool.weights_bytes)
    assert plan.kv_pool_bytes_per_gpu == pytest.approx(37.31e9, rel=1e-3)
    default = plan_memory(run_by(sp.resolved(replace(p, mem_fraction_static=None)), p.settings(r)))
    assert default.pool.budget_bytes - default.pool.non_torch_bytes == pytest.approx(0.639 * 148_069_836_390)
    assert default.kv_pool_bytes_per_gpu == pytest.approx(10.51e9, rel=1e-2)


@pytest.mark.parametrize(
    "clients, isl, tokens",
    [
        (64, 1024, 8192),  # (64 + 1,024 + 127) // 64 × 64 = 1,152: the 8,192 floor binds
        (7104, 1024, 8192),  # 8,255 // 64 × 64 = 8,192: still the floor
        (7105, 1024, 8256),  # 8,256: past it
        (64, 8192, 8320),  # 8,383 // 64 × 64: one 8k prompt a step
    ],
)
def test_inferencemax_dsr1_tensorrt_llm_token_budget_by_hand(clients, isl, tokens):
    assert inferencemax_dsr1_trt_tokens(clients, isl) == tokens


@pytest.mark.parametrize(
    "clients, isl, measured_on, tokens",
    [
        (128, 1024, "2025-11-02", 1216),  # (128 + 1,024 + 127) // 64 × 64: one 1k prompt a step
        (256, 1024, "2026-01-20", 1344),  # the day before InferenceX@64af5a77 added the floor
        (128, 1024, "2026-01-21", 8192),  # from that day: the floor
        (128, 1024, "", 8192),  # no date: assumed the floor
    ],
)
def test_inferencemax_dsr1_tensorrt_llm_budget_before_the_floor_by_hand(clients, isl, measured_on, tokens):
    assert inferencemax_dsr1_trt_tokens(clients, isl, measured_on) == tokens


@pytest.mark.parametrize(
    "clients, dp, isl, k, weights, tokens",
    [
        (128, 1, 1024, 3, "fp8", 1600),  # (4 × 128 + 1,024 + 127) = 1,663 -> 1,600: one prompt beside 128 verifying
        (4, 1, 1024, 3, "nvfp4", 1152),  # 16 + 1,151 = 1,167 -> 1,152
        (256, 8, 1024, 1, "fp8", 1152),  # B = 256 / 8 = 32: 64 + 1,151 = 1,215 -> 1,152
        (256, 4, 1024, 1, "nvfp4", 1216),  # FP4's script divides by 4: B = 64, 128 + 1,151 = 1,279 -> 1,216
        (4, 8, 8192, 1, "fp8", 8320),  # fewer clients than the divisor: B = C = 4; 8 + 8,319 = 8,327 -> 8,320
    ],
)
def test_inferencemax_mtp_tensorrt_llm_budget_by_hand(clients, dp, isl, k, weights, tokens):
    assert inferencemax_mtp_trt_tokens(clients, dp, isl, k, weights) == tokens


def test_the_first_mtp_runs_are_told_by_their_date_and_their_scripts_budget():
    # InferenceX@bf345672 added the -mtp configs on 2026-01-14 on the plain configs' image (1.1.0rc2.post2): the rows
    # measured that day are theirs, those of 2025-12-15 on the same image plain (FP8, 8 x B200, 1k / 1k, 4 clients:
    # TPOT 7.83 against 14.59 ms)
    image = "nvcr.io/nvidia/tensorrt-llm/release:1.1.0rc2.post2"
    for gpu in ("B200", "H200"):
        assert inferencemax_mtp_depth("tensorrt-llm", "deepseek-ai/DeepSeek-R1", gpu, 1, image, "2026-01-14") == 3
        assert inferencemax_mtp_depth("tensorrt-llm", "deepseek-ai/DeepSeek-V3", gpu, 8, image, "2026-01-14") == 1
        assert inferencemax_mtp_depth("tensorrt-llm", "deepseek-ai/DeepSeek-R1", gpu, 1, image, "2025-12-15") == 0
    assert inferencemax_mtp_depth("sglang", "deepseek-ai/DeepSeek-R1", "B200", 1, image, "2026-01-14") == 0
    # the first scripts divided the clients by TP under attention DP, the later ones by 4 (FP4) or 8 (FP8):
    # 256 clients over DP 8 at 1k -> B 32, (2 × 32 + 1,151) // 64 × 64 = 1,152; then B 64 for FP4 -> 1,216
    assert inferencemax_mtp_trt_tokens(256, 8, 1024, 1, "nvfp4", "2026-01-14") == 1152
    assert inferencemax_mtp_trt_tokens(256, 8, 1024, 1, "nvfp4", "2026-02-06") == 1216
    row = _dsr1_trt_row(image)
    row["silicon_data_source"] = row["silicon_data_source"].replace("2026-02-05T19:55:05Z", "2026-01-14T00:00:00Z")
    p = parse_row(row, 2)
    assert p.mtp_depth == 3 and any("measured 2026-01-14" in n for n in p.notes)


def _dsr1_trt_row(image: str, **kw) -> dict:
    row = dict(
        id="2026_03_25_deepseek_r1_b200_sxm_trtllm_fp8_agg_1024x1024_c4_tp8_0_ep1_0_1021",
        silicon_data_source=(
            "source_file=2026-03-25.csv; model=DeepSeek-R1; silicon_concurrency=4; measured=2026-02-05T19:55:05Z; "
            f"wip=False; image={image}"
        ),
        backend="trtllm",
        model_path="deepseek-ai/DeepSeek-R1",
        system="b200_sxm",
        mode="agg",
        precision="fp8",
        isl="1024",
        osl="1024",
        batch_size="4",
        tp_size="8",
        attention_dp_size="1",
        moe_tp_size="8",
        moe_ep_size="1",
        silicon_ttft_ms="195.2",
        silicon_tpot_ms="5.38",
    )
    return {**row, **kw}


def test_inferencemax_mtp_runs_are_told_by_their_image_and_launched_as_their_script():
    # InferenceX ran dsr1-fp8-b200-trt-mtp on release:1.2.0rc6.post3 and its plain twin on .post2 (bench_rules note):
    # the same id, layout and clients, TPOT 5.38 ms with MTP against 10.30 ms without
    mtp = parse_row(_dsr1_trt_row("nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6.post3"), 2)
    plain = parse_row(_dsr1_trt_row("nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6.post2"), 3)
    assert (mtp.mtp_depth, plain.mtp_depth) == (3, 0)
    assert mtp.measured_on == "2026-02-05"
    assert any("multi-token prediction with 3 draft tokens" in n for n in mtp.notes)
    s = mtp.settings(sp.resolved(mtp))
    assert s.spec is not None and (s.spec.k, s.spec.method) == (3, "mtp")
    assert s.max_num_batched_tokens == 1152  # (4 × 4 + 1,024 + 127) // 64 × 64, no 8,192 floor
    assert s.scheduler_fields().get("batch_wait_timeout_iters", 0) == 0  # the -mtp script sets no batch waiting
    p = plain.settings(sp.resolved(plain))
    assert p.spec is None and p.max_num_batched_tokens == 8192
    # with attention DP the script runs one draft token; the image alone decides nothing on another engine or GPU
    assert (
        inferencemax_mtp_depth(
            "tensorrt-llm", "deepseek-ai/DeepSeek-V3", "B200", 8, "x/tensorrt-llm/release:1.2.0rc6.post3"
        )
        == 1
    )
    assert (
        inferencemax_mtp_depth(
            "tensorrt-llm", "deepseek-ai/DeepSeek-R1", "H200", 1, "tensorrt-llm/release:1.2.0rc6.post3"
        )
        == 0
    )
    assert inferencemax_mtp_depth("sglang", "deepseek-ai/DeepSeek-R1", "B200", 1, "lmsysorg/sglang:v0.5.9-cu130") == 0


def test_a_copied_row_keeps_its_benchmarks_launch():
    # the accuracy benchmarks fan rows out to worker processes; a ServingPoint copied there (serialised, or deep
    # copied as here) holds an equal, not the same, BenchProtocol, and must still launch as InferenceMAX's script
    # (SGLang's 16,384-token chunk on this row, where aiperf's rules give the engine's default budget)
    p = _point("deepseek_r1_b200_sxm_sglang_fp4_agg_1024x1024_c128_tp4_0_ep4_0_291")
    clone = copy.deepcopy(p)
    assert clone.protocol is not p.protocol and clone.protocol == INFERENCEMAX
    r = sp.resolved(p)
    assert clone.settings(r) == p.settings(r)
    assert p.settings(r).max_num_batched_tokens == 16384
