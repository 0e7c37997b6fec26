"""A payment reference is no key to its tickets: the return page the
gateway sends the buyer back to shows the payment's status and nothing a
stranger holding the reference could use (references travel through logs,
exports, receipts, proxies and browser history). The tickets come with the
customer's sign-in; every answer that shows a ticket code is never stored."""

from __future__ import annotations

import pytest

from claims.domain import ticket_code_display
from claims.models import IssuedTicket
from tests.support.factories import bearer

pytestmark = pytest.mark.django_db


def codes_in(html: str, tickets: list[IssuedTicket]) -> list[str]:
    return [
        t.code
        for t in tickets
        if t.code in html or ticket_code_display(t.code) in html or t.code.lower() in html
    ]


def test_the_return_page_shows_the_status_and_no_ticket(paid_sale, client):
    payment = paid_sale.paid[0]
    tickets = list(IssuedTicket.objects.filter(claim_id=payment.claim_id))

    page = client.get("/payments/return/", {"reference": payment.reference})
    html = page.content.decode()

    assert page.status_code == 200
    assert "<h1>Paid</h1>" in html
    assert len(tickets) == 1
    assert codes_in(html, tickets) == []
    assert "/tickets/" in html  # where a signed-in buyer finds them
    assert "qr.svg" not in html
    assert "no-store" in page["Cache-Control"]


def test_a_declined_payments_return_page_is_not_stored_either(paid_sale, client):
    page = client.get("/payments/return/", {"reference": paid_sale.declined.reference})

    assert page.status_code == 200
    assert "no-store" in page["Cache-Control"]


def test_every_answer_that_shows_a_ticket_code_is_never_stored(paid_sale, client, api):
    payment = paid_sale.paid[0]
    ticket = IssuedTicket.objects.get(claim_id=payment.claim_id)
    auth = bearer(payment.customer)
    answers = {
        "ticket page": client.get(f"/tickets/{ticket.code}/"),
        "ticket QR": client.get(f"/tickets/{ticket.code}/qr.svg"),
        "my tickets": api.get("/api/v1/me/tickets/", **auth),
        "my event": api.get(f"/api/v1/events/{paid_sale.event.pk}/me/", **auth),
    }

    shown = {name: codes_in(a.content.decode(), [ticket]) != [] for name, a in answers.items()}
    stored = {name: "no-store" in a.get("Cache-Control", "") for name, a in answers.items()}

    assert {name: a.status_code for name, a in answers.items()} == dict.fromkeys(answers, 200)
    assert shown == {"ticket page": True, "ticket QR": False, "my tickets": True, "my event": True}
    assert stored == dict.fromkeys(answers, True)  # the QR is the code, drawn
