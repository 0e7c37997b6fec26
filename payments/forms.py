"""The refund forms: amounts typed in the currency's major unit."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from fairqueue.forms import MoneyInput
from fairqueue.money import ZERO_DECIMAL


def minor_units(amount: Decimal, currency: str) -> int | None:
    """``amount`` in the currency's major unit as whole minor units; None
    when it has more decimals than the currency."""
    exponent = 0 if currency.upper() in ZERO_DECIMAL else 2
    scaled = amount.scaleb(exponent)
    if scaled != scaled.to_integral_value():
        return None
    return int(scaled)


class RefundForm(forms.Form):
    """``currency``: the selected payments' one currency, shown beside the
    amount (none when they are in several)."""

    amount = forms.DecimalField(
        required=False,
        min_value=Decimal("0.01"),
        max_digits=14,
        decimal_places=2,
        help_text=(
            "In the currency's major unit (e.g. 1500.00 for NGN 1,500.00), for each selected "
            "payment. Leave empty to refund everything not refunded yet."
        ),
    )
    reason = forms.CharField(
        max_length=200,
        widget=forms.TextInput(attrs={"style": "width:min(36em,100%)"}),
        help_text="Sent to the gateway as the merchant note and kept in the payment log.",
    )

    def __init__(self, *args: Any, currency: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["amount"].widget = MoneyInput(currency=currency, attrs={"step": "0.01"})


class OrderRefundForm(forms.Form):
    """An order refunded whole: all it still holds for its tickets."""

    reason = forms.CharField(
        max_length=200,
        widget=forms.TextInput(attrs={"style": "width:min(36em,100%)"}),
        help_text="Sent to the gateway as the merchant note and kept in the payment log.",
    )
