"""A benchmark's clients through a given xPyD layout, simulated request by request: C clients in a closed loop
(each sends its next request when its reply ends), all started together, the first rounds discarded as warm-up.

How the benchmarks start: aiperf `--concurrency N` issues requests as fast as N slots allow, so N requests leave at
once and each later one the moment a reply ends (ai-dynamo/aiperf docs/tutorials/request-rate-concurrency.md:
a semaphore of N slots); aiconfigurator runs it with `--warmup-request-count 2N` (ai-dynamo/aiconfigurator@095f58a5
bench_run.sh.j2); `vllm bench serve --max-concurrency N` creates every task at once behind an asyncio.Semaphore(N).

The layout: X prefill instances × DP ranks and Y decode instances × DP ranks; the router deals requests to the ranks
in turn (round robin), as sgl-router's and Dynamo's default policies do for equal ranks.
    prefill rank: a FIFO queue; an idle rank takes up to `prefill_batch` waiting prompts in one forward of
        PerfModel.prefill(b, I) (aiconfigurator's prefill_batch_size, 1 in its disaggregated runs);
    hand-over: KV transfer (the transfer engine's share of the NICs) + the fixed orchestration cost
        (planner.capacity.disagg_layout HANDOFF_FIXED_S);
    decode rank: at most B sequences, and no more than its KV pool holds at I + O tokens each (planner.memory:
        e.g. DeepSeek-V3 FP8 on TP 16 over 2 × 8 H100 holds 17 of 9,216 tokens); a request waits for a free slot
        (the decode side allocates the KV before it takes the request), then every running sequence advances one
        token per step of PerfModel.decode(n, I + O/2) with n the running count; its first token comes
        DECODE_STEPS_TO_FIRST_TOKEN steps after it joins, its last O − 1 steps after that. All sequences need the
        same steps, so a rank's sequences end in the order they joined: each rank keeps a step counter and a queue
        of the counts at which its sequences end.
TTFT = the request's path outside the steps (PerfModel.request_path_s of the prefill instance: frontend hop and the
prompt pass's eager host dispatch, as in planner.sim.serving.benchmark_clients) + prefill queue + prefill +
hand-over + decode slot wait + first-token steps + the decode engine's output-stream lag (EfficiencyProfile
.first_token_lag_steps × the request's TPOT, as planner.sim.records.latencies adds it); TPOT = the rest / (O − 1).
Deterministic and equal lengths: the clients' order is kept round after round; the first round's wave of C prompts
into the prefill queue shows in the warm-up and fades as far as the loop lets it (a loop that leaves the prefill
pool short of work keeps no queue; one that saturates it keeps C − λ × decode time requests waiting).
Left out: prefill chunking across forwards, EP ranks' lockstep between DP ranks, jitter.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass

import numpy as np

from planner.capacity.disagg_layout import (
    DECODE_STEPS_TO_FIRST_TOKEN,
    HANDOFF_FIXED_S,
    TRANSFER_ENGINES,
    PoolLayout,
    instance,
)
from planner.capacity.disagg_pools import decode_kv_limit, decode_step_s, kv_link, visible_transfer_s
from planner.core.scenario import Scenario
from planner.latency.perf_model import PerfModel
from planner.sim.serving import CLIENT_TURNAROUND_S, TRAILING_ROUNDS

WARMUP_ROUNDS = 2  # aiperf --warmup-request-count 2N: each client's first two requests
MEASURED_ROUNDS = 4  # aiperf measures 20N; the means of a deterministic loop settle within a few rounds


@dataclass(frozen=True)
class BenchmarkRun:
    concurrency: int
    ttft_s: float  # mean over the measured requests
    tpot_s: float
    rate_per_s: float  # replies per second over the measured rounds
    prefill_s: float  # one forward of one prompt
    kv_transfer_s: float
    prefill_wait_s: float  # mean queueing before the prefill
    decode_wait_s: float  # mean wait for a decode slot
    decode_batch_per_rank: float  # mean running sequences per decode rank at the measured joins
    decode_limit: int  # sequences a decode rank runs at once: min(B, what its KV pool holds)


class _DecodeRank:
    """Sequences advance one token per step together; they end in the order they joined (module note)."""

    def __init__(self, step_s, limit: int, steps: int):
        self.step_s, self.limit, self.steps = step_s, limit, steps
        self.v, self.t = 0.0, 0.0  # steps done so far, at time t
        self.running: deque = deque()  # (step count at which it ends, request)
        self.waiting: deque = deque()
        self.version = 0

    def advance(self, t: float) -> None:
        if self.running:
            self.v += (t - self.t) / self.step_s(len(self.running))
        self.t = t

    def next_end(self) -> float | None:
        if not self.running:
            return None
        return self.t + max(self.running[0][0] - self.v, 0.0) * self.step_s(len(self.running))


def simulate_benchmark(
    s: Scenario,
    concurrency: int,
    prefill: PoolLayout,
    decode: PoolLayout,
    input_tokens: int,
    output_tokens: int,
    decode_batch: int,
    prefill_batch: int = 1,
    transfer: str = "nixl",
    handoff_fixed_s: float = HANDOFF_FIXED_S,
    warmup_rounds: int = WARMUP_ROUNDS,
    measured_rounds: int = MEASURED_ROUNDS,
    burst_of: int = 0,
) -> BenchmarkRun:
    """Mean TTFT and TPOT of `concurrency` benchmark clients on the layout (module note). `burst_of` R > 0: the
    benchmark measured R rounds starting with a burst of C on an idle server (aiperf after its drained warm-up,
    InferenceMAX's benchmark_serving: planner.accuracy.bench_protocol), so the first simulated round (the clients
    started together) counts 1/R of the TTFT and TPOT means and the steady rounds (R − 1)/R."""
    rp, rd = instance(s, prefill, "prefill"), instance(s, decode, "decode")
    pm_p, pm_d = PerfModel(rp), PerfModel(rd)
    base = kv_link(rp, "nic")
    link = type(base)(base.bytes_per_s * TRANSFER_ENGINES[transfer].efficiency, base.latency_s, base.label)
    transfer_s = float(visible_transfer_s(rp, float(input_tokens), link, pm_p))
    hand_s = transfer_s + handoff_fixed_s
    context = input_tokens + output_tokens / 2
    steps = max(output_tokens - 1, 1)
    path_s = pm_p.request_path_s  # reaches the engine this long after it is sent; measured back into TTFT
    prefill_t = [0.0] + [float(pm_p.prefill(b, float(input_tokens)).total_s) for b in range(1, prefill_batch + 1)]
    step_cache: dict[int, float] = {}

    def step_s(n: int) -> float:
        if n not in step_cache:
            step_cache[n] = decode_step_s(pm_d, n, context)
        return step_cache[n]

    n_p, n_d = prefill.instances * prefill.dp, decode.instances * decode.dp
    p_queue = [deque() for _ in range(n_p)]
    p_busy = [False] * n_p
    limit = max(1, min(decode_batch, decode_kv_limit(rd, input_tokens, output_tokens)))
    d_ranks = [_DecodeRank(step_s, limit, steps) for _ in range(n_d)]
    rounds = warmup_rounds + measured_rounds + TRAILING_ROUNDS
    # per request: [client, round, sent, prefill start, decode arrival, decode join, first token, end, batch]
    reqs: list[list[float]] = []
    events: list = []
    seq = itertools.count()
    p_rr, d_rr = itertools.count(), itertools.count()

    def send(client: int, rnd: int, t: float) -> None:
        reqs.append([client, rnd, t, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        rank = next(p_rr) % n_p
        p_queue[rank].append(len(reqs) - 1)
        if not p_busy[rank]:
            start_prefill(rank, t)

    def start_prefill(rank: int, t: float) -> None:
        batch = [p_queue[rank].popleft() for _ in range(min(prefill_batch, len(p_queue[rank])))]
        for i in batch:
            reqs[i][3] = t
        p_busy[rank] = True
        heapq.heappush(events, (t + prefill_t[len(batch)], next(seq), "prefill_done", rank, tuple(batch)))

    def join(rank: int, i: int, t: float) -> None:
        d = d_ranks[rank]
        d.running.append((d.v + DECODE_STEPS_TO_FIRST_TOKEN + steps, i))
        n = len(d.running)
        reqs[i][5], reqs[i][6], reqs[i][8] = t, t + DECODE_STEPS_TO_FIRST_TOKEN * step_s(n), n

    def reschedule(rank: int) -> None:
        d = d_ranks[rank]
        d.version += 1
        end = d.next_end()
        if end is not None:
            heapq.heappush(events, (end, next(seq), "decode_done", rank, d.version))

    for c in range(concurrency):
        send(c, 0, path_s)
    while events:
        t, _, kind, rank, data = heapq.heappop(events)
        if kind == "prefill_done":
            p_busy[rank] = False
            for i in data:
                heapq.heappush(events, (t + hand_s, next(seq), "arrive", next(d_rr) % n_d, i))
            if p_queue[rank]:
                start_prefill(rank, t)
        elif kind == "arrive":
            d = d_ranks[rank]
            reqs[data][4] = t
            d.advance(t)
            if len(d.running) < d.limit:
                join(rank, data, t)
            else:
                d.waiting.append(data)
            reschedule(rank)
        elif kind == "decode_done":
            d = d_ranks[rank]
            if data != d.version:
                continue
            d.advance(t)
            _, i = d.running.popleft()
            reqs[i][7] = t
            if d.waiting:
                join(rank, d.waiting.popleft(), t)
            reschedule(rank)
            client, rnd = int(reqs[i][0]), int(reqs[i][1])
            if rnd + 1 < rounds:
                send(client, rnd + 1, t + CLIENT_TURNAROUND_S + path_s)
    lag = pm_d.eff.first_token_lag_steps

    def means(rows: np.ndarray) -> tuple[float, float]:
        tp = (rows[:, 7] - rows[:, 6]) / max(output_tokens - 1, 1)
        return float((rows[:, 6] - rows[:, 2] + path_s + lag * tp).mean()), float(tp.mean())

    arr = np.array([r for r in reqs if warmup_rounds <= r[1] < warmup_rounds + measured_rounds])
    ttft_s, tpot_s = means(arr)
    if burst_of > 0:
        first = means(np.array([r for r in reqs if r[1] == 0]))
        ttft_s, tpot_s = ((first[k] + (burst_of - 1) * v) / burst_of for k, v in enumerate((ttft_s, tpot_s)))
    span = arr[:, 7].max() - arr[:, 7].min()  # between the first and the last measured reply
    return BenchmarkRun(
        concurrency=concurrency,
        ttft_s=ttft_s,
        tpot_s=tpot_s,
        rate_per_s=(len(arr) - 1) / span if span > 0 else 0.0,
        prefill_s=prefill_t[1],
        kv_transfer_s=transfer_s,
        prefill_wait_s=float((arr[:, 3] - arr[:, 2]).mean()),
        decode_wait_s=float((arr[:, 5] - arr[:, 4]).mean()),
        decode_batch_per_rank=float(arr[:, 8].mean()),
        decode_limit=limit,
    )
