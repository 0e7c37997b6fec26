"""The organizer's admin as a browser drives it: URLs, the event form as
posted, actions, messages."""

from __future__ import annotations

from datetime import timedelta
from html.parser import HTMLParser

from django.contrib.messages import get_messages
from django.utils import timezone

from events.models import Event
from tests.support.factories import EventFactory, TierFactory

LIST_URL = "/admin/events/event/"
ADD_URL = "/admin/events/event/add/"


def change_url(event: Event) -> str:
    return f"/admin/events/event/{event.pk}/change/"


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def event_of(organizer, *, status="ACTIVE", inventory=10, **fields) -> Event:
    event = EventFactory(organizer=organizer, status=status, **fields)
    TierFactory(event=event, inventory=inventory, name="Regular", price=500_000)
    return event


def _dt(prefix: str, value) -> dict:
    if value is None:
        return {f"{prefix}_0": "", f"{prefix}_1": ""}
    value = timezone.localtime(value)
    return {f"{prefix}_0": value.strftime("%Y-%m-%d"), f"{prefix}_1": value.strftime("%H:%M:%S")}


def event_post(
    organizer,
    *,
    name="Wizkid Live",
    start=None,
    end=None,
    prequeue=None,
    new_tiers=(),
    tiers=(),
    event=None,
):
    """The admin form as a browser posts it. ``tiers``: existing TicketTier
    objects with their new (name, price, inventory); ``new_tiers``: added rows.
    Prices as typed: in the currency's major unit."""
    start = start or (timezone.now() + timedelta(days=1)).replace(microsecond=0)
    end = end or start + timedelta(days=1)
    data = {
        "organizer": organizer.pk,
        "name": name,
        "description": "",
        "venue": "Eko Hotel",
        "currency": "NGN",
        "max_tickets_per_customer": 2,
        "admission_batch_size": 100,
        "admission_window_seconds": 300,
        "max_active_admitted": 1000,
        "return_fee": 0,
        "holder_shown": "on",
        **_dt("returns_until", None),
        **_dt("starts_at", None),
        **_dt("sale_start", start),
        **_dt("sale_end", end),
        **_dt("prequeue_opens_at", prequeue),
        "tiers-TOTAL_FORMS": len(tiers) + len(new_tiers),
        "tiers-INITIAL_FORMS": len(tiers),
        "tiers-MIN_NUM_FORMS": 0,
        "tiers-MAX_NUM_FORMS": 1000,
    }
    rows = [(t.pk, values) for t, values in tiers] + [(None, values) for values in new_tiers]
    for i, (pk, (tier_name, price, inventory)) in enumerate(rows):
        data.update(
            {
                f"tiers-{i}-id": pk or "",
                f"tiers-{i}-event": event.pk if event else "",
                f"tiers-{i}-name": tier_name,
                f"tiers-{i}-price": price,
                f"tiers-{i}-inventory": inventory,
                f"tiers-{i}-sort_order": i,
            }
        )
    return data


def run_action(client, action: str, *events: Event):
    return client.post(
        LIST_URL, {"action": action, "_selected_action": [str(e.pk) for e in events]}
    )


class _Forms(HTMLParser):
    """Each form of a page with the fields a browser would post (inputs,
    text areas and selects, with their values as rendered)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, str]] = []
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append({})
        elif not self.forms or "name" not in a:
            if tag == "option" and self._select and self._select not in self.forms[-1]:
                self.forms[-1][self._select] = a.get("value", "")
        elif tag in ("input", "textarea"):
            self.forms[-1][a["name"]] = a.get("value", "")
        elif tag == "select":
            self._select = a["name"]


def page_forms(html: str) -> list[dict[str, str]]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms
