"""One engine's own settings as user settings: SGLang's --scheduler-recv-interval and --mem-fraction-static, and
TensorRT-LLM's batch waiting (batch_wait_timeout_iters / batch_wait_max_tokens_ratio), from the CLI, a scenario and
the launch line to the simulator and the memory plan (the holds' hand counts are in tests/test_bench_rules.py)."""

from __future__ import annotations

import json

import pytest
import yaml

from planner.capacity.launch import launch_plan
from planner.cli import main
from planner.core.scenario import Scenario, resolve
from planner.core.scenario_codec import from_query, to_query
from planner.core.specs import Deployment
from planner.sim.serving import Replica
from planner.sim.settings import ServerSettings

CLIENTS = "simulate --users 8 --think-time 0 --num-requests 160 --input-tokens 1000 --output-tokens 200 --json"


def _simulate(capsys, engine: str, *flags: str, clients: str = CLIENTS) -> dict:
    assert main([*clients.split(), "--engine", engine, *flags]) == 0
    return json.loads(capsys.readouterr().out)


def _config(engine: str, **dep):
    r = resolve(Scenario(engine=engine, deployment=Deployment(**dep)))
    return Replica(r, ServerSettings.of(r)).scheduler_config


def test_recv_interval_delays_first_tokens_by_about_half_its_decode_steps(capsys):
    # 8 clients of 1,000 + 200 tokens on one H100 under SGLang, thinking 0.5 s (exponential) between requests so that
    # they arrive at any phase of the polls. Polling every 20 decode steps, an arrival during a decode run waits for
    # the next multiple of 20 steps: 0 to 19, about 10 on average, fewer when nothing runs (an idle scheduler polls
    # every loop; an arrival while a prefill runs is read after it: the prompt step adds 1,000 to the counter); 8.8
    # steps at this fit. Zero-think clients would instead lock to the polls' phase (each reply's successor arrives
    # the same turnaround after it), which any count from 0 to 19 can come out of. The TPOT stays a decode step.
    thinking = CLIENTS.replace("--think-time 0", "--think-time 0.5")
    base = _simulate(capsys, "sglang", clients=thinking)
    held = _simulate(capsys, "sglang", "--scheduler-recv-interval", "20", clients=thinking)
    extra_steps = (held["ttft_s"]["mean"] - base["ttft_s"]["mean"]) / base["tpot_s"]["mean"]
    assert 5 <= extra_steps <= 12
    assert held["tpot_s"]["mean"] == pytest.approx(base["tpot_s"]["mean"], rel=0.05)


def test_batch_wait_holds_prompts_among_decodes_up_to_its_timeout(capsys):
    # TensorRT-LLM, 8 clients of 1,000 + 200 tokens thinking 0.5 s: the wait applies while decodes run (PyExecutor
    # checks it when a step has both prompts and decodes), and a 1,000-token prompt plus 7 decodes never fill
    # 0.9 × 8,192 tokens, so a prompt arriving among the decodes waits out the 20 iterations (fewer when the
    # counter already ran for an earlier prompt, or none when the others have finished: it cannot exceed 20;
    # 18.2 steps at this fit). Zero-think clients would not show it: a benchmark client's 8 streams start together,
    # their prompts fit one step, and they stay a wave whose prompts never arrive among decodes
    thinking = CLIENTS.replace("--think-time 0", "--think-time 0.5")
    base = _simulate(capsys, "tensorrt-llm", clients=thinking)
    held = _simulate(
        capsys,
        "tensorrt-llm",
        "--batch-wait-timeout-iters",
        "20",
        "--batch-wait-max-tokens-ratio",
        "0.9",
        clients=thinking,
    )
    extra_steps = (held["ttft_s"]["mean"] - base["ttft_s"]["mean"]) / base["tpot_s"]["mean"]
    assert 15 <= extra_steps <= 21


def test_the_holds_reach_the_scheduler_only_under_their_engine():
    sglang = _config("sglang", scheduler_recv_interval=10, batch_wait_timeout_iters=20)
    assert (sglang.scheduler_recv_interval, sglang.batch_wait_timeout_iters) == (10, 0)
    trt = _config("tensorrt-llm", batch_wait_timeout_iters=20, batch_wait_max_tokens_ratio=0.9)
    assert (trt.batch_wait_timeout_iters, trt.batch_wait_max_tokens_ratio, trt.scheduler_recv_interval) == (20, 0.9, 1)
    vllm = _config("vllm", scheduler_recv_interval=10, batch_wait_timeout_iters=20)
    assert (vllm.scheduler_recv_interval, vllm.batch_wait_timeout_iters) == (1, 0)


@pytest.mark.parametrize(
    "flags, field, words",
    [
        ("--engine vllm --scheduler-recv-interval 10", "--scheduler-recv-interval", "sglang's option"),
        ("--engine sglang --batch-wait-timeout-iters 5", "--batch-wait-timeout-iters", "tensorrt-llm's option"),
        ("--engine sglang --scheduler-recv-interval 0", "--scheduler-recv-interval", "greater than 0"),
        ("--engine tensorrt-llm --batch-wait-max-tokens-ratio 1.5", "--batch-wait-max-tokens-ratio", "1"),
        ("--engine vllm --mem-fraction-static 0.8", "--mem-fraction-static", "sglang's option"),
        ("--engine sglang --mem-fraction-static 1.5", "--mem-fraction-static", "1"),
    ],
)
def test_a_hold_the_engine_does_not_have_or_a_bad_value_is_refused_by_name(capsys, flags, field, words):
    assert main(["memory", *flags.split()]) == 2
    err = capsys.readouterr().err
    assert f"{field}:" in err and words in err and "Traceback" not in err


def test_launch_lines_carry_the_holds_under_the_engines_names():
    r = resolve(
        Scenario(
            deployment=Deployment(
                max_model_len=8192,
                scheduler_recv_interval=30,
                batch_wait_timeout_iters=20,
                batch_wait_max_tokens_ratio=0.9,
            )
        )
    )
    sg = launch_plan(r, "sglang").commands[0].argv
    assert sg[sg.index("--scheduler-recv-interval") + 1] == "30"
    options = yaml.safe_load(launch_plan(r, "tensorrt-llm").files["extra-llm-api-options.yaml"])
    assert options["batch_wait_timeout_iters"] == 20 and options["batch_wait_max_tokens_ratio"] == 0.9
    plain = resolve(Scenario(deployment=Deployment(max_model_len=8192)))
    assert "--scheduler-recv-interval" not in launch_plan(plain, "sglang").commands[0].argv
    assert "batch_wait_timeout_iters" not in yaml.safe_load(
        launch_plan(plain, "tensorrt-llm").files["extra-llm-api-options.yaml"]
    )


def test_the_holds_travel_in_a_shared_link():
    s = Scenario(
        engine="tensorrt-llm",
        deployment=Deployment(batch_wait_timeout_iters=20, batch_wait_max_tokens_ratio=0.9, scheduler_recv_interval=3),
    )
    q = to_query(s)
    assert (q["bwi"], q["bwr"], q["recv"]) == ("20", "0.9", "3")
    assert from_query(q) == s


def test_sglang_mem_fraction_static_sizes_the_pool_and_the_launch_line_says_the_fraction_planned(capsys):
    # Llama-3.1-8B on one H100 (tests/test_engine_memory.py's worked example): SGLang's default fraction 0.834 gives
    # 416,110 tokens; at --mem-fraction-static 0.82 the pool is 0.82 x (85,029,158,912 - 375,809,638 CUDA context)
    # - 16,060,522,496 (weights) = 53,355,223,908.7 B = 407,068 tokens of 131,072 B
    assert main(["memory", "--engine", "sglang", "--mem-fraction-static", "0.82", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kv_cache_tokens"] == 407_068
    for fraction, flag in ((None, "0.834"), (0.82, "0.82")):
        r = resolve(Scenario(engine="sglang", deployment=Deployment(mem_fraction_static=fraction)))
        argv = launch_plan(r, "sglang").commands[0].argv
        assert argv[argv.index("--mem-fraction-static") + 1] == flag
