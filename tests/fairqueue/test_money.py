"""Major units as typed -> minor units as stored, and back (fairqueue/money.py)."""

from decimal import Decimal

import pytest

from fairqueue.money import money_format, money_major, money_parse


@pytest.mark.parametrize(
    ("typed", "currency", "minor"),
    [
        ("15000", "NGN", 1_500_000),
        ("15,000.50", "NGN", 1_500_050),
        (" 0.01 ", "ngn", 1),
        (Decimal("150.5"), "USD", 15_050),
        (7, "GHS", 700),
        ("1500", "JPY", 1_500),
        ("5,000", "XOF", 5_000),
        ("0", "NGN", 0),
    ],
)
def test_major_units_parse_to_minor_units(typed, currency, minor):
    assert money_parse(typed, currency) == minor


@pytest.mark.parametrize(
    ("typed", "currency", "problem"),
    [
        ("150.001", "NGN", "at most 2 decimals"),
        ("1500.5", "JPY", "no minor unit"),
        ("-5", "NGN", "negative"),
        ("abc", "NGN", "not an amount"),
        ("", "NGN", "not an amount"),
        ("NaN", "NGN", "not an amount"),
        ("Infinity", "NGN", "not an amount"),
    ],
)
def test_what_is_not_an_amount_of_the_currency_is_refused(typed, currency, problem):
    with pytest.raises(ValueError, match=problem):
        money_parse(typed, currency)


@pytest.mark.parametrize(
    ("minor", "currency"), [(1_500_000, "NGN"), (1, "USD"), (5_000, "XOF"), (0, "NGN")]
)
def test_format_and_parse_round_trip(minor, currency):
    shown = money_format(minor, currency)
    assert money_parse(shown.split(" ", 1)[1], currency) == minor
    assert money_parse(money_major(minor, currency), currency) == minor


def test_the_kobo_bug_is_gone():
    """An organizer typing 15000 sells at NGN 15,000.00, not NGN 150.00."""
    assert money_format(money_parse("15000", "NGN"), "NGN") == "NGN 15,000.00"
