"""The event and tier forms of the organizer's admin: what they check before
the services are asked (the services check again)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import MinValueValidator

from events.domain import sale_window_errors
from events.models import Event, TicketTier
from events.services import EVENT_EDITABLE_FIELDS
from inventory.selectors import tier_held_tickets


class EventAdminForm(forms.ModelForm):
    class Meta:
        model = Event
        fields = sorted(EVENT_EDITABLE_FIELDS)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        errors = sale_window_errors(
            sale_start=data.get("sale_start"),
            sale_end=data.get("sale_end"),
            prequeue_opens_at=data.get("prequeue_opens_at"),
        )
        for field, message in errors.items():
            self.add_error(field, message)
        return data


class TierInlineForm(forms.ModelForm):
    class Meta:
        model = TicketTier
        fields = ["name", "price", "inventory", "sort_order"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("price", "inventory"):
            field = self.fields[name]
            field.min_value = 1
            field.validators.append(MinValueValidator(1))
            field.widget.attrs["min"] = 1

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
