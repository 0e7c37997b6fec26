"""The organizer reads their events' waiting list (each entry's place, the
tier wanted, its status and an offer's end) and the tickets returned for
resale (the ticket, where the return stands, the refund and where that
stands): read-only, their own events only."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ticket_code_display
from claims.models import IssuedTicket, TicketReturn
from payments.models import Refund
from queueing.models import QueueEntry, WaitlistEntry
from tests.support.admin import event_of
from tests.support.factories import CustomerFactory, TierFactory
from tests.support.payments import payment_row

pytestmark = pytest.mark.django_db

WAITING_LIST = "/admin/console/waitinglistentry/"
RETURNS = "/admin/console/return/"


def _cells(row: str) -> list[str]:
    found = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", cell).split()) for cell in found]


def table(response) -> list[dict[str, str]]:
    """The result list's rows as the page shows them: each cell's text by
    its column's heading."""
    html = response.content.decode()
    listing = html.split('id="result_list"', 1)[1].split("</table>", 1)[0]
    head, body = listing.split("<tbody>", 1)
    names = _cells(head)
    return [
        dict(zip(names, _cells(row), strict=True))
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


def entry(event, tier, status, score, *, email, **fields) -> WaitlistEntry:
    return WaitlistEntry.objects.create(
        event=event, customer=CustomerFactory(email=email), tier=tier, status=status,
        score=score, **fields,
    )  # fmt: skip


def test_the_organizer_reads_who_waits_their_place_and_their_offer(org_a, org_b):
    client, _, organizer = org_a
    event = event_of(organizer, status="SOLD_OUT", name="Mine")
    regular = event.tiers.get()
    vip = TierFactory(event=event, name="VIP", inventory=5, price=900_000)
    until = timezone.now() + timedelta(minutes=2)
    admission = QueueEntry.objects.create(
        event=event, customer=CustomerFactory(), status="ADMITTED", score=1,
        joined_at=timezone.now(), admission_expires_at=until,
    )  # fmt: skip
    entry(event, regular, "waiting", 10, email="ada@example.test")
    entry(event, None, "waiting", 15, email="bola@example.test")
    entry(event, regular, "waiting", 20, email="chi@example.test")
    entry(event, vip, "waiting", 12, email="dayo@example.test")
    entry(event, vip, "offered", 5, email="eze@example.test", offered_at=timezone.now(),
          offer_tier=vip, queue_entry=admission)  # fmt: skip
    entry(event, regular, "left", 1, email="femi@example.test")
    theirs = event_of(org_b[2], status="SOLD_OUT", name="Theirs")
    entry(theirs, None, "waiting", 1, email="zed@example.test")

    response = client.get(WAITING_LIST, {"o": "1"})  # by place

    assert response.status_code == 200
    rows = {row["Customer"]: row for row in table(response)}
    assert set(rows) == {f"{n}@example.test" for n in ("ada", "bola", "chi", "dayo", "eze",
                                                       "femi")}  # fmt: skip
    # A ticket of a tier goes first to who wants it or any tier, in order;
    # times as dates a person reads (not ISO strings).
    joined = timezone.localtime(timezone.now()).strftime("%-d %b %H:%M")
    until_shown = timezone.localtime(until).strftime("%-d %b %H:%M")
    shown = {e: (r["Place"], r["Tier wanted"], r["Status"]) for e, r in rows.items()}
    waiting = f"waiting since {joined}"
    assert shown == {
        "ada@example.test": ("1", "Regular", waiting),
        "bola@example.test": ("3", "any tier", waiting),  # after ada and dayo
        "chi@example.test": ("3", "Regular", waiting),  # after ada and bola
        "dayo@example.test": ("1", "VIP", waiting),
        "eze@example.test": ("—", "VIP", f"offered 1 x VIP, open until {until_shown}"),
        "femi@example.test": ("—", "Regular", "left"),
    }
    # Read-only, and another organizer's list is not theirs.
    assert client.get(f"{WAITING_LIST}add/").status_code == 403
    assert "zed@example.test" not in response.content.decode()
    assert org_b[0].get(WAITING_LIST).status_code == 200
    assert "ada@example.test" not in org_b[0].get(WAITING_LIST).content.decode()


def returned(payment, *, seat: int, status: str, refund: Refund | None = None) -> TicketReturn:
    claim = payment.claim
    ticket = IssuedTicket.objects.create(
        code=f"RET{seat}{claim.pk.hex[:12]}"[:16].upper(), claim=claim, event=claim.event,
        tier=claim.tier, customer=claim.customer, holder_email=claim.customer.email, seat=seat,
        issued_at=timezone.now(),
    )  # fmt: skip
    return TicketReturn.objects.create(
        ticket=ticket, claim=claim, event=claim.event, ticket_row=claim.tickets.first(),
        status=status, fee=50_000, refund_amount=450_000, currency="NGN",
        refund_id=refund.pk if refund else None,
    )  # fmt: skip


def test_the_organizer_reads_the_returns_and_where_each_refund_stands(org_a, org_b):
    client, _, organizer = org_a
    tier = event_of(organizer, name="Mine").tiers.get()
    payment = payment_row(reference="fq-returns-a", amount=1_000_000, status="CONFIRMED", tier=tier)
    paid_back = Refund.objects.create(
        payment=payment, amount=450_000, currency="NGN", for_resale=True, status="PROCESSED",
        requested_by="system", next_check_at=timezone.now(),
    )  # fmt: skip
    failed = Refund.objects.create(
        payment=payment, amount=450_000, currency="NGN", for_resale=True, status="FAILED",
        requested_by="system", next_check_at=timezone.now(),
    )  # fmt: skip
    on_resale = returned(payment, seat=1, status="ON_RESALE")
    resold = returned(payment, seat=2, status="RESOLD", refund=paid_back)
    refund_failed = returned(payment, seat=3, status="RESOLD", refund=failed)
    withdrawn = returned(payment, seat=4, status="WITHDRAWN")
    theirs = payment_row(
        reference="fq-returns-b", amount=500_000, status="CONFIRMED",
        tier=event_of(org_b[2], name="Theirs").tiers.get(),
    )  # fmt: skip
    returned(theirs, seat=1, status="ON_RESALE")

    response = client.get(RETURNS)
    since = timezone.localtime(on_resale.created_at).strftime("%-d %b %H:%M")

    assert response.status_code == 200
    code = {r: ticket_code_display(r.ticket.code) for r in (on_resale, resold, refund_failed,
                                                            withdrawn)}  # fmt: skip
    rows = {row["Ticket and holder"].split(" ")[0]: row for row in table(response)}
    shown = {c: (r["Status"], r["Refund to the holder"], r["Fee kept"]) for c, r in rows.items()}
    assert shown == {
        code[on_resale]: (f"on resale since {since}", "NGN 4,500.00 once resold", "—"),
        code[resold]: ("resold", "NGN 4,500.00, paid back", "NGN 500.00"),
        code[refund_failed]: ("resold", "NGN 4,500.00, failed (platform staff retry it)",
                              "NGN 500.00"),
        code[withdrawn]: ("withdrawn", "none", "—"),
    }  # fmt: skip
    assert f"/tickets/{resold.ticket.code}/" in response.content.decode()
    assert all(payment.claim.customer.email in row["Ticket and holder"] for row in rows.values())
    assert client.get(f"{RETURNS}add/").status_code == 403
    assert len(org_b[0].get(RETURNS).context["cl"].result_list) == 1
