"""Amounts in minor units (kobo for NGN) shown as currency."""

from decimal import Decimal

# ISO 4217 currencies without a minor unit; every other one has two decimals
# (all of Paystack's: NGN, GHS, ZAR, KES, USD).
ZERO_DECIMAL = frozenset({"BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX",
                          "VND", "VUV", "XAF", "XOF", "XPF"})  # fmt: skip


def money_format(amount: int, currency: str) -> str:
    currency = (currency or "").upper()
    if currency in ZERO_DECIMAL:
        return f"{currency} {int(amount):,}"
    return f"{currency} {Decimal(int(amount)).scaleb(-2):,.2f}"

# The currencies Paystack accepts (its "Supported currencies" page): an event
# priced in anything else could never be paid for.
GATEWAY_CURRENCIES = frozenset({"NGN", "USD", "GHS", "ZAR", "KES", "XOF", "EGP"})
