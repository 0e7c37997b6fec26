"""Amounts in minor units (kobo for NGN), shown and typed in major units.

Every amount is stored and sent to the gateway in minor units (an integer);
people read and type major units ("NGN 15,000.00", "15000"). The two
functions below are the only conversion, so an organizer typing 15000 sells
at NGN 15,000.00, not NGN 150.00.
"""

from decimal import Decimal, InvalidOperation

# ISO 4217 currencies without a minor unit; every other one has two decimals
# (all of Paystack's: NGN, GHS, ZAR, KES, USD).
ZERO_DECIMAL = frozenset({"BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX",
                          "VND", "VUV", "XAF", "XOF", "XPF"})  # fmt: skip


def minor_digits(currency: str) -> int:
    """Decimal places of the currency's minor unit (2, or 0 for e.g. JPY)."""
    return 0 if (currency or "").upper() in ZERO_DECIMAL else 2


def money_major(amount: int, currency: str) -> Decimal:
    """15000 kobo -> Decimal("150.00")."""
    digits = minor_digits(currency)
    return Decimal(int(amount)).scaleb(-digits).quantize(Decimal(1).scaleb(-digits))


def money_format(amount: int, currency: str) -> str:
    currency = (currency or "").upper()
    if minor_digits(currency) == 0:
        return f"{currency} {int(amount):,}"
    return f"{currency} {money_major(amount, currency):,.2f}"


def money_parse(value: str | Decimal | int, currency: str) -> int:
    """Major units as typed ("15000", "15,000.50", Decimal) -> minor units
    (1500050 for NGN). ValueError for anything that is not an amount of the
    currency: not a number, more decimals than its minor unit has, or
    negative."""
    text = str(value).strip().replace(",", "").replace("_", "")
    try:
        major = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{value!r} is not an amount") from None
    if not major.is_finite():
        raise ValueError(f"{value!r} is not an amount")
    if major < 0:
        raise ValueError("An amount cannot be negative.")
    digits = minor_digits(currency)
    minor = major.scaleb(digits)
    if minor != minor.to_integral_value():
        unit = "no minor unit" if digits == 0 else f"at most {digits} decimals"
        raise ValueError(f"{currency.upper()} amounts have {unit}.")
    return int(minor)


# The currencies Paystack accepts (its "Supported currencies" page): an event
# priced in anything else could never be paid for.
GATEWAY_CURRENCIES = frozenset({"NGN", "USD", "GHS", "ZAR", "KES", "XOF", "EGP"})
