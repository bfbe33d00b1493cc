"""User text made inert where it is shown or exported: a model's name, CSV cells, Markdown table cells.

A model named `=cmd|'/c calc'!A1` would run as a formula in a spreadsheet opening the CSV; one named
`![x](https://host/pixel.png)` or `<img onerror=...>` would load a remote image in a caption or report.md. Three
rules, applied where text leaves or enters:
- a display name keeps letters, digits and `-_./:+@(),` and spaces, at most 200 characters, and never starts with
  a formula character (the model spec's `name` goes through it, so every caption, header and file is safe);
- a CSV cell that starts with `=`, `+`, `-`, `@`, tab or carriage return gets a leading `'`, as OWASP recommends
  (https://owasp.org/www-community/attacks/CSV_Injection); numbers are written as numbers, untouched;
- a Markdown cell has `\\`, backquote, `[`, `]`, `|`, `*`, `_` escaped and `<`, `>`, `&` as HTML entities.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

MAX_NAME_CHARS = 200
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NAME_DROP = re.compile(r"[^\w .:/+@(),-]", re.UNICODE)
_MD_ESCAPE = re.compile(r"([\\`\[\]|*_])")
_INLINE_ESCAPE = re.compile(r"([\\`\[\]<])")


def display_name(text: str) -> str:
    """A name safe in Markdown, HTML and CSV: other characters become spaces, runs of spaces one, 200 chars."""
    cleaned = " ".join(_NAME_DROP.sub(" ", str(text)).split())[:MAX_NAME_CHARS]
    return cleaned.lstrip("=+-@ ") or "unnamed"


SafeName = Annotated[str, AfterValidator(display_name)]  # a pydantic field type: the name is cleaned on the way in


def csv_cell(value):
    """A CSV cell a spreadsheet will not run: text starting with a formula character is prefixed with '."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def inline_markdown(text) -> str:
    """Text for a caption or message rendered as Markdown: no link, image, code or HTML tag can form (`[`, `]`,
    backquote, `<` and backslash escaped); emphasis and the rest left alone, so field names read as typed."""
    return _INLINE_ESCAPE.sub(r"\\\1", str(text))


def markdown_cell(text) -> str:
    """Text for a Markdown table cell: no links, images, code, emphasis or raw HTML; one line."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_ESCAPE.sub(r"\\\1", text).replace("\r", " ").replace("\n", " ")
