"""Practice questions: seeded, checked within the stated tolerance, solved by the walkthrough's own steps."""

from __future__ import annotations

import pytest

from planner.core.errors import InputError
from planner.teaching.practice import KINDS, RELATIVE_TOLERANCE, check_answer, generate, parse_answer


def test_same_seed_same_questions():
    a = [generate(42, i) for i in range(10)]
    b = [generate(42, i) for i in range(10)]
    assert [(q.kind, q.text, q.answer) for q in a] == [(q.kind, q.text, q.answer) for q in b]
    c = [generate(43, i) for i in range(10)]
    assert [q.text for q in a] != [q.text for q in c]


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_is_solved_by_its_walkthrough(kind):
    for seed in range(20):
        q = generate(seed, 0, (kind,))
        assert q.kind == kind
        assert q.solution[-1].number == q.step_number and q.solution[-1].value == q.answer
        assert q.text.endswith("?")


@pytest.mark.parametrize("kind", list(KINDS))
def test_correct_answer_accepted_wrong_rejected(kind):
    q = generate(7, 3, (kind,))
    assert check_answer(q, q.answer).correct
    if q.exact:
        assert not check_answer(q, q.answer + 1).correct
    else:
        assert check_answer(q, q.answer * (1 + RELATIVE_TOLERANCE * 0.9)).correct  # inside 2%
        assert not check_answer(q, q.answer * (1 + RELATIVE_TOLERANCE * 1.5)).correct  # outside 2%
    assert not check_answer(q, q.answer * 2 + 1).correct


def test_rounded_display_value_is_accepted():
    q = next(generate(s, 0, ("kv-per-request",)) for s in range(100))
    assert check_answer(q, parse_answer(q.solution[-1].result)).correct  # "2.10 GB" typed back in


def test_parse_answer_ignores_separators_and_units():
    assert parse_answer("644,850") == 644_850
    assert parse_answer(" 61.5 % ") == 61.5
    assert parse_answer("2.1 GB") == 2.1
    assert parse_answer("1e3") == 1000
    with pytest.raises(InputError):
        parse_answer("lots")


def test_unknown_kind_is_named():
    with pytest.raises(InputError) as err:
        generate(1, 0, ("nope",))
    assert err.value.field == "kinds"


@pytest.mark.parametrize(
    "text, unit, value",
    [
        ("0.32 s", "ms", 320),
        ("320 ms", "ms", 320),
        ("320ms", "s", 0.32),
        ("3.45 million", "positions", 3.45e6),
        ("3.45M", "positions", 3.45e6),
        ("2.1k", "tokens/s", 2100),
        ("2 GiB", "GB", 2 * 2**30 / 1e9),
        ("512 MB", "GB", 0.512),
        ("97 %", "%", 97),
        ("12", "steps", 12),
    ],
)
def test_answers_convert_their_units(text, unit, value):
    assert parse_answer(text, unit) == pytest.approx(value)


def test_a_unit_of_another_kind_is_named():
    with pytest.raises(InputError) as err:
        parse_answer("3 s", "GB")
    assert "'s' is not a unit of GB" in err.value.message
