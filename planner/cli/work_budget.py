"""How much simulating a command may do: a bound on simulated tokens, checked before the run, naming the flag.

The simulator's cost grows with the decode steps it runs, which is about the output tokens it generates (a
request's tokens come one step at a time; steps are shared by the batch, so a busy replica runs fewer steps per
token) plus, with --long-prefill-token-threshold, one step per chunk of each prompt. Measured on this project's
CI machine (2 shared cores, load average ~10): 20,000 requests of 1,000 + 200 tokens at 5 req/s (4 M output
tokens) in 10 s; 200 requests of 20,000 output tokens in 6.5 s; 2,000 prompts chunked 1 token a step in 9.7 s.
MAX_SIMULATED_TOKENS keeps a run near a minute on one core, and `simulate --num-requests 1000000 --rate 5`
(200 M tokens, which ran for many minutes) is refused at once.
"""

from __future__ import annotations

import numpy as np

from planner.core.errors import InputError
from planner.traffic.generators import LengthDist
from planner.traffic.workload import Workload

MAX_SIMULATED_TOKENS = 50_000_000  # output tokens + prompt chunks, per run (a sweep or search: per probe)


def simulated_tokens(prompt_tokens: np.ndarray, output_tokens: np.ndarray, long_prefill_threshold: int = 0) -> int:
    """Output tokens plus, when prompts are chunked per step, the prompt chunks: the run's step work."""
    work = int(np.sum(output_tokens, dtype=np.float64))
    if long_prefill_threshold > 0:
        work += int(np.sum(np.ceil(prompt_tokens / long_prefill_threshold), dtype=np.float64))
    return work


def check_workload(wl: Workload, long_prefill_threshold: int = 0, output_flag: str = "--output-tokens") -> None:
    """Refuse a workload above MAX_SIMULATED_TOKENS, naming the flag that made it so."""
    chunks = simulated_tokens(wl.prompt_tokens, np.zeros(1), long_prefill_threshold)
    work = simulated_tokens(wl.prompt_tokens, wl.output_tokens, long_prefill_threshold)
    if work <= MAX_SIMULATED_TOKENS:
        return
    if chunks > work / 2:
        flag, advice = "--long-prefill-token-threshold", "a larger threshold (or 0: off) or fewer requests"
    elif wl.num_requests > 1 and float(np.mean(wl.output_tokens)) <= 10_000:
        flag, advice = "--num-requests", "fewer requests"
    else:
        flag, advice = output_flag, "shorter outputs"
    raise InputError(
        flag,
        f"this run would simulate {work:,} tokens ({wl.num_requests:,} requests, {int(np.sum(wl.output_tokens)):,} "
        f"output tokens{f', {chunks:,} prompt chunks' if chunks else ''}); at most {MAX_SIMULATED_TOKENS:,} per run "
        f"(about a minute on one core): use {advice}",
    )


def check_probe(num_requests: int, output: LengthDist, seed: int = 0) -> None:
    """A search's probe: `num_requests` requests with `output` lengths (their mean from 4,096 samples)."""
    mean_output = float(np.mean(output.sample(4096, np.random.default_rng(seed), role="output")))
    work = num_requests * mean_output
    if work > MAX_SIMULATED_TOKENS:
        flag = "--num-requests" if mean_output <= 10_000 else "--output-tokens"
        raise InputError(
            flag,
            f"each probe would simulate about {work:,.0f} output tokens ({num_requests:,} requests × "
            f"{mean_output:,.0f}); at most {MAX_SIMULATED_TOKENS:,} per probe: use fewer requests or shorter outputs",
        )
