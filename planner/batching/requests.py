"""Request sets for the batching simulator: the primer's six requests, seeded scenarios, and CSV upload.

A request is (name, arrival step, output tokens, prompt tokens). Time is counted in decode steps (primer §6).
Prompt tokens only matter for padding when requests are batched together (prefill itself is not simulated).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np

from planner.core.errors import InputError
from planner.core.safe_text import csv_cell

OUTPUT_LENGTHS = (20, 40, 80, 160, 400)  # output tokens the built-in scenarios draw from (primer §6 spread)
PROMPT_RANGE = (32, 2048)  # prompt tokens of the built-in scenarios: uniform, inclusive
CSV_COLUMNS = ("name", "arrival", "output_tokens")  # required; "prompt_tokens" is optional


@dataclass(frozen=True)
class RequestSet:
    """Requests in input order, as plain lists (the simulator loop indexes them millions of times)."""

    names: list[str]
    arrival: list[int]
    output_tokens: list[int]
    prompt_tokens: list[int]

    def __post_init__(self):
        sizes = {len(self.names), len(self.arrival), len(self.output_tokens), len(self.prompt_tokens)}
        if len(sizes) != 1:
            raise InputError("requests", "names, arrival, output_tokens and prompt_tokens differ in length")
        if any(a < 0 for a in self.arrival):
            raise InputError("requests.arrival", "arrival steps must be 0 or more")
        if any(n < 1 for n in self.output_tokens):
            raise InputError("requests.output_tokens", "every request needs at least 1 output token")
        if any(p < 0 for p in self.prompt_tokens):
            raise InputError("requests.prompt_tokens", "prompt tokens must be 0 or more")

    def __len__(self) -> int:
        return len(self.names)


def make_requests(arrival, output_tokens, prompt_tokens=None, names=None) -> RequestSet:
    """Build a RequestSet from sequences; names default to r0, r1, ... and prompts to 0."""
    arrival = [int(a) for a in arrival]
    output_tokens = [int(n) for n in output_tokens]
    prompts = [0] * len(arrival) if prompt_tokens is None else [int(p) for p in prompt_tokens]
    names = [f"r{i}" for i in range(len(arrival))] if names is None else [str(n) for n in names]
    return RequestSet(names, arrival, output_tokens, prompts)


def primer_six() -> RequestSet:
    """Primer §6: six requests at step 0 needing 2, 8, 4, 3, 5 and 2 tokens (run them on 3 slots)."""
    return make_requests([0] * 6, [2, 8, 4, 3, 5, 2], names=list("ABCDEF"))


def burst(num_requests: int = 200, seed: int = 0) -> RequestSet:
    """All requests arrive at step 0; output lengths drawn from OUTPUT_LENGTHS (run on 8 slots)."""
    rng = np.random.default_rng(seed)
    outputs = rng.choice(OUTPUT_LENGTHS, size=num_requests)
    prompts = rng.integers(PROMPT_RANGE[0], PROMPT_RANGE[1] + 1, size=num_requests)
    return make_requests(np.zeros(num_requests, dtype=int), outputs, prompts)


def steady(num_requests: int = 200, seed: int = 0, gap_steps: tuple[int, int] = (10, 50)) -> RequestSet:
    """One request every 10-50 steps (uniform gaps, first at step 0); lengths as in `burst` (8 slots, max wait 20)."""
    rng = np.random.default_rng(seed)
    gaps = rng.integers(gap_steps[0], gap_steps[1] + 1, size=num_requests)
    gaps[0] = 0
    outputs = rng.choice(OUTPUT_LENGTHS, size=num_requests)
    prompts = rng.integers(PROMPT_RANGE[0], PROMPT_RANGE[1] + 1, size=num_requests)
    return make_requests(np.cumsum(gaps), outputs, prompts)


SCENARIOS = {
    # name: (builder, slots, max_wait) -- the defaults the page and tests use
    "six": (lambda seed=0: primer_six(), 3, 0),
    "burst": (burst, 8, 0),
    "steady": (steady, 8, 20),
}


def with_spread(requests: RequestSet, spread: float) -> RequestSet:
    """Scale each output length's distance from the mean: n' = round(mean + spread × (n − mean)), at least 1.

    spread 1 keeps the lengths, 0 makes them all equal (static and continuous then tie on a burst), >1 widens them.
    """
    if spread < 0:
        raise InputError("spread", "must be 0 or more")
    if not requests.output_tokens:
        return requests
    mean = sum(requests.output_tokens) / len(requests)
    outputs = [max(1, round(mean + spread * (n - mean))) for n in requests.output_tokens]
    return RequestSet(requests.names, requests.arrival, outputs, requests.prompt_tokens)


def parse_requests_csv(text: str, source: str = "requests") -> RequestSet:
    """Parse CSV text with columns name,arrival,output_tokens[,prompt_tokens]; errors name the row and column.

    Rows are counted from 1 at the first data row (the header is row 0).
    """
    try:
        return _parse_rows(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))), source)
    except csv.Error as err:  # e.g. a field longer than the csv module's limit
        raise InputError(source, f"is not a readable CSV file ({err})") from None


def _parse_rows(reader: csv.DictReader, source: str) -> RequestSet:
    header = [h.strip() for h in (reader.fieldnames or [])]
    for column in CSV_COLUMNS:
        if column not in header:
            raise InputError(
                f"{source}: row 0 (header), column {column}", f"missing; expected columns {', '.join(CSV_COLUMNS)}"
            )
    reader.fieldnames = header
    names, arrival, outputs, prompts = [], [], [], []
    for row_num, row in enumerate(reader, start=1):
        if None in row or any(row.get(c) is None for c in CSV_COLUMNS):
            raise InputError(f"{source}: row {row_num}", f"expected {len(header)} fields")
        names.append(row["name"].strip() or f"r{row_num - 1}")
        arrival.append(_int_cell(row, "arrival", 0, row_num, source))
        outputs.append(_int_cell(row, "output_tokens", 1, row_num, source))
        has_prompt = "prompt_tokens" in row and (row["prompt_tokens"] or "").strip() != ""
        prompts.append(_int_cell(row, "prompt_tokens", 0, row_num, source) if has_prompt else 0)
    if not names:
        raise InputError(f"{source}: row 1", "no requests: the file has a header but no data rows")
    return RequestSet(names, arrival, outputs, prompts)


MAX_CELL = 10**12  # steps or tokens; beyond this a value cannot be a real request (and overflows int64 sums)


def _int_cell(row: dict, column: str, minimum: int, row_num: int, source: str) -> int:
    raw = (row[column] or "").strip()
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"{source}: row {row_num}, column {column}", f"must be a whole number, got {raw!r}") from None
    if not minimum <= value <= MAX_CELL:
        raise InputError(
            f"{source}: row {row_num}, column {column}", f"must be from {minimum} to {MAX_CELL:,}, got {raw[:40]}"
        )
    return value


def to_csv(requests: RequestSet) -> str:
    """The CSV format parse_requests_csv reads (round-trips)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("name", "arrival", "output_tokens", "prompt_tokens"))
    names = (csv_cell(str(n)) for n in requests.names)  # a name a spreadsheet would run as a formula gets a '
    writer.writerows(zip(names, requests.arrival, requests.output_tokens, requests.prompt_tokens))
    return out.getvalue()
