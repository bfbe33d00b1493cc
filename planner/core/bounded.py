"""A pydantic base for every spec a user can fill in: each number finite and of a magnitude arithmetic survives.

Fields keep their own ranges (`PositiveInt`, `le=1`); this base adds the one rule they all share, so a value such
as 10^400 (it overflows the first float() it meets), 1e309 (read as inf), nan or 5e-324 (dividing by it overflows)
is refused where it enters, naming the field, whatever model or field a later change adds.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

MAX_INT = 2**53  # the largest integer a float holds exactly: no count, size or seed the planner takes is larger
MAX_MAGNITUDE = 1e18  # bytes, FLOP/s, rates, prices: every real figure is far below
MIN_MAGNITUDE = 1e-30  # a nonzero float below this is an underflow, not a value (norm epsilons are ~1e-6)


def check_number(value: Any) -> Any:
    """The value unchanged, or ValueError (pydantic names the field) when a number is out of bounds."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise ValueError(f"must be at most {MAX_INT:,} in magnitude")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        if value != 0 and not MIN_MAGNITUDE <= abs(value) <= MAX_MAGNITUDE:
            raise ValueError(f"must be 0 or of magnitude {MIN_MAGNITUDE:g} to {MAX_MAGNITUDE:g}")
    return value


class BoundedModel(BaseModel):
    """BaseModel whose number fields (and numbers inside list/dict fields) are finite and bounded (checked after
    pydantic's own conversion, so "1e400" in a query string and 10^400 in JSON are caught alike)."""

    model_config = ConfigDict(allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def numbers_are_finite_and_bounded(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            for item in value:
                check_number(item)
        elif isinstance(value, dict):
            for item in value.values():
                check_number(item)
        return check_number(value)
