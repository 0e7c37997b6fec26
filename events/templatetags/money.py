"""``{{ amount|money:currency }}``: an amount in minor units (kobo for NGN)
shown as currency, e.g. ``500000|money:"NGN"`` -> ``NGN 5,000.00``."""

from decimal import Decimal, InvalidOperation

from django import template

register = template.Library()

# ISO 4217 currencies without a minor unit; every other one has two decimals
# (all of Paystack's: NGN, GHS, ZAR, KES, USD).
ZERO_DECIMAL = frozenset({"BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX",
                          "VND", "VUV", "XAF", "XOF", "XPF"})  # fmt: skip


def money_format(amount: int, currency: str) -> str:
    currency = (currency or "").upper()
    if currency in ZERO_DECIMAL:
        return f"{currency} {int(amount):,}"
    return f"{currency} {Decimal(int(amount)).scaleb(-2):,.2f}"


@register.filter(name="money")
def money(amount: object, currency: str = "NGN") -> str:
    try:
        return money_format(int(amount), currency)  # type: ignore[call-overload]
    except (TypeError, ValueError, InvalidOperation):
        return ""
