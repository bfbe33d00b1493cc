"""One step of a worked example: the formula, the numbers substituted into it, and the result with its unit."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Step:
    number: str  # the primer's step number ("4a", "4b" where it lists two results under one number)
    title: str
    formula: str
    substituted: str
    value: float  # in `unit`
    unit: str
    digits: int = 0  # decimals shown
    note: str = ""

    @property
    def result(self) -> str:
        """The value as printed, with its unit: '524,288 B', '2.10 GB', '97%'."""
        gap = "" if self.unit in ("%", "×") else " "
        return f"{self.value:,.{self.digits}f}{gap}{self.unit}".rstrip()

    def to_dict(self) -> dict:
        return {**asdict(self), "result": self.result}


def num(x: float) -> str:
    """A number as substituted into a formula: whole numbers with thousands separators, else 4 significant digits."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.4g}"
