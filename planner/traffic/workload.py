"""The simulator's input: a Workload of requests as numpy arrays (arrivals, lengths, prefix ids, closed-loop users).

Built by planner.traffic.generators (distributions, open and closed loop), planner.traffic.traces (recorded
traces) and planner.traffic.profiles (the app's traffic profiles); read by planner.sim.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.core.errors import InputError


@dataclass(frozen=True)
class Workload:
    """Requests as parallel arrays indexed by request id (the order of arrival for open-loop traffic)."""

    arrival_s: np.ndarray  # float64 seconds from t=0; NaN for closed-loop requests the simulator times itself
    prompt_tokens: np.ndarray  # int64 >= 1
    output_tokens: np.ndarray  # int64 >= 1
    prefix_ids: tuple[np.ndarray, ...] | None = None  # per request: prefix-block hash ids, first block first
    prefix_block_tokens: int = 16  # tokens covered by one prefix hash id (Mooncake: 512)
    user_id: np.ndarray | None = None  # closed loop: the user who sends each request (requests in send order)
    think_s: np.ndarray | None = None  # closed loop: think time before sending each request
    seed: int | None = None  # the seed that generated or sampled this workload (None: replayed as is)
    source: str = ""  # one line on where it came from
    extra: dict = field(default_factory=dict, compare=False)
    # sessions: prefix_ids run on over the answer (the next turn re-sends it), so a finished request's answer
    # blocks stay cached; off for traces, whose hash ids cover the prompt only
    prefix_covers_output: bool = False

    def __post_init__(self) -> None:
        n = len(self.arrival_s)
        for name in ("prompt_tokens", "output_tokens"):
            arr = getattr(self, name)
            if len(arr) != n:
                raise InputError(name, f"has {len(arr)} entries but arrival_s has {n}")
            if n and int(np.min(arr)) < 1:
                raise InputError(name, "every request needs at least 1 token")
        if self.prefix_ids is not None and len(self.prefix_ids) != n:
            raise InputError("prefix_ids", f"has {len(self.prefix_ids)} entries but there are {n} requests")
        if self.prefix_block_tokens < 1:
            raise InputError("prefix_block_tokens", "must be >= 1")
        if self.user_id is None and n and not np.all(np.diff(self.arrival_s) >= 0):
            raise InputError("arrival_s", "open-loop arrivals must be sorted in time")

    @property
    def num_requests(self) -> int:
        return len(self.arrival_s)

    @property
    def is_closed_loop(self) -> bool:
        return self.user_id is not None

    def take(self, idx: np.ndarray, source: str | None = None, seed: int | None = None) -> Workload:
        """A new open-loop workload of the requests at `idx` (sorted), with arrivals as given."""
        idx = np.asarray(idx, dtype=np.int64)
        prefix = None if self.prefix_ids is None else tuple(self.prefix_ids[i] for i in idx)
        return Workload(
            self.arrival_s[idx],
            self.prompt_tokens[idx],
            self.output_tokens[idx],
            prefix,
            self.prefix_block_tokens,
            seed=self.seed if seed is None else seed,
            source=source or self.source,
            prefix_covers_output=self.prefix_covers_output,
        )
