"""Checked values of a Hugging Face config: the first of a family's keys present (a missing one reported by its
Hugging Face name), whole numbers up to MAX_DIMENSION, optional counts, and a value cut short for an error message."""

from __future__ import annotations

from typing import Any

from planner.core.errors import InputError

MAX_DIMENSION = 10**9  # no real layer count, width, vocabulary or context comes near this


def _first(cfg: dict, *keys: str, default: Any = ..., source: str = "config.json") -> Any:
    for key in keys:
        if key in cfg and cfg[key] is not None:
            return cfg[key]
    if default is ...:
        raise InputError(f"{source}: {keys[0]}", "missing (required to size the model)")
    return default


def _show(value: Any) -> str:
    """A value for an error message, cut short (a hostile file can hold megabytes in one field)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _whole(value: Any, minimum: int) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and minimum <= value <= MAX_DIMENSION  # first: compares 10^400 exactly (isfinite would overflow), NaN fails
        and value == int(value)
    )


def _positive_int(cfg: dict, *keys: str, default: Any = ..., source: str = "config.json") -> int:
    value = _first(cfg, *keys, default=default, source=source)
    if not _whole(value, 1):
        key = next((k for k in keys if k in cfg and cfg[k] is not None), keys[0])
        raise InputError(f"{source}: {key}", f"must be a whole number from 1 to {MAX_DIMENSION:,}, got {_show(value)}")
    return int(value)


def _count(cfg: dict, key: str, source: str) -> int:
    """An optional non-negative whole number (0 when absent or null)."""
    value = cfg.get(key)
    if value is None or value is False:
        return 0
    if not _whole(value, 0):
        raise InputError(f"{source}: {key}", f"must be a whole number from 0 to {MAX_DIMENSION:,}, got {_show(value)}")
    return int(value)
