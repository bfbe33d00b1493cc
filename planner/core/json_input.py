"""JSON from a user (an upload, a paste, a share link, a trace line): parsed with limits, every failure one
InputError naming the source.

Python's json accepts what no later arithmetic survives: NaN and Infinity, 1e400 (read as inf), integers of
thousands of digits (10^400 overflows the first float() it meets; past 4,300 digits int() itself refuses), and
nesting deep enough to exhaust the recursion limit. Here a number must be finite, an integer at most 2^63 in
magnitude and at most 40 characters long; deep nesting, bad UTF-8 and bad syntax are one clear line each.
"""

from __future__ import annotations

import json
import math
from typing import Any

from planner.core.errors import InputError

MAX_JSON_INT = 2**63  # int64 (what numpy holds; a float holds it too): ids and ns timestamps fit, 10^400 does not
MAX_NUMBER_CHARS = 40


class _BadNumber(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS or abs(int(text)) > MAX_JSON_INT:
        raise _BadNumber(f"the integer {text[:20]}{'...' if len(text) > 20 else ''} is beyond {MAX_JSON_INT:,}")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text) if len(text) <= MAX_NUMBER_CHARS else math.inf
    if not math.isfinite(value):
        raise _BadNumber(f"the number {text[:20]}{'...' if len(text) > 20 else ''} is beyond float range")
    return value


def _parse_constant(name: str) -> Any:
    raise _BadNumber(f"{name} is not a number JSON allows")


def _constant_as_text(name: str) -> str:
    return name  # "Infinity" stays a word: a field that needs a number then names itself


_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
_DECODER_FREE_INTS = json.JSONDecoder(parse_float=_parse_float, parse_constant=_parse_constant)
# published config.json files carry Python's Infinity where no limit applies (Nemotron-H's time_step_limit [0.0,
# Infinity]); a reader that checks every field it uses can accept them as words
_DECODER_FREE_INTS_WORDS = json.JSONDecoder(parse_float=_parse_float, parse_constant=_constant_as_text)
_DECODER_LENIENT = json.JSONDecoder()


def load_json(
    text: str | bytes,
    source: str,
    check_ints: bool = True,
    check_numbers: bool = True,
    constants_as_words: bool = False,
) -> Any:
    """The parsed document, or InputError(source, one line) for bad syntax, non-finite or huge numbers, deep
    nesting or bytes that are not UTF-8. check_ints=False leaves integers to the caller (a hot loop over a trace's
    lines: a Python hook per integer triples its parse time; or a reader that names the key of a bad count);
    check_numbers=False leaves every number to the caller (it checks each field and names it). Python's
    4,300-digit limit, the depth limit and the syntax are always checked. constants_as_words=True (with
    check_ints=False) reads Infinity/NaN as the strings "Infinity"/"NaN" instead of refusing the document."""
    if constants_as_words and not check_ints:
        decoder = _DECODER_FREE_INTS_WORDS
    else:
        decoder = _DECODER_LENIENT if not check_numbers else _DECODER if check_ints else _DECODER_FREE_INTS
    try:
        if isinstance(text, (bytes, bytearray)):  # as json.loads does: UTF-8/16/32 by the first bytes
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        return decoder.decode(text)
    except _BadNumber as err:
        raise InputError(source, str(err)) from None
    except json.JSONDecodeError as err:
        raise InputError(source, f"is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except RecursionError:
        raise InputError(source, "is nested too deeply to be a real document") from None
    except UnicodeDecodeError:
        raise InputError(source, "is not UTF-8 text (is it a binary file?)") from None
    except ValueError as err:  # e.g. Python's own digit limit on a number parse_int never saw
        raise InputError(source, f"is not usable JSON ({str(err)[:100]})") from None
