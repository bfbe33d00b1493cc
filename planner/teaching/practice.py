"""Practice questions: the walkthroughs' calculations with fresh numbers, checked within a stated tolerance.

Question `index` of seed `seed` is drawn from numpy's generator seeded with (seed, index), so the same seed always
gives the same sequence. The expected answer and the worked solution are the walkthrough's own steps (up to the
asked one), so a practice answer is checked against exactly what the walkthrough page shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from planner.core.errors import InputError
from planner.teaching.inputs import (
    KVCacheInputs,
    LatencyInputs,
    SixRequestsInputs,
    ThroughputInputs,
    TokenPositionsInputs,
    WeightsInputs,
)
from planner.teaching.steps import Step
from planner.teaching.walkthroughs import run_walkthrough

RELATIVE_TOLERANCE = 0.02  # an answer within 2% of the exact value counts; whole-number answers must be exact
EXACT_UNITS = ("requests", "steps", "GPUs")


@dataclass(frozen=True)
class Question:
    kind: str
    seed: int
    index: int
    text: str
    walkthrough: str
    inputs: BaseModel
    step_number: str  # the walkthrough step whose value is the answer
    answer: float  # in `unit`, unrounded
    unit: str
    exact: bool  # whole-number answer: must match exactly
    digits: int  # decimals the solution shows: typing the shown value back is always accepted
    solution: tuple[Step, ...]  # the walkthrough's steps up to and including the asked one

    @property
    def tolerance_text(self) -> str:
        return (
            "exact whole number" if self.exact else f"within {RELATIVE_TOLERANCE:.0%} (or as rounded in the solution)"
        )


@dataclass(frozen=True)
class Check:
    correct: bool
    given: float
    expected: float
    relative_error: float


def _choice(rng: np.random.Generator, options):
    return options[int(rng.integers(len(options)))]


def _kv_shape(rng) -> dict:
    heads = _choice(rng, (16, 24, 32, 40, 48, 64))
    kv = _choice(rng, [k for k in (heads, 8, 4) if heads % k == 0])
    return dict(
        num_layers=_choice(rng, (24, 28, 32, 40, 48, 60, 80)),
        num_attention_heads=heads,
        num_kv_heads=kv,
        head_dim=_choice(rng, (64, 128)),
        bytes_per_value=_choice(rng, (2.0, 2.0, 1.0)),
        tokens_per_request=int(rng.integers(2, 65)) * 500,
        gqa_kv_heads=kv,
    )


def _shape_text(i: KVCacheInputs) -> str:
    return (
        f"A model has {i.num_layers} layers, {i.num_kv_heads} KV heads of dimension {i.head_dim}, and caches "
        f"{i.bytes_per_value:g}-byte values."
    )


def _kv_fit_inputs(rng) -> KVCacheInputs:
    shape = _kv_shape(rng)
    gpu = _choice(rng, (24.0, 40.0, 48.0, 80.0, 96.0, 141.0))
    weights = _choice(rng, [w for w in (1.0, 3.5, 6.0, 7.0, 14.0, 16.0, 26.0, 28.0, 64.0) if w < 0.8 * gpu])
    return KVCacheInputs(**shape, gpu_gb=gpu, weights_gb=weights)


def _latency_inputs(rng) -> LatencyInputs:
    prompt = int(rng.integers(2, 81)) * 100
    return LatencyInputs(
        prompt_tokens=prompt,
        output_tokens=int(rng.integers(5, 101)) * 10,
        queue_wait_ms=_choice(rng, (0.0, 10.0, 20.0, 40.0, 100.0)),
        prefill_tokens_per_s=_choice(rng, (2_000.0, 5_000.0, 8_000.0, 10_000.0, 20_000.0)),
        tpot_ms=float(rng.integers(8, 61)),
        shorter_prompt_tokens=max(1, prompt // 2),
        cached_prefix_tokens=0,
    )


def _throughput_inputs(rng) -> ThroughputInputs:
    single = float(rng.integers(10, 41))
    batch = _choice(rng, (4, 8, 16, 32, 64, 128))
    return ThroughputInputs(
        single_tpot_ms=single, batch=batch, batch_tpot_ms=single + float(rng.integers(1, 4)) * batch // 4
    )


def _six_inputs(rng) -> SixRequestsInputs:
    n = int(rng.integers(4, 9))
    return SixRequestsInputs(
        output_tokens=tuple(int(v) for v in rng.integers(1, 11, size=n)), slots=int(rng.integers(2, 5))
    )


def _six_text(i: SixRequestsInputs) -> str:
    return (
        f"{len(i.output_tokens)} requests arrive at step 0 needing {', '.join(map(str, i.output_tokens))} tokens; "
        f"the GPU runs {i.slots} at once (one token per running request per step)."
    )


# kind -> (walkthrough, step asked, input generator, question text)
KINDS: dict[str, tuple[str, str, Callable, Callable]] = {
    "kv-per-token": (
        "kv-cache",
        "1",
        lambda rng: KVCacheInputs(**_kv_shape(rng)),
        lambda i: f"{_shape_text(i)} How many bytes of KV cache does one token take?",
    ),
    "kv-per-request": (
        "kv-cache",
        "2",
        lambda rng: KVCacheInputs(**_kv_shape(rng)),
        lambda i: f"{_shape_text(i)} How many GB of KV cache does one request of {i.tokens_per_request:,} tokens hold?",
    ),
    "fit": (
        "kv-cache",
        "4a",
        _kv_fit_inputs,
        lambda i: (
            f"{_shape_text(i)} On a {i.gpu_gb:g} GB GPU with {i.weights_gb:g} GB of weights, how many "
            f"requests of {i.tokens_per_request:,} tokens fit (textbook)?"
        ),
    ),
    "weights": (
        "weights",
        "1",
        lambda rng: WeightsInputs(
            params_billion=_choice(rng, (0.5, 1.5, 3.0, 7.0, 8.0, 13.0, 14.0, 32.0, 70.0, 405.0)),
            high_bits=_choice(rng, (16.0, 8.0, 4.0)),
        ),
        lambda i: (
            f"How many GB do the weights of a {i.params_billion:g}B-parameter model take at "
            f"{i.high_bits:g} bits per weight?"
        ),
    ),
    "token-positions": (
        "token-positions",
        "1",
        lambda rng: TokenPositionsInputs(
            prompt_tokens=int(rng.integers(1, 81)) * 100, output_tokens=int(rng.integers(5, 101)) * 10
        ),
        lambda i: (
            f"Without a KV cache, how many token positions go through the layers for a {i.prompt_tokens:,}-token "
            f"prompt and a {i.output_tokens:,}-token answer?"
        ),
    ),
    "ttft": (
        "latency",
        "1b",
        _latency_inputs,
        lambda i: (
            f"A {i.prompt_tokens:,}-token prompt waits {i.queue_wait_ms:g} ms in the queue; prefill runs "
            f"at {i.prefill_tokens_per_s:,.0f} tokens/s. What is the time to first token in ms?"
        ),
    ),
    "end-to-end": (
        "latency",
        "3a",
        _latency_inputs,
        lambda i: (
            f"A {i.prompt_tokens:,}-token prompt waits {i.queue_wait_ms:g} ms; prefill runs at "
            f"{i.prefill_tokens_per_s:,.0f} tokens/s and TPOT is {i.tpot_ms:g} ms. What is the "
            f"end-to-end latency in seconds for {i.output_tokens:,} output tokens?"
        ),
    ),
    "server-throughput": (
        "throughput",
        "4",
        _throughput_inputs,
        lambda i: (
            f"{i.batch} requests share a batch and TPOT rises from {i.single_tpot_ms:g} to "
            f"{i.batch_tpot_ms:g} ms. How many output tokens/s does the server produce?"
        ),
    ),
    "static-batching": (
        "six-requests",
        "2",
        _six_inputs,
        lambda i: (
            f"{_six_text(i)} With static batching (the next {i.slots} in order are admitted once "
            f"the GPU is empty and held until the longest finishes), at which step is "
            f"everything done?"
        ),
    ),
    "continuous-busy": (
        "six-requests",
        "5",
        _six_inputs,
        lambda i: f"{_six_text(i)} With continuous batching, what percentage of slot-steps is the GPU busy?",
    ),
}


# Kinds whose answer needs only some of the walkthrough's earlier steps: the solution shows just those (the
# throughput walkthrough's steps 1-3 use a queue, a prompt and an output length the question does not give).
SOLUTION_STEPS = {"server-throughput": ("4",)}


def generate(seed: int, index: int, kinds: tuple[str, ...] | None = None) -> Question:
    """Question number `index` of the sequence for `seed` (optionally only of the given kinds)."""
    kinds = tuple(kinds or KINDS)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise InputError("kinds", f"unknown question kind {unknown[0]!r}; known: {', '.join(KINDS)}")
    rng = np.random.default_rng((int(seed), int(index)))
    kind = _choice(rng, kinds)
    name, number, make_inputs, text = KINDS[kind]
    inputs = make_inputs(rng)
    steps = run_walkthrough(name, inputs)
    upto = next(k for k, s in enumerate(steps) if s.number == number)
    asked = steps[upto]
    return Question(
        kind=kind,
        seed=seed,
        index=index,
        text=text(inputs),
        walkthrough=name,
        inputs=inputs,
        step_number=number,
        answer=asked.value,
        unit=asked.unit,
        exact=asked.unit in EXACT_UNITS,
        digits=asked.digits,
        solution=tuple(s for s in steps[: upto + 1] if kind not in SOLUTION_STEPS or s.number in SOLUTION_STEPS[kind]),
    )


_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "mil": 1e6, "billion": 1e9, "bn": 1e9}
# unit -> (family, size in the family's base unit); an answer typed in another unit of the family is converted
UNITS = {
    "s": ("time", 1.0),
    "sec": ("time", 1.0),
    "second": ("time", 1.0),
    "seconds": ("time", 1.0),
    "ms": ("time", 1e-3),
    "millisecond": ("time", 1e-3),
    "milliseconds": ("time", 1e-3),
    "us": ("time", 1e-6),
    "µs": ("time", 1e-6),
    "min": ("time", 60.0),
    "minutes": ("time", 60.0),
    "b": ("bytes", 1.0),
    "bytes": ("bytes", 1.0),
    "kb": ("bytes", 1e3),
    "mb": ("bytes", 1e6),
    "gb": ("bytes", 1e9),
    "tb": ("bytes", 1e12),
    "kib": ("bytes", 2**10),
    "mib": ("bytes", 2**20),
    "gib": ("bytes", 2**30),
    "tib": ("bytes", 2**40),
}


def parse_answer(text: str, unit: str | None = None) -> float:
    """The number in a typed answer, in `unit`: thousands separators are ignored, scale words count ("3.45
    million", "2.1k"), and a unit of the same kind converts ("0.32 s" or "320 ms" for an answer in ms, "2 GiB" for
    one in GB); a unit of another kind (seconds for a byte count) is an error naming both."""
    cleaned = (text or "").replace(",", "").replace("_", "")
    match = _NUMBER.search(cleaned)
    if not match:
        raise InputError("answer", f"type a number (got {text!r})")
    value = float(match.group(0))
    rest = cleaned[match.end() :].strip()
    rest = re.sub(r"^([kKM])(?![a-zA-Z])", lambda m: {"k": " thousand", "K": " thousand", "M": " million"}[m[1]], rest)
    as_typed = rest.split()  # "3.45M" -> 3.45 million, "2k" -> 2 thousand
    words = [w.lower() for w in as_typed]
    if words and words[0] in SCALES:
        value *= SCALES[words.pop(0)]
        as_typed.pop(0)
    typed = words[0].rstrip(".") if words else ""
    if unit is None or typed not in UNITS or unit.lower() not in UNITS:
        return value
    (family, size), (want, want_size) = UNITS[typed], UNITS[unit.lower()]
    if family != want:
        raise InputError("answer", f"{as_typed[0].rstrip('.')!r} is not a unit of {unit} (answer in {unit})")
    return value * size / want_size


def check_answer(question: Question, given: float) -> Check:
    """Correct when exact (whole-number answers), within RELATIVE_TOLERANCE, or equal to the value as shown."""
    expected = question.answer
    error = abs(given - expected) / abs(expected) if expected else abs(given)
    if question.exact:
        correct = given == round(expected)
    else:
        correct = error <= RELATIVE_TOLERANCE or round(given, question.digits) == round(expected, question.digits)
    return Check(correct=correct, given=given, expected=expected, relative_error=error)
