"""Benchmark clients as a workload: how `vllm bench serve`, SGLang's `bench_serving`, genai-perf, aiperf and GuideLLM
run N concurrent streams, so that `simulate --users N --client NAME` is the run the user would measure.

Every one of them, at a client concurrency N, keeps N requests in flight and sends the next request the moment a
reply ends (no think time); they differ in when the N streams start, whether a warm-up runs first and is left out of
the means, how many requests are sent, and how prompt and reply lengths are drawn around the nominal ones
(docs/research/benchmark_clients.md cites each client's source at a commit). All five start their N streams together
on an idle server, so the first round is one burst of N prompts; with equal lengths the requests that started
together finish together and the next round is again a wave, unless the scheduler (a chunked prompt, a token budget
that takes a few prompts a step) or the lengths spread them. The waves under load come out of simulating that:
there is no fitted share of lockstep.

What the client measures is what the summary reports: mean TTFT (send to first token, the frontend's hop
included) and mean TPOT ((e2e − TTFT) / (output tokens − 1) per request, averaged over requests) over the measured
requests, the warm-up left out. Left out: GuideLLM's own TPOT ((last token − start) / output tokens, TTFT included,
weighted by tokens: the summary keeps the request mean of (e2e − TTFT) / (output − 1)), per-token ITL means,
replies that end early at an EOS (vllm-bench and genai-perf/aiperf do not force the length by default: give the
measured output length), non-streaming runs (genai-perf and aiperf stream only when asked), HTTP connection set-up,
and ramped-up concurrency (GuideLLM --rampup, aiperf --concurrency-ramp-duration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from planner.core.errors import InputError
from planner.traffic.generators import LengthDist, closed_loop
from planner.traffic.workload import Workload


@dataclass(frozen=True)
class BenchmarkClient:
    """One benchmark tool's closed loop at concurrency N (module note); `source` cites the behaviour's code."""

    id: str
    tool: str  # the command a user runs
    concurrency_flag: str  # its flag for N
    warmup_requests: int  # requests sent first and left out of the means, by default
    warmup_flag: str
    range_rule: str  # how a range ratio r spreads a nominal length L: "symmetric" [L(1-r), L(1+r)], "below" [rL, L]
    default_range_ratio: float  # the client's default r (0 with "symmetric", 1 with "below": every length L)
    range_flag: str
    default_num_requests: int  # requests sent (warm-up excluded) when the user gives none
    source: str
    per_stream_requests: int = 0  # the default count is max(default_num_requests, this × N) (genai-perf, aiperf)
    prompt_pool: int = 0  # distinct prompts its synthetic dataset cycles through (0: a new prompt every request)

    def num_requests(self, users: int) -> int:
        """Requests the client sends by default to N streams."""
        return max(self.default_num_requests, self.per_stream_requests * users)

    def length_spec(self, tokens: int, range_ratio: float | None = None) -> str:
        """The planner.traffic length distribution of a request of nominal length `tokens` under range ratio r."""
        r = self.default_range_ratio if range_ratio is None else range_ratio
        if self.range_rule == "symmetric":  # vLLM: integers in [floor(L(1 - r)), ceil(L(1 + r))]
            lo, hi = max(1, math.floor(tokens * (1 - r))), max(1, math.ceil(tokens * (1 + r)))
        else:  # SGLang: uniform in [max(floor(r L), 1), L], so its default r = 0 draws from 1 to L
            lo, hi = max(1, int(tokens * r)), tokens
        return f"fixed:{tokens}" if lo >= hi else f"uniform:{lo},{hi}"

    def check_range_ratio(self, r: float, flag: str = "--random-range-ratio") -> None:
        """The client's own validation of its range ratio: [0, 1) symmetric, (0, 1] below."""
        ok = math.isfinite(r) and (0 <= r < 1 if self.range_rule == "symmetric" else 0 <= r <= 1)
        if not ok:
            bounds = "0 <= r < 1" if self.range_rule == "symmetric" else "0 <= r <= 1"
            raise InputError(flag, f"{self.tool} takes a range ratio with {bounds}, got {r:g}")


# docs/research/benchmark_clients.md: each client's behaviour with its source at a release / commit
VLLM_BENCH = BenchmarkClient(
    id="vllm-bench",
    tool="vllm bench serve",
    concurrency_flag="--max-concurrency",
    warmup_requests=0,
    warmup_flag="--num-warmups",
    range_rule="symmetric",
    default_range_ratio=0.0,
    range_flag="--random-range-ratio",
    default_num_requests=1000,
    source="vllm 0.34.0 (62d4bc3c7) vllm/benchmarks/serve.py: every request task created at once behind "
    "asyncio.Semaphore(max_concurrency); datasets.py RandomDataset: lengths in [floor(L(1-r)), ceil(L(1+r))]",
)
SGLANG_BENCH = BenchmarkClient(
    id="sglang-bench",
    tool="python -m sglang.bench_serving",
    concurrency_flag="--max-concurrency",
    warmup_requests=1,
    warmup_flag="--warmup-requests",
    range_rule="below",
    default_range_ratio=0.0,
    range_flag="--random-range-ratio",
    default_num_requests=1000,
    source="sglang 0.5.23 python/sglang/bench_serving.py: tasks behind a semaphore, one warm-up request waited on "
    "first; sample_random_requests: lengths in [max(floor(rL), 1), L] (default r = 0), ignore_eos on",
)
GENAI_PERF = BenchmarkClient(
    id="genai-perf",
    tool="genai-perf profile",
    concurrency_flag="--concurrency",
    warmup_requests=0,
    warmup_flag="--warmup-request-count",
    range_rule="symmetric",
    default_range_ratio=0.0,
    range_flag="--synthetic-input-tokens-stddev",
    default_num_requests=10,
    per_stream_requests=2,
    prompt_pool=100,
    source="triton-inference-server/perf_analyzer@263c5f6e0c7a genai-perf: N perf_analyzer threads started "
    "together, max(10, 2N) requests, 100 dataset entries reused round-robin, stddev 0",
)
AIPERF = BenchmarkClient(
    id="aiperf",
    tool="aiperf profile",
    concurrency_flag="--concurrency",
    warmup_requests=0,
    warmup_flag="--warmup-request-count",
    range_rule="symmetric",
    default_range_ratio=0.0,
    range_flag="--isl-stddev",
    default_num_requests=10,
    per_stream_requests=2,
    prompt_pool=100,
    source="ai-dynamo/aiperf@db4f6397d11e aiperf/timing: a burst of N behind a semaphore, the warm-up a phase of "
    "its own; 100 conversations drawn with replacement; 0.13.0: max(10, 2N) requests",
)
GUIDELLM = BenchmarkClient(
    id="guidellm",
    tool="guidellm benchmark --rate-type concurrent",
    concurrency_flag="--rate",
    warmup_requests=0,
    warmup_flag="--warmup",
    range_rule="symmetric",
    default_range_ratio=0.0,
    range_flag="--data prompt_tokens_stdev",
    default_num_requests=1000,
    source="vllm-project/guidellm@e82b62ae3403 (v0.6.1): N streams started together (--rampup 0), every prompt "
    "unique, max_tokens and ignore_eos set; --max-requests has no default (1,000 assumed here)",
)
CLIENTS = {c.id: c for c in (VLLM_BENCH, SGLANG_BENCH, GENAI_PERF, AIPERF, GUIDELLM)}
DEFAULT_CLIENT = VLLM_BENCH.id


def get_client(name: str, field: str = "client") -> BenchmarkClient:
    """The client named `name` (CLIENTS), or a message naming the field and the choices."""
    client = CLIENTS.get(str(name).strip().lower())
    if client is None:
        raise InputError(field, f"unknown benchmark client {name!r}; use one of {', '.join(CLIENTS)}")
    return client


def client_loop(
    client: BenchmarkClient,
    users: int,
    num_requests: int,
    turnaround_s: float,
    prompt: str | LengthDist,
    output: str | LengthDist,
    seed: int = 0,
    warmup_requests: int | None = None,
) -> Workload:
    """`users` streams of `client` (module note): warm-up requests first (the client's default when None), then
    `num_requests` measured, every stream's first request at t=0 and each next one `turnaround_s` after its reply.
    Request j belongs to stream j mod N; the first `warmup_requests` are marked (extra["warmup_requests"]) and left
    out of the summary's latencies (planner.sim.records.latencies)."""
    warmup = client.warmup_requests if warmup_requests is None else int(warmup_requests)
    if warmup < 0:
        raise InputError("warmup_requests", f"must be 0 or more, got {warmup}")
    wl = closed_loop(users, warmup + num_requests, turnaround_s, prompt, output, "fixed", seed)
    warm = f", {warmup:,} warm-up requests left out" if warmup else ""
    source = (
        f"{client.tool} {client.concurrency_flag} {users}: {num_requests:,} requests started together{warm}; "
        f"prompt {as_spec(prompt)}; output {as_spec(output)}"
    )
    return replace(wl, source=source, extra={**wl.extra, "warmup_requests": warmup, "client": client.id})


def as_spec(d: str | LengthDist) -> str:
    return d.spec if isinstance(d, LengthDist) else str(d)


def measured_mask(num_requests: int, warmup_requests: int) -> np.ndarray:
    """Per request id: whether the client counts it (the warm-up requests come first)."""
    return np.arange(num_requests) >= warmup_requests
