"""Files a user names on the command line, read with limits: a regular file only (a FIFO would block forever,
/dev/zero never ends, /proc files lie about their size), at most `max_bytes` read whatever the file claims, UTF-8
text. Every failure is one InputError naming the flag's field."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from planner.core.errors import InputError

PSEUDO_FILESYSTEMS = ("/proc/", "/sys/", "/dev/")


def read_user_text(path: str | Path, field: str, max_bytes: int) -> str:
    """The file's text; InputError(field, ...) for a special file, a larger file, bad bytes or an OS error."""
    shown = str(path)[:120]
    try:
        real = os.path.realpath(path)
        if real.startswith(PSEUDO_FILESYSTEMS):
            raise InputError(field, f"{shown} is a device or kernel file, not a data file")
        st = os.stat(real)  # stat, not open: opening a FIFO blocks until a writer comes
        if not stat.S_ISREG(st.st_mode):
            raise InputError(field, f"{shown} is not a regular file (a FIFO, device, socket or folder)")
        if st.st_size > max_bytes:
            raise InputError(field, f"{shown} is {st.st_size:,} bytes; at most {max_bytes:,} are read")
        with open(real, "rb") as f:
            raw = f.read(max_bytes + 1)  # never more than the cap, whatever the size said
    except InputError:
        raise
    except OSError as err:
        raise InputError(field, f"cannot read {shown}: {err.strerror or type(err).__name__}") from None
    except ValueError:  # a NUL in the path
        raise InputError(field, "the path contains a NUL character") from None
    if len(raw) > max_bytes:
        raise InputError(field, f"{shown} grew past {max_bytes:,} bytes while being read")
    if b"\x00" in raw[:65536]:
        raise InputError(field, f"{shown} holds binary data, not text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(field, f"{shown} is not UTF-8 text (byte {err.start:,})") from None
