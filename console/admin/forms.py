"""The event and tier forms of the organizer's admin: what they check before
the services are asked (the services check again)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils import timezone

from events.domain import (
    MAX_TIER_INVENTORY,
    EventStatus,
    provisioning_seconds,
    sale_window_errors,
)
from events.models import Event, TicketTier
from events.services import EVENT_EDITABLE_FIELDS
from fairqueue.forms import MoneyInput
from fairqueue.money import minor_digits, money_major, money_parse
from inventory.selectors import tier_held_tickets

DEFAULT_CURRENCY = Event._meta.get_field("currency").default


def money_field(currency: str, *, label: str, help_text: str, minimum: str) -> forms.DecimalField:
    """A form field for an amount typed in ``currency``'s major unit."""
    field = forms.DecimalField(
        label=label,
        min_value=Decimal(minimum),
        max_digits=14,
        help_text=help_text,
        widget=MoneyInput(currency=currency),
    )
    field.widget.attrs.update(step=1 if minor_digits(currency) == 0 else "0.01", min=minimum)
    return field


def event_currency(event: Event | None, data: Any, bound: bool) -> str:
    """The currency an event's amounts are typed in: the saved one once on
    sale (read-only then); a draft's or a new event's as posted, since it
    may change in the same save."""
    saved = event is not None and not event._state.adding
    status = event.status if saved and event else EventStatus.DRAFT
    posted = data.get("currency") if bound else None
    if posted and status == EventStatus.DRAFT:
        return str(posted).upper()
    return event.currency if saved and event else DEFAULT_CURRENCY


class EventAdminForm(forms.ModelForm):
    """Amounts are typed in the currency's major unit (the return fee as
    the tiers' prices), stored in minor units. A field's lower bound is
    said in words, never as a database constraint's name."""

    class Meta:
        model = Event
        fields = sorted(EVENT_EDITABLE_FIELDS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        currency = event_currency(self.instance, self.data, self.is_bound)
        if "return_fee" in self.fields:
            self.fields["return_fee"] = money_field(
                currency,
                label="Return fee",
                minimum="0",
                help_text=f"In {currency}, per resold ticket (e.g. 500 for {currency} 500): kept "
                "from its refund to the buyer who returned it, and shown to them before they "
                "return it. At most the ticket's price.",
            )
            self.initial["return_fee"] = money_major(self.instance.return_fee or 0, currency)
        for name, words in (
            ("max_tickets_per_customer", "A customer must be able to buy at least 1 ticket."),
            ("admission_batch_size", "At least 1 customer is admitted at a time."),
        ):
            field = self.fields.get(name)
            if isinstance(field, forms.IntegerField):
                field.min_value = 1
                field.validators.append(MinValueValidator(1, words))
                field.widget.attrs["min"] = 1

    def clean_return_fee(self) -> int:
        currency = event_currency(self.instance, self.data, self.is_bound)
        try:
            return money_parse(self.cleaned_data["return_fee"], currency)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        errors = sale_window_errors(
            sale_start=data.get("sale_start"),
            sale_end=data.get("sale_end"),
            prequeue_opens_at=data.get("prequeue_opens_at"),
        )
        starts_at, sale_start = data.get("starts_at"), data.get("sale_start")
        if starts_at and sale_start and sale_start >= starts_at and "sale_start" not in errors:
            show = timezone.localtime(starts_at).strftime("%-d %b %Y %H:%M")
            errors["sale_start"] = (
                f"The sale opens after the show starts ({show}): nobody could buy a ticket "
                "in time. Check the sale's start and the show's date."
            )
        for field, message in errors.items():
            self.add_error(field, message)
        return data


class TierInlineForm(forms.ModelForm):
    """A tier row. The price is typed and shown in the event currency's major
    unit (15000 means NGN 15,000.00) and stored in minor units."""

    price = forms.DecimalField(label="price", max_digits=14)

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
        # Narrow inputs: the tier table, with its live counts, fits 1280 px.
        for name, width in (("name", "14em"), ("inventory", "6.5em"), ("sort_order", "4em")):
            self.fields[name].widget.attrs["style"] = f"width:{width}"
        inventory.help_text = (
            f"1 to {MAX_TIER_INVENTORY:,}. Its tickets are made when you save: "
            f"{MAX_TIER_INVENTORY:,} take about "
            f"{max(1, round(provisioning_seconds(MAX_TIER_INVENTORY)))} seconds."
        )
        currency = self.currency()
        self.fields["price"] = money_field(
            currency,
            label="price",
            minimum="0.01" if minor_digits(currency) else "1",
            help_text=f"In {currency}, e.g. 15000 for {currency} 15,000.00.",
        )
        self.fields["price"].widget.attrs["style"] = "width:9em"
        if self.instance.pk and self.instance.price:
            self.initial["price"] = money_major(self.instance.price, currency)

    def currency(self) -> str:
        """The event's currency (``event_currency``)."""
        event_id = self.instance.event_id
        event = Event.objects.filter(pk=event_id).first() if event_id else None
        return event_currency(event, self.data, self.is_bound)

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
