"""A benchmark client that draws its prompts from a small pool (aiperf's 100 synthetic conversations): the share of
measured prompts an engine's prefix cache serves, the closed loop that repeats them, and what a repeat saves."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from planner.accuracy.bench_protocol import AIPERF, AIPERF_POOLED
from planner.accuracy.serving_points import ServingPoint, simulate_flags
from planner.cli import main
from planner.cli.validate_cmd import predict_point
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel
from planner.sim.records import latencies
from planner.sim.serving import Replica, run_serving
from planner.sim.settings import ServerSettings
from planner.traffic.generators import closed_loop, pooled_prompts, repeated_prompts


def test_reuse_share_by_hand():
    # 4 clients, a drained warm-up of 8 requests, then 80 measured: request j repeats an earlier prompt with
    # probability 1 − 0.99^j; mean over j = 8..87 = 1 − (0.99^8 − 0.99^88) / (0.01 × 80)
    # = 1 − (0.922745 − 0.412950) / 0.8 = 0.362756
    assert AIPERF_POOLED.reuse_share(4, cached_prompts=1e9) == pytest.approx(0.362756, abs=1e-6)
    # an LRU cache holding 20 of the 100 prompts serves at most 20% of uniform draws
    assert AIPERF_POOLED.reuse_share(64, cached_prompts=20) == pytest.approx(0.20)
    # 64 clients: the warm-up alone (128 draws) has seen 72% of the pool; over the window nearly all
    assert AIPERF_POOLED.reuse_share(64, cached_prompts=1e9) > 0.95
    assert AIPERF.reuse_share(64, cached_prompts=1e9) == 0.0  # no pool: every prompt new
    assert AIPERF_POOLED.reuse_share(4, 1e9) < AIPERF_POOLED.reuse_share(8, 1e9)  # more draws, more repeats


def test_repeated_prompts_follow_the_users_previous_request():
    wl = closed_loop(3, 12, 0.0, "fixed:100", "fixed:10", "fixed", 0)
    every = repeated_prompts(wl, 3, 1.0, 16)
    # request j >= 3 sends the prompt of j − 3 (the same user's previous one), so every user keeps its first prompt
    for j in range(3, 12):
        assert list(every.prefix_ids[j]) == list(every.prefix_ids[j % 3])
    assert len(every.prefix_ids[0]) == 100 // 16  # full 16-token blocks only
    none = repeated_prompts(wl, 3, 0.0, 16)
    firsts = {int(ids[0]) for ids in none.prefix_ids}
    assert len(firsts) == 12  # a prompt of its own each
    with pytest.raises(InputError, match="share"):
        repeated_prompts(wl, 3, 1.5, 16)


def _hand_row(engine: str, protocol) -> ServingPoint:
    return ServingPoint(
        id="hand", engine=engine, version="", model="meta-llama/Llama-3.1-8B", gpu="h200_sxm",
        preset="meta-llama/Llama-3.1-8B", gpu_id="H200", weights="bf16", tp=1, pp=1, dp=1, expert_parallel=False,
        isl=2000, osl=100, concurrency=16, ttft_ms=None, tpot_ms=None, bench_rules=True, protocol=protocol,
    )  # fmt: skip


def test_a_repeat_skips_its_cached_blocks_and_saves_prefill():
    # vLLM, Llama-3.1-8B on one H200, 16 users of 2,000 / 100 tokens, every later prompt a repeat: a repeat finds
    # (2,000 − 1) // 16 = 124 blocks cached (vLLM recomputes at least the last token) = 1,984 tokens skipped
    r = resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H200", deployment=Deployment(num_gpus=1)))
    wl = closed_loop(16, 48, 0.0, "fixed:2000", "fixed:100", "fixed", 0)
    rep = Replica(r)
    runs = {share: run_serving(rep, repeated_prompts(wl, 16, share, 16)) for share in (0.0, 1.0)}
    hits = runs[1.0].requests.prefix_hit_tokens
    assert (hits[:16] == 0).all() and (hits[16:] == 1984).all()
    assert runs[0.0].requests.prefix_hit_tokens.sum() == 0
    ttft = {s: np.mean(latencies(res)["ttft_s"][16:]) for s, res in runs.items()}
    assert ttft[1.0] < 0.5 * ttft[0.0]  # a repeat prefills 16 tokens instead of 2,000


def _flag(flags: list[str], name: str) -> str:
    return flags[flags.index(name) + 1]


def test_which_rows_repeat_their_prompts():
    # a row is predicted through `simulate` with its client's flags (serving_points.simulate_flags): aiperf drawing
    # from its 100 prompts where the launch keeps the prefix cache on (vLLM, SGLang); aiconfigurator's TensorRT-LLM
    # templates launch with enable_block_reuse: false, so no repeat is served from cache there: every prompt new
    for engine, pool in (("vllm", "100"), ("sglang", "100"), ("tensorrt-llm", "0")):
        flags = simulate_flags(_hand_row(engine, AIPERF_POOLED))
        assert _flag(flags, "--prompt-pool") == pool, engine
        assert (_flag(flags, "--client"), _flag(flags, "--users")) == ("aiperf", "16")
        # 20 rounds of 16 measured after aiperf's --warmup-request-count 2N
        assert (_flag(flags, "--num-requests"), _flag(flags, "--warmup-requests")) == ("320", "32")
    assert "--no-enable-prefix-caching" in simulate_flags(_hand_row("tensorrt-llm", AIPERF_POOLED))
    assert _flag(simulate_flags(_hand_row("vllm", AIPERF)), "--prompt-pool") == "0"  # no pool: every prompt new


def test_pooled_prompts_lower_a_rows_predicted_ttft():
    pooled, fresh = (predict_point(_hand_row("vllm", proto)) for proto in (AIPERF_POOLED, AIPERF))
    assert pooled.ttft_ms < fresh.ttft_ms
    assert pooled.tpot_ms < fresh.tpot_ms  # fewer prompt chunks share the decode steps
    assert pooled.num_requests == fresh.num_requests == 32 + 320  # warm-up 2N, then 20N measured
    no_pool = dataclasses.replace(AIPERF_POOLED, prompt_pool=0)
    assert simulate_flags(_hand_row("vllm", no_pool)) == simulate_flags(_hand_row("vllm", AIPERF))  # the same run


POOLED_RUN = (
    "simulate --model meta-llama/Llama-3.1-8B --gpu H200 --users 16 --think-time 0 --input-tokens 2000 "
    "--output-tokens 100 --num-requests 400"
)


def _json(command: str, capsys) -> dict:
    assert main([*command.split(), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_pooled_prompts_draw_with_replacement_by_hand():
    wl = closed_loop(4, 40, 0.0, "uniform:100,200", "fixed:10", "fixed", 0)
    pooled = pooled_prompts(wl, 5, 16, seed=0)
    drawn = np.random.default_rng([0, 2]).integers(0, 5, size=40)
    first = {}
    for j, k in enumerate(drawn.tolist()):
        first.setdefault(k, j)
    for j, k in enumerate(drawn.tolist()):  # a repeat re-sends the first drawing's prompt, ids and length
        assert pooled.prompt_tokens[j] == wl.prompt_tokens[first[k]]
        assert list(pooled.prefix_ids[j]) == list(pooled.prefix_ids[first[k]])
    assert len({int(ids[0]) for ids in pooled.prefix_ids}) == len(first) <= 5


def test_simulate_prompt_pool_hit_rate_by_hand(capsys):
    # 400 draws from 100 prompts: every draw after a prompt's first is a repeat the pool still holds (100 prompts of
    # 2,000 tokens are 200,000 of the pool's ~890,000), and vLLM serves (2,000 − 1) // 16 × 16 = 1,984 of its tokens
    distinct = len(set(np.random.default_rng([0, 2]).integers(0, 100, size=400).tolist()))
    pooled, fresh = _json(POOLED_RUN + " --prompt-pool 100", capsys), _json(POOLED_RUN, capsys)
    # a repeat admitted while its first drawing is still being prefilled finds nothing published yet and misses: at
    # most the 16 requests in flight at a time; 2 of the 304 repeats here
    hits = pooled["prefix_hit_rate"] * 400 * 2000 / 1984
    assert 400 - distinct - 16 <= round(hits) <= 400 - distinct
    assert fresh["prefix_hit_rate"] == 0.0
    # a repeat prefills 16 tokens, not 2,000: its TTFT is shorter by most of one prompt's prefill (47 ms of 48)
    pm = PerfModel(resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H200")))
    saved = pm.prefill(1, 2000).total_s - pm.prefill(1, 16, 1984).total_s
    assert fresh["ttft_s"]["mean"] - pooled["ttft_s"]["mean"] > 0.7 * saved
    assert pooled["throughput_tokens_per_s"] > fresh["throughput_tokens_per_s"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (" --prompt-pool -1", "--prompt-pool: must be 0 or more"),
        (" --prompt-pool 100 --turns 2 --think-time 1", "--prompt-pool: applies to generated"),
    ],
)
def test_prompt_pool_bad_input_names_the_flag(extra, message, capsys):
    assert main([*(POOLED_RUN + extra).split()]) != 0
    assert message in capsys.readouterr().err


def test_prompt_pool_must_be_a_whole_number(capsys):
    with pytest.raises(SystemExit):  # argparse's own type check, naming the flag
        main([*(POOLED_RUN + " --prompt-pool 1.5").split()])
    assert "--prompt-pool" in capsys.readouterr().err


def _traffic_args(flags: str):
    import argparse

    from planner.cli.traffic_args import add_traffic_args, traffic_from_args

    p = argparse.ArgumentParser()
    add_traffic_args(p)
    return traffic_from_args(p.parse_args(flags.split()))


def test_capacity_traffic_takes_a_prompt_pool():
    from planner.capacity.probe_workload import base_workload, workload_at

    t = _traffic_args("--input-tokens 2000 --output-tokens 100 --prompt-pool 10 --num-requests 200")
    assert (t.profile, t.prompt_pool) == ("custom", 10)
    wl = workload_at(t, 4.0)
    drawn = np.random.default_rng([0, 2]).integers(0, 10, size=200)  # pooled_prompts' draw, seed 0
    first_ids = [int(ids[0]) for ids in wl.prefix_ids]
    assert len(set(first_ids)) == len(set(drawn.tolist())) <= 10  # one id range per distinct prompt
    assert all(len(ids) == 2000 // 16 for ids in wl.prefix_ids)  # whole 16-token blocks
    assert np.allclose(wl.arrival_s, base_workload(t).arrival_s / 4.0)  # the same requests at another rate
    # the capacity probes' replica (planner.capacity.replicas): the deployment's prefix caching, on by default
    r = resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM"))
    res = run_serving(Replica(r, ServerSettings.of(r, seed=0)), wl)
    repeats = 200 - len(set(drawn.tolist()))
    served = int(res.requests.prefix_hit_tokens.sum())
    # every repeat serves (2,000 − 1) // 16 × 16 = 1,984 tokens, but one admitted while its first drawing is still
    # prefilling finds nothing published yet: at 4 requests/s and a ~0.1 s prefill, at most a few
    assert (repeats - 5) * 1984 <= served <= repeats * 1984


@pytest.mark.parametrize(
    "flags, message",
    [
        ("--prompt-pool 0", "--prompt-pool: must be a whole number > 0"),
        ("--profile chat --prompt-pool 5", "--prompt-pool: applies to the custom profile"),
        ("--input-tokens 100 --turns 2 --think-time 1 --prompt-pool 5", "--prompt-pool: applies to the custom"),
    ],
)
def test_capacity_prompt_pool_bad_input_names_the_flag(flags, message):
    with pytest.raises(InputError) as err:
        _traffic_args(flags)
    assert message in str(err.value)


def test_the_capacity_estimate_counts_a_pools_repeats_as_cached():
    from planner.capacity.load_sweep import estimate_capacity_rps
    from planner.capacity.probe_workload import repeated_prompt_share

    t = _traffic_args("--input-tokens 2000 --output-tokens 100 --prompt-pool 20 --num-requests 1000")
    # by hand: 1,000 draws from 20 prompts, every draw after a prompt's first repeats it; a repeat's 2,000 tokens are
    # 125 whole 16-token blocks, all of them held by the cache
    distinct = len(set(np.random.default_rng([0, 2]).integers(0, 20, size=1000).tolist()))
    assert repeated_prompt_share(t) == pytest.approx((1000 - distinct) / 1000)
    assert repeated_prompt_share(t.model_copy(update={"prompt_pool": 0})) == 0.0
    r = resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM"))
    rep = Replica(r, ServerSettings.of(r, seed=0))
    fresh = estimate_capacity_rps(rep, 2000, 100)
    pooled = estimate_capacity_rps(rep, 2000, 100, repeated_prompt_share(t))
    assert pooled > 2.5 * fresh  # the 2,000-token prefill was most of each request's cost (14.6 -> 43.1 req/s)
    off = Replica(r, ServerSettings.of(r, seed=0, prefix_caching=False))
    assert estimate_capacity_rps(off, 2000, 100, 0.98) == estimate_capacity_rps(off, 2000, 100)  # nothing cached
