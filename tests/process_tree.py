"""A process's children and descendants read from /proc (Linux), for tests that check workers die with their parent."""

from __future__ import annotations

import os


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                out.append(int(entry))
    return out


def descendants(pid: int) -> list[int]:
    kids = children(pid)
    return kids + [d for k in kids for d in descendants(k)]
