"""One error type for bad user input: it always names the field at fault."""

from __future__ import annotations

from pydantic import ValidationError


class InputError(ValueError):
    """Invalid input, with the offending field named (e.g. "--batch", "gpus.yaml: H100-SXM: hbm_bytes_per_s")."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")

    def __reduce__(self):
        """Pickle as (field, message): a process-pool worker's InputError reaches the parent as itself (the default
        pickles the one formatted argument, which __init__ cannot take back)."""
        return type(self), (self.field, self.message)


def from_validation_error(err: ValidationError, prefix: str = "") -> InputError:
    """Turn pydantic's multi-line error into one InputError naming the first bad field."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "input"  # a cross-field check names no single field
    field = f"{prefix}{loc}" if prefix else loc
    msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    if first.get("type") == "extra_forbidden":
        msg = "unknown field"
    return InputError(field, msg[:300])
