"""A transfer goes only to an address sign-in would take (the recipient
accepts signed in with it): no quoted local part, no address literal, no
dotless domain; 422 and nothing written, counted or sent otherwise. An
international domain is stored and mailed in ASCII, as at sign-in."""

from __future__ import annotations

import pytest

from claims.models import TicketEvent, TicketTransfer
from claims.services import ticket_transfer_create
from fairqueue.errors import InvalidInput
from fairqueue.redis import get_redis
from tests.claims.resale_support import admitted, resale_event
from tests.support.factories import bearer

pytestmark = pytest.mark.django_db

REFUSED = [
    "victim@[127.0.0.1]",
    "victim@[IPv6:::1]",
    '"victim"@example.test',
    '"vic tim"@example.test',
    "root@localhost",
]


@pytest.fixture
def holder(shop):
    tier = resale_event(tickets=1)
    (who,) = admitted(tier.event, 1)
    return shop(tier, who)


def nothing_happened(mailoutbox) -> None:
    assert not TicketTransfer.objects.exists()
    assert not TicketEvent.objects.filter(kind="transfer_offered").exists()
    assert [m for m in mailoutbox if "was sent to you" in m.subject] == []
    assert get_redis().keys("fq:rl:{transfer_*") == []  # no limit counted


@pytest.mark.parametrize("email", REFUSED)
def test_addresses_sign_in_refuses_are_refused_and_nothing_is_sent(
    api, holder, email, mailoutbox, django_capture_on_commit_callbacks, eager_tasks
):
    (ticket,) = holder.tickets()
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(
            f"/api/v1/tickets/{ticket.code}/transfer/",
            {"email": email},
            format="json",
            **bearer(holder.customer),
        )
    assert answer.status_code == 422, answer.content
    error = answer.json()["error"]
    assert error["code"] == "validation_error" and "email" in error["details"]["fields"]
    nothing_happened(mailoutbox)


@pytest.mark.parametrize("email", REFUSED)
def test_the_service_refuses_them_too(holder, email, mailoutbox):
    (ticket,) = holder.tickets()
    with pytest.raises(InvalidInput) as refused:
        ticket_transfer_create(code=ticket.code, customer_id=holder.customer.pk, email=email)
    assert (refused.value.status, refused.value.details) == (422, {"email": email})
    nothing_happened(mailoutbox)


def test_an_international_domain_is_stored_and_mailed_in_ascii(
    api, holder, mailoutbox, django_capture_on_commit_callbacks, eager_tasks
):
    (ticket,) = holder.tickets()
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(
            f"/api/v1/tickets/{ticket.code}/transfer/",
            {"email": "Friend@Exämple.test"},
            format="json",
            **bearer(holder.customer),
        )
    assert answer.status_code == 201, answer.content
    assert answer.json()["to_email"] == "friend@xn--exmple-cua.test"
    transfer = TicketTransfer.objects.get()
    assert (transfer.to_email, transfer.to_canonical) == (
        "friend@xn--exmple-cua.test",
        "friend@xn--exmple-cua.test",
    )
    (offer,) = [m for m in mailoutbox if "was sent to you" in m.subject]
    assert offer.to == ["friend@xn--exmple-cua.test"]
