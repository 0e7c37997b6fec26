"""The event and tier forms of the organizer's admin: what they check before
the services are asked (the services check again)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator

from events.domain import (
    MAX_TIER_INVENTORY,
    EventStatus,
    provisioning_seconds,
    sale_window_errors,
)
from events.models import Event, TicketTier
from events.services import EVENT_EDITABLE_FIELDS
from fairqueue.money import minor_digits, money_major, money_parse
from inventory.selectors import tier_held_tickets

DEFAULT_CURRENCY = Event._meta.get_field("currency").default


class EventAdminForm(forms.ModelForm):
    class Meta:
        model = Event
        fields = sorted(EVENT_EDITABLE_FIELDS)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        errors = sale_window_errors(
            sale_start=data.get("sale_start"),
            sale_end=data.get("sale_end"),
            prequeue_opens_at=data.get("prequeue_opens_at"),
        )
        for field, message in errors.items():
            self.add_error(field, message)
        return data


class TierInlineForm(forms.ModelForm):
    """A tier row. The price is typed and shown in the event currency's major
    unit (15000 means NGN 15,000.00) and stored in minor units."""

    price = forms.DecimalField(
        label="price",
        min_value=Decimal("0.01"),
        max_digits=14,
        decimal_places=2,
        help_text="In the event's currency, e.g. 15000 or 15000.50 for NGN 15,000.50.",
    )

    class Meta:
        model = TicketTier
        fields = ["name", "price", "inventory", "sort_order"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        inventory = self.fields["inventory"]
        assert isinstance(inventory, forms.IntegerField)  # the model's integer field
        inventory.min_value, inventory.max_value = 1, MAX_TIER_INVENTORY
        inventory.validators += [
            MinValueValidator(1),
            MaxValueValidator(
                MAX_TIER_INVENTORY, f"At most {MAX_TIER_INVENTORY:,} tickets per tier."
            ),
        ]
        inventory.widget.attrs.update(min=1, max=MAX_TIER_INVENTORY)
        inventory.help_text = (
            f"1 to {MAX_TIER_INVENTORY:,}. Its tickets are made when you save: "
            f"{MAX_TIER_INVENTORY:,} take about "
            f"{max(1, round(provisioning_seconds(MAX_TIER_INVENTORY)))} seconds."
        )
        currency = self.currency()
        if minor_digits(currency) == 0:
            self.fields["price"].widget.attrs["step"] = 1
        if self.instance.pk and self.instance.price:
            self.initial["price"] = money_major(self.instance.price, currency)

    def currency(self) -> str:
        """The event's currency. A new or draft event may change it in the
        same save, so the posted one counts there; once on sale the currency
        is read-only and the saved one counts."""
        saved = (
            Event.objects.filter(pk=self.instance.event_id).values_list("currency", "status")
            if self.instance.event_id
            else []
        )
        currency, status = next(iter(saved), (DEFAULT_CURRENCY, EventStatus.DRAFT))
        posted = self.data.get("currency") if self.is_bound else None
        if posted and status == EventStatus.DRAFT:
            return str(posted).upper()
        return currency

    def clean_price(self) -> int:
        try:
            price = money_parse(self.cleaned_data["price"], self.currency())
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        if price < 1:
            raise forms.ValidationError("The price must be above zero.")
        return price

    def clean_inventory(self) -> int:
        inventory = self.cleaned_data["inventory"]
        if self.instance.pk:
            held = tier_held_tickets(tier_id=self.instance.pk)
            if inventory < held:
                raise forms.ValidationError(
                    f"{held} tickets of this tier are already claimed or sold; "
                    "the inventory cannot go below that."
                )
        return inventory
