"""Units and small numeric helpers. Bytes and seconds internally; GB/GiB/ms only when printing."""

from __future__ import annotations

GB = 1e9  # decimal gigabyte, as GPU vendors and the primer quote memory
GiB = 2**30  # binary gibibyte, as vLLM and CUDA report memory
MB = 1e6
MiB = 2**20


def ceil_div(a: int, b: int) -> int:
    """ceil(a / b) for non-negative integers, without floats."""
    return -(-a // b)


def fmt_gb(num_bytes: float, digits: int = 2) -> str:
    """Bytes as decimal GB with the unit named."""
    return f"{num_bytes / GB:,.{digits}f} GB"


def fmt_gib(num_bytes: float, digits: int = 2) -> str:
    """Bytes as binary GiB with the unit named."""
    return f"{num_bytes / GiB:,.{digits}f} GiB"


def fmt_bytes(num_bytes: float) -> str:
    """Bytes with a decimal unit chosen by size (B, KB, MB, GB, TB)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(num_bytes) >= scale:
            return f"{num_bytes / scale:,.2f} {unit}"
    return f"{num_bytes:,.0f} B"
