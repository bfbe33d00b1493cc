"""Which trace a web input may name: a bundled trace by name, or a file the user uploaded in this session.

The CLI takes any trace path (its user owns the machine). A web input never does: `empirical:/etc/passwd` typed
into a page would otherwise read a server file and show its first line in the error. So the pages pass
every length spec and trace choice through here, with the session's own upload folder; a name is looked up in
that folder only (no separators, no `..`, no absolute path), and the error names the field without echoing a
server path or a file's content.
"""

from __future__ import annotations

import glob
import hashlib
from pathlib import Path

from planner.core.errors import InputError
from planner.core.safe_text import display_name
from planner.traffic.generators import LengthDist
from planner.traffic.traces import NAMED_TRACES

MAX_UPLOAD_NAME_CHARS = 120
_NAME_HELP = f"a bundled trace ({', '.join(NAMED_TRACES)}) or the file name of a trace you uploaded"


def upload_name(name: str, field: str = "trace upload") -> str:
    """The base name an upload is saved under: no folder part, no NUL or control characters, at most 120 chars,
    characters other than letters, digits and `-_./:+@(),` made spaces."""
    base = str(name).replace("\\", "/").rsplit("/", 1)[-1].strip()
    if any(ord(ch) < 32 for ch in base):
        raise InputError(field, "the file name contains a control character (NUL, newline, ...); rename the file")
    if base in ("", ".", ".."):
        raise InputError(field, "the file needs a name")
    if len(base) > MAX_UPLOAD_NAME_CHARS:
        raise InputError(field, f"the file name is longer than {MAX_UPLOAD_NAME_CHARS} characters; rename the file")
    return display_name(base)  # shown in captions and errors: no Markdown link or image can form from it


def save_upload(folder: Path, name: str, data: bytes, field: str = "trace upload") -> Path:
    """Write an uploaded trace into the session's folder as DIGEST/NAME (new content, new path: the pages cache
    by path) under its own cleaned name; return its path."""
    sub = Path(folder) / hashlib.sha256(data).hexdigest()[:16]
    sub.mkdir(parents=True, exist_ok=True)
    path = sub / upload_name(name, field)
    if not path.exists():
        path.write_bytes(data)
    return path


def web_trace_ref(ref: str, field: str, uploads: Path | None) -> str:
    """A bundled trace's name as is, or the path of the user's upload called `ref`; anything else is refused."""
    name = str(ref).strip()
    if name in NAMED_TRACES:
        return name
    looks_like_path = not name or "/" in name or "\\" in name or name.startswith((".", "~")) or "\x00" in name
    if looks_like_path or uploads is None:
        raise InputError(field, f"empirical: takes {_NAME_HELP} on this page, not a path")
    found = [p for p in Path(uploads).glob(f"*/{glob.escape(name)}") if p.is_file() and not p.is_symlink()]
    if not found:
        raise InputError(field, f"no uploaded trace named {name[:60]!r}; use {_NAME_HELP}")
    return str(max(found, key=lambda p: p.stat().st_mtime_ns))  # the latest upload of that name


def web_length_spec(spec: str, field: str, uploads: Path | None) -> str:
    """A length spec a page may run: parsed with the field named; `empirical:NAME` only through web_trace_ref
    (the returned spec then carries the upload's path, which only this module builds)."""
    kind, _, rest = str(spec).strip().partition(":")
    if kind.strip().lower() != "empirical":
        LengthDist.parse(spec, field)  # the other kinds read no file
        return str(spec).strip()
    resolved = f"empirical:{web_trace_ref(rest, field, uploads)}"
    LengthDist.parse(resolved, field)
    return resolved
