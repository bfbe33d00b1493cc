"""Traffic for the simulator: a Workload of numpy arrays, arrival processes and length distributions.

Open loop (arrivals ignore the server): Poisson, gamma with a burstiness CV (CV 1 = Poisson, > 1 = burstier),
constant spacing. Closed loop: N users, each sends a request, waits for the reply, thinks, sends the next; the
simulator fills in those arrival times as replies finish. Lengths come from a SPEC string:

    fixed:512 | uniform:100,2000 | lognormal:mean=1000,sigma=0.8[,max=8192] | empirical:PATH_OR_NAME

`empirical` resamples (with replacement) the matching column of a trace (prompt or output); NAME is one of the
shared traces (azure_conv, azure_code, mooncake). Every generator takes an explicit seed; nothing uses a global RNG.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from planner.core.errors import InputError
from planner.traffic.workload import Workload

ARRIVAL_PROCESSES = ("poisson", "gamma", "constant")


@dataclass(frozen=True)
class LengthDist:
    """A token-length distribution parsed from a SPEC string (see module note)."""

    kind: str
    params: tuple[float, ...] = ()
    path: str = ""
    spec: str = ""

    @classmethod
    def parse(cls, spec: str, field_name: str = "length") -> LengthDist:
        kind, _, rest = str(spec).strip().partition(":")
        kind = kind.strip().lower()
        parser = _PARSERS.get(kind)
        if parser is None:
            raise InputError(field_name, f"unknown length distribution {kind!r}; use one of {', '.join(_PARSERS)}")
        return parser(rest.strip(), field_name, str(spec).strip())

    def sample(self, n: int, rng: np.random.Generator, role: str = "prompt") -> np.ndarray:
        """n lengths (int64, >= 1). `role` picks the trace column for `empirical` (prompt or output)."""
        if self.kind == "fixed":
            return np.full(n, int(self.params[0]), dtype=np.int64)
        if self.kind == "uniform":
            lo, hi = int(self.params[0]), int(self.params[1])
            return rng.integers(lo, hi + 1, size=n, dtype=np.int64)
        if self.kind == "lognormal":
            mean, sigma, cap = self.params
            mu = math.log(mean) - sigma * sigma / 2  # E[exp(N(mu, s^2))] = exp(mu + s^2/2) = mean
            vals = np.rint(rng.lognormal(mu, sigma, size=n)).astype(np.int64)
            return np.clip(vals, 1, int(cap) if cap > 0 else None)
        pool = _empirical_pool(self.path, role)
        return pool[rng.integers(0, len(pool), size=n)]


def _parse_fixed(rest: str, field_name: str, spec: str) -> LengthDist:
    value = _parse_int(rest, field_name, "fixed:N needs a whole number of tokens, e.g. fixed:512")
    return LengthDist("fixed", (value,), spec=spec)


def _parse_uniform(rest: str, field_name: str, spec: str) -> LengthDist:
    parts = rest.split(",")
    hint = "uniform:LO,HI needs two whole numbers, e.g. uniform:100,2000"
    if len(parts) != 2:
        raise InputError(field_name, hint)
    lo, hi = (_parse_int(p, field_name, hint) for p in parts)
    if hi < lo:
        raise InputError(field_name, f"uniform:{lo},{hi} has HI below LO")
    return LengthDist("uniform", (lo, hi), spec=spec)


def _parse_lognormal(rest: str, field_name: str, spec: str) -> LengthDist:
    hint = "lognormal needs mean=TOKENS,sigma=S (optional max=TOKENS), e.g. lognormal:mean=1000,sigma=0.8"
    kv = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, val = part.partition("=")
        if not eq:
            raise InputError(field_name, hint)
        try:
            kv[key.strip().lower()] = float(val)
        except ValueError:
            raise InputError(field_name, f"{key.strip()}={val!r} is not a number") from None
    unknown = set(kv) - {"mean", "sigma", "max"}
    if unknown or "mean" not in kv or "sigma" not in kv:
        raise InputError(field_name, hint)
    mean, sigma, cap = kv["mean"], kv["sigma"], kv.get("max", 0.0)
    if not (math.isfinite(mean) and 1 <= mean <= MAX_TOKENS) or not (math.isfinite(sigma) and 0 <= sigma <= 5):
        raise InputError(field_name, f"lognormal needs 1 <= mean <= {MAX_TOKENS:,} and 0 <= sigma <= 5")
    if cap and not (math.isfinite(cap) and 1 <= cap <= MAX_TOKENS):
        raise InputError(field_name, f"lognormal max must be from 1 to {MAX_TOKENS:,}")
    return LengthDist("lognormal", (mean, sigma, cap), spec=spec)


def _parse_empirical(rest: str, field_name: str, spec: str) -> LengthDist:
    if not rest:
        raise InputError(field_name, "empirical:PATH needs a trace file or one of azure_conv, azure_code, mooncake")
    from planner.traffic.traces import resolve_trace_path

    path = resolve_trace_path(rest, field_name)
    return LengthDist("empirical", (), path=str(path), spec=spec)


def _parse_int(text: str, field_name: str, hint: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise InputError(field_name, hint) from None
    if not math.isfinite(value) or value != int(value) or not 1 <= value <= MAX_TOKENS:
        raise InputError(field_name, f"{text.strip()[:40]!r} must be a whole number from 1 to {MAX_TOKENS:,}")
    return int(value)


_PARSERS = {
    "fixed": _parse_fixed,
    "uniform": _parse_uniform,
    "lognormal": _parse_lognormal,
    "empirical": _parse_empirical,
}
_EMPIRICAL_CACHE: dict[tuple[str, str], np.ndarray] = {}


def _empirical_pool(path: str, role: str) -> np.ndarray:
    """The trace column to resample, loaded once per (path, role)."""
    key = (path, role)
    if key not in _EMPIRICAL_CACHE:
        from planner.traffic.traces import load_trace

        wl = load_trace(path)
        _EMPIRICAL_CACHE[key] = wl.output_tokens if role == "output" else wl.prompt_tokens
    return _EMPIRICAL_CACHE[key]


def as_length_dist(spec: str | LengthDist, field_name: str) -> LengthDist:
    return spec if isinstance(spec, LengthDist) else LengthDist.parse(spec, field_name)


def interarrival_s(n: int, rate_per_s: float, process: str, cv: float, rng: np.random.Generator) -> np.ndarray:
    """n gaps between arrivals with mean 1/rate; gamma shape k = 1/CV^2 keeps the mean and sets the CV."""
    mean_gap_s = 1.0 / rate_per_s
    if process == "poisson":
        return rng.exponential(mean_gap_s, size=n)
    if process == "gamma":
        shape = 1.0 / (cv * cv)
        return rng.gamma(shape, mean_gap_s / shape, size=n)
    return np.full(n, mean_gap_s)


def open_loop(
    num_requests: int,
    rate_per_s: float,
    prompt: str | LengthDist,
    output: str | LengthDist,
    process: str = "poisson",
    cv: float = 1.0,
    seed: int = 0,
) -> Workload:
    """Open-loop traffic: arrivals at `rate_per_s` by `process`; lengths drawn independently of arrivals."""
    _check_positive("num_requests", num_requests, integer=True)
    _check_at_most("num_requests", num_requests, MAX_REQUESTS)
    _check_positive("rate_per_s", rate_per_s)
    if not MIN_RATE_PER_S <= rate_per_s <= MAX_RATE_PER_S:
        raise InputError(
            "rate_per_s", f"must be from {MIN_RATE_PER_S:g} to {MAX_RATE_PER_S:g} requests/s, got {rate_per_s:g}"
        )
    if process not in ARRIVAL_PROCESSES:
        raise InputError("process", f"unknown arrival process {process!r}; use one of {', '.join(ARRIVAL_PROCESSES)}")
    if process == "gamma":
        _check_positive("cv", cv)
        if not MIN_CV <= cv <= MAX_CV:
            raise InputError("cv", f"must be from {MIN_CV:g} to {MAX_CV:g} (1 = Poisson), got {cv:g}")
    prompt_d, output_d = as_length_dist(prompt, "prompt"), as_length_dist(output, "output")
    rng = np.random.default_rng(seed)
    arrival_s = np.cumsum(interarrival_s(num_requests, rate_per_s, process, cv, rng))
    prompt_tokens = prompt_d.sample(num_requests, rng, "prompt")
    output_tokens = output_d.sample(num_requests, rng, "output")
    cv_txt = f", CV {cv:g}" if process == "gamma" else ""
    src = f"open loop {process}{cv_txt} at {rate_per_s:g} req/s; prompt {prompt_d.spec}; output {output_d.spec}"
    return Workload(arrival_s, prompt_tokens, output_tokens, seed=seed, source=src)


def closed_loop(
    num_users: int,
    num_requests: int,
    think_time_s: float,
    prompt: str | LengthDist,
    output: str | LengthDist,
    think: str = "exponential",
    seed: int = 0,
    stagger_s: float = 0.0,
) -> Workload:
    """Closed-loop traffic: request j belongs to user j mod N; each user's first request arrives after one
    think time (staggered start), each later one a think time after the user's previous reply finishes.

    stagger_s spreads the first requests evenly over that many seconds (user u starts u × stagger_s / N later).
    Benchmark clients start their N streams together (planner.traffic.clients.client_loop: stagger 0)."""
    _check_positive("num_users", num_users, integer=True)
    _check_positive("num_requests", num_requests, integer=True)
    _check_at_most("num_users", num_users, MAX_USERS)
    _check_at_most("num_requests", num_requests, MAX_REQUESTS)
    if not (math.isfinite(think_time_s) and think_time_s >= 0):
        raise InputError("think_time_s", "must be a number >= 0")
    if think not in ("exponential", "fixed"):
        raise InputError("think", "use exponential or fixed")
    prompt_d, output_d = as_length_dist(prompt, "prompt"), as_length_dist(output, "output")
    rng = np.random.default_rng(seed)
    prompt_tokens = prompt_d.sample(num_requests, rng, "prompt")
    output_tokens = output_d.sample(num_requests, rng, "output")
    if think == "exponential" and think_time_s > 0:
        think_s = rng.exponential(think_time_s, size=num_requests)
    else:
        think_s = np.full(num_requests, float(think_time_s))
    user_id = np.arange(num_requests, dtype=np.int64) % num_users
    arrival_s = np.full(num_requests, np.nan)
    first = np.arange(min(num_users, num_requests))
    if not (math.isfinite(stagger_s) and stagger_s >= 0):
        raise InputError("stagger_s", "must be a number >= 0")
    arrival_s[first] = think_s[first] + stagger_s * first / num_users
    spread = f", starts spread over {stagger_s:.3g} s" if stagger_s else ""
    src = (
        f"closed loop, {num_users} users, {think} think {think_time_s:g} s{spread}; "
        f"prompt {prompt_d.spec}; output {output_d.spec}"
    )
    return Workload(arrival_s, prompt_tokens, output_tokens, user_id=user_id, think_s=think_s, seed=seed, source=src)


MIN_RATE_PER_S, MAX_RATE_PER_S = 1e-6, 1e7  # one request in ~12 days .. ten million per second
MIN_CV, MAX_CV = 1e-3, 100.0  # burstiness of gamma arrivals; outside this cv² under- or overflows
MAX_USERS = 1_000_000
MAX_REQUESTS = 2_000_000  # per simulation: a few hundred MB of per-request state at most
MAX_TOKENS = 10_000_000  # per prompt or output: beyond any model's context


def _check_at_most(name: str, value: float, limit: float) -> None:
    if value > limit:
        raise InputError(name, f"must be at most {limit:,}, got {value:,}")


def _check_positive(name: str, value: float, integer: bool = False) -> None:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value) and value > 0
    if ok and integer:
        ok = float(value) == int(value)
    if not ok:
        raise InputError(name, f"must be a {'whole ' if integer else ''}number > 0, got {value!r}")


def repeated_prompts(wl: Workload, users: int, share: float, block_tokens: int, seed: int = 0) -> Workload:
    """Closed-loop traffic whose clients re-send earlier prompts: after the first round, request j repeats the prompt
    of its user's previous request (j − N, finished before j is sent) with probability `share`, else sends a prompt
    of its own; each prompt carries prefix-block ids of `block_tokens` tokens, so an engine's prefix cache finds a
    repeat as long as it still holds it. What a benchmark client drawing from a small pool of prompts does
    (aiperf's 100 synthetic conversations: planner.accuracy.bench_protocol)."""
    if not 0.0 <= share <= 1.0:
        raise InputError("share", f"must be between 0 and 1, got {share!r}")
    _check_positive("block_tokens", block_tokens, integer=True)
    n = wl.num_requests
    prompt = wl.prompt_tokens.copy()
    source = np.arange(n, dtype=np.int64)  # the request whose prompt request j sends
    repeat = np.random.default_rng([seed, 1]).random(n) < share
    for j in range(users, n):
        if repeat[j]:
            source[j] = source[j - users]
            prompt[j] = prompt[j - users]
    return _with_prompt_ids(wl, source, prompt, block_tokens, f"{share:.0%} of prompts repeated after the first round")


def pooled_prompts(wl: Workload, pool: int, block_tokens: int, seed: int = 0) -> Workload:
    """Traffic whose prompts are drawn at random, with replacement, from `pool` distinct prompts: what aiperf's
    synthetic dataset does (100 conversations unless --conversation-num says otherwise, one drawn per request:
    ai-dynamo/aiperf@db4f6397 ConversationDefaults.NUM, dataset_manager.py). Every request drawing prompt k re-sends
    it whole (the length of the first request that drew it), as prefix-block ids of `block_tokens` tokens: an
    engine's prefix cache serves a repeat it still holds, and the simulator's LRU pool decides which it holds."""
    _check_positive("pool", pool, integer=True)
    _check_positive("block_tokens", block_tokens, integer=True)
    n = wl.num_requests
    drawn = np.random.default_rng([seed, 2]).integers(0, pool, size=n)
    _, first, which = np.unique(drawn, return_index=True, return_inverse=True)  # each prompt's first drawing
    source = first[which].astype(np.int64)
    return _with_prompt_ids(wl, drawn, wl.prompt_tokens[source], block_tokens, f"prompts drawn from a pool of {pool}")


def _with_prompt_ids(wl: Workload, prompt_id, prompt, block_tokens: int, what: str) -> Workload:
    """`wl` with request j sending prompt `prompt_id[j]` of `prompt[j]` tokens, as prefix ids of its full
    `block_tokens`-token blocks (one id range per prompt, so equal prompt ids share their blocks)."""
    stride = int(prompt.max()) // block_tokens + 1 if len(prompt) else 1
    ids = tuple(
        prompt_id[j] * stride + np.arange(prompt[j] // block_tokens, dtype=np.int64) for j in range(len(prompt))
    )
    return dataclasses.replace(
        wl, prompt_tokens=prompt, prefix_ids=ids, prefix_block_tokens=block_tokens, source=f"{wl.source}; {what}"
    )
