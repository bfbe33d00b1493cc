"""Traffic that comes back: sessions of turns that re-send their history, behind a shared system prompt.

A session is one conversation: a system prompt of S tokens shared by every session, then turns. Turn k sends
the whole history (the system prompt, every earlier user message and answer) plus its new user message u_k, and
gets an answer of a_k tokens:

    prompt_k = S + sum_{m<k} (u_m + a_m) + u_k

so turn k's prompt is turn k-1's prompt + answer + u_k. The next turn is sent a think time after the answer is
out (a person reading and typing, or an agent's tool call). An agent loop is the same shape with a long first
message (the task and its context), short later messages (tool results), short answers and short think times.

Prefix ids (the simulator's prefix cache, planner/sim/block_pool.py, and the prefix-aware router see them):
the session's token stream (system prompt, u_1, a_1, u_2, ...) is cut into blocks of `prefix_block_tokens`;
blocks wholly inside the system prompt get ids shared by every session, the others ids of their session. A
turn's ids run over its prompt AND its answer (`prefix_covers_output`): the simulator publishes the answer's
full blocks when the turn finishes, as vLLM caches every full block it computed, so the next turn hits its
whole history on the replica that served the last turn, unless evicted.

Open loop: sessions start as a Poisson process at `rate_per_s`; closed loop: `num_users` users, each running
sessions back to back. Both are closed-loop Workloads to the simulator (a session's or user's next turn exists
once the last answer is out).
"""

from __future__ import annotations

import math

import numpy as np

from planner.core.errors import InputError
from planner.traffic.generators import MAX_REQUESTS, MAX_TOKENS, LengthDist, as_length_dist
from planner.traffic.workload import Workload

PREFIX_BLOCK_TOKENS = 16  # vLLM's default KV block size: a prefix id per KV block
SESSION_ID_STRIDE = 1 << 24  # ids of session s: (s + 1) x stride + block index (blocks per session < 16.7 M)


def session_prefix_ids(
    session: int, stream_tokens: int, system_prompt_tokens: int, block_tokens: int = PREFIX_BLOCK_TOKENS
) -> np.ndarray:
    """Ids of the full blocks of a session's first `stream_tokens` tokens: shared inside the system prompt."""
    blocks = np.arange(stream_tokens // block_tokens, dtype=np.int64)
    shared = (blocks + 1) * block_tokens <= system_prompt_tokens
    return np.where(shared, blocks, (session + 1) * SESSION_ID_STRIDE + blocks)


def sessions(
    num_requests: int,
    turns: int,
    system_prompt_tokens: int,
    user: str | LengthDist,
    output: str | LengthDist,
    think_time_s: float,
    rate_per_s: float | None = None,
    num_users: int | None = None,
    first_user: str | LengthDist | None = None,
    prefix_block_tokens: int = PREFIX_BLOCK_TOKENS,
    seed: int = 0,
) -> Workload:
    """`num_requests` turns (ceil(num_requests / turns) sessions, the last cut short); open loop at
    `rate_per_s` session starts per second, or closed loop with `num_users`; exponential think times."""
    _check(num_requests, turns, system_prompt_tokens, think_time_s, rate_per_s, num_users, prefix_block_tokens)
    user_d, output_d = as_length_dist(user, "input"), as_length_dist(output, "output")
    first_d = as_length_dist(first_user, "first_input") if first_user is not None else user_d
    rng = np.random.default_rng(seed)
    n = num_requests
    session = np.arange(n, dtype=np.int64) // turns
    turn = np.arange(n, dtype=np.int64) % turns
    new_tokens = np.where(turn == 0, first_d.sample(n, rng, "prompt"), user_d.sample(n, rng, "prompt"))
    output_tokens = output_d.sample(n, rng, "output")
    think_s = rng.exponential(think_time_s, size=n) if think_time_s > 0 else np.zeros(n)
    # history before turn k = S + sum over earlier turns of the session of (u + a)
    sent = new_tokens + output_tokens
    cum = np.cumsum(sent) - sent  # over all requests, then minus the session's start
    start_of_session = cum[session * turns]
    prompt_tokens = system_prompt_tokens + (cum - start_of_session) + new_tokens
    prefix_ids = tuple(
        session_prefix_ids(int(s), int(p + a), system_prompt_tokens, prefix_block_tokens)
        for s, p, a in zip(session, prompt_tokens, output_tokens)
    )
    num_sessions = int(session[-1]) + 1
    arrival_s = np.full(n, np.nan)
    if rate_per_s is not None:
        user_id = session
        arrival_s[turn == 0] = np.cumsum(rng.exponential(1.0 / rate_per_s, size=num_sessions))
        loop = f"open loop, sessions start at {rate_per_s:g}/s"
    else:
        user_id = session % num_users
        first = np.flatnonzero((turn == 0) & (session < num_users))
        arrival_s[first] = think_s[first]  # staggered start, as generators.closed_loop
        loop = f"closed loop, {num_users} users running sessions back to back"
    src = (
        f"sessions of {turns} turns, {loop}; system prompt {system_prompt_tokens} shared tokens; "
        f"first message {first_d.spec}, later messages {user_d.spec}; answer {output_d.spec}; "
        f"think {think_time_s:g} s"
    )
    return Workload(
        arrival_s,
        prompt_tokens.astype(np.int64),
        output_tokens,
        prefix_ids,
        prefix_block_tokens,
        user_id=user_id,
        think_s=think_s,
        seed=seed,
        source=src,
        prefix_covers_output=True,
    )


def _check(num_requests, turns, system_prompt_tokens, think_time_s, rate_per_s, num_users, block_tokens) -> None:
    if not (isinstance(num_requests, (int, np.integer)) and 1 <= num_requests <= MAX_REQUESTS):
        raise InputError("num_requests", f"must be a whole number from 1 to {MAX_REQUESTS:,}")
    if not (isinstance(turns, (int, np.integer)) and 1 <= turns <= 10_000):
        raise InputError("turns", f"must be a whole number from 1 to 10,000, got {turns!r}")
    if not (isinstance(system_prompt_tokens, (int, np.integer)) and 0 <= system_prompt_tokens <= MAX_TOKENS):
        raise InputError("system_prompt_tokens", f"must be a whole number from 0 to {MAX_TOKENS:,}")
    if not (math.isfinite(think_time_s) and think_time_s >= 0):
        raise InputError("think_time_s", "must be a number >= 0")
    if (rate_per_s is None) == (num_users is None):
        raise InputError("rate_per_s", "give either a session start rate (open loop) or a number of users")
    if rate_per_s is not None and not (math.isfinite(rate_per_s) and rate_per_s > 0):
        raise InputError("rate_per_s", f"must be greater than 0, got {rate_per_s!r}")
    if num_users is not None and not (isinstance(num_users, (int, np.integer)) and num_users >= 1):
        raise InputError("num_users", f"must be a whole number >= 1, got {num_users!r}")
    if not (isinstance(block_tokens, (int, np.integer)) and block_tokens >= 1):
        raise InputError("prefix_block_tokens", "must be >= 1")
