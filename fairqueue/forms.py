"""What every form that takes money shares: an amount is typed in the
currency's major unit (15000 for NGN 15,000.00), the currency beside it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.html import format_html
from django.utils.safestring import SafeString


class MoneyInput(forms.NumberInput):
    """An amount typed in the currency's major unit, the currency beside it."""

    def __init__(self, *args: Any, currency: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.currency = currency

    def render(
        self, name: str, value: Any, attrs: Any = None, renderer: Any = None
    ) -> SafeString:
        field = super().render(name, value, attrs, renderer)
        if not self.currency:
            return field
        return format_html(
            '<span class="fq-money" style="white-space:nowrap">{} '
            '<span class="fq-currency">{}</span></span>',
            field,
            self.currency,
        )
