"""``{{ amount|money:currency }}``: an amount in minor units (kobo for NGN)
shown as currency, e.g. ``500000|money:"NGN"`` -> ``NGN 5,000.00``."""

from decimal import InvalidOperation

from django import template

from fairqueue.money import money_format

register = template.Library()


@register.filter(name="money")
def money(amount: object, currency: str = "NGN") -> str:
    try:
        return money_format(int(amount), currency)  # type: ignore[call-overload]  # any value; see except
    except (TypeError, ValueError, InvalidOperation):
        return ""
