"""What a user's result file becomes, whichever tool wrote it: UserPoint (one measured operating point), UserData
(the file's points, model and approximations) and the one number check every reader applies (check_number). The
readers: planner.accuracy.user_points (vLLM, SGLang, GuideLLM, CSV) and planner.accuracy.aiperf_export (AIPerf)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.core.errors import InputError


@dataclass(frozen=True)
class UserPoint:
    """One measured operating point: B requests of I prompt and O output tokens, with TPOT and/or TTFT in ms."""

    label: str
    batch: float  # requests decoding together (effective concurrency for a serving run)
    input_tokens: float
    output_tokens: float
    tpot_ms: float | None
    ttft_ms: float | None
    ttft_batch: float  # prompts prefilled together before the first token: B for a static batch, 1 when serving
    note: str = ""
    # how the client sent the requests: N users in a closed loop (vllm bench serve --max-concurrency N at rate inf,
    # GuideLLM concurrent/synchronous), or arrivals at request_rate per second; None/False for a static batch
    request_rate: float | None = None
    users: int | None = None  # closed loop: this many clients, each sending its next request when a reply ends
    # closed loop started as one burst (vllm bench serve / SGLang bench_serving at rate inf behind a semaphore of
    # `users`, their warm-up gathered first): completed / users rounds measured, the first of them the burst
    rounds: int | None = None

    @classmethod
    def serving_run(cls, label: str, batch: float, how: str, tokens: tuple[float, float], **measured) -> UserPoint:
        """A serving benchmark's point: `batch` requests in flight (at least 1, `how` says where it came from),
        `tokens` = (mean prompt, mean output), one prompt prefilled at a time; `measured` = tpot_ms, ttft_ms,
        request_rate, users, rounds."""
        batch = max(batch, 1.0)
        return cls(label=label, batch=batch, input_tokens=tokens[0], output_tokens=tokens[1], ttft_batch=1.0,
                   note=f"batch ≈ {batch:.1f} ({how})", **measured)  # fmt: skip


@dataclass(frozen=True)
class UserData:
    """What an upload held: its format, the points, the model it names (if any) and what was approximated."""

    kind: str  # benchmark_serving | guidellm | csv
    points: tuple[UserPoint, ...]
    model_id: str = ""
    notes: tuple[str, ...] = ()


MAX_MODEL_ID_CHARS = 200  # a Hugging Face id is at most 96 characters; longer text is not a model name
MAX_POINT_VALUE = 1e9  # 11 days in ms, 1e9 tokens or requests: beyond any benchmark; 1e300 only breaks the fit


def check_number(value, where: str) -> float:
    """A finite, positive number (bools and strings that are not numbers are rejected with the field named)."""
    if isinstance(value, bool):
        raise InputError(where, f"must be a number, got {value!r}")
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."  # never echo a whole field
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer such as 10^400
        raise InputError(where, f"not a number: {shown}") from None
    if math.isnan(x) or math.isinf(x):
        raise InputError(where, f"must be finite, got {shown}")
    if x <= 0:
        raise InputError(where, f"must be positive, got {shown}")
    if x > MAX_POINT_VALUE:
        raise InputError(where, f"must be at most {MAX_POINT_VALUE:g} (ms, tokens or requests), got {shown}")
    return x
