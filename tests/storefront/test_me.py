"""GET events/{id}/me/ (where am I) and GET me/tickets/: what a page rebuilds
itself from after a refresh, in a new tab or on another device."""

from __future__ import annotations

import uuid

import pytest

from claims.domain import ReleaseReason
from claims.services import claim_confirm, claim_create, claim_release
from queueing import services as queue
from tests.support.factories import CustomerFactory, bearer
from tests.support.sales import admit_directly, claim_one, on_sale, pay

pytestmark = pytest.mark.django_db


def me(api, event_id, customer):
    return api.get(f"/api/v1/events/{event_id}/me/", **bearer(customer))


def test_nobody_in_line_yet(api):
    tier = on_sale(tickets=3)
    customer = CustomerFactory()

    body = me(api, tier.event_id, customer).json()

    assert body == {
        "event_id": str(tier.event_id),
        "queue": None,
        "claim": None,
        "payment": None,
        "tickets": [],
    }


def test_waiting_shows_the_place_and_the_entry(api):
    tier = on_sale(tickets=3)
    first, second = CustomerFactory(), CustomerFactory()
    queue.queue_join(event_id=tier.event_id, customer_id=first.id)
    joined = queue.queue_join(event_id=tier.event_id, customer_id=second.id)

    body = me(api, tier.event_id, second).json()

    assert body["queue"]["status"] == "WAITING"
    assert body["queue"]["position"] == 2
    assert body["queue"]["queue_entry_id"] == str(joined.queue_entry_id)
    assert body["queue"]["joined_at"]
    assert "admission_token" not in body["queue"]
    assert (body["claim"], body["payment"], body["tickets"]) == (None, None, [])


def test_admitted_carries_the_token_and_its_expiry(api):
    tier = on_sale(tickets=3)
    (admitted,) = admit_directly(tier.event, [CustomerFactory()])

    body = me(api, tier.event_id, admitted.customer).json()

    assert body["queue"]["status"] == "ADMITTED"
    assert body["queue"]["admission_token"]
    assert body["queue"]["admission_expires_at"]


def test_a_held_claim_and_its_payment_in_plain_words(api):
    tier = on_sale(tickets=3, price=500_000)
    (admitted,) = admit_directly(tier.event, [CustomerFactory()])
    claim = claim_create(
        event_id=tier.event_id,
        customer_id=admitted.customer.id,
        admission_token=admitted.token,
        tier_id=tier.id,
        quantity=1,
    )
    payment = pay(claim)
    type(payment).objects.filter(pk=payment.pk).update(
        authorization_url="http://127.0.0.1:8002/checkout/abc"
    )

    body = me(api, tier.event_id, admitted.customer).json()

    assert body["queue"]["status"] == "COMPLETED"
    c = body["claim"]
    assert (c["claim_id"], c["status"], c["tier_id"], c["quantity"], c["amount"]) == (
        str(claim.pk),
        "CLAIMED",
        str(tier.id),
        1,
        500_000,
    )
    assert c["tier_name"] == tier.name
    assert c["status_text"] == "Held for you: pay to confirm"
    assert c["expires_at"]
    p = body["payment"]
    assert (p["payment_id"], p["status"], p["reference"]) == (
        str(payment.pk),
        "PENDING",
        payment.reference,
    )
    assert p["status_text"] == "Waiting for your payment"
    assert p["authorization_url"] == "http://127.0.0.1:8002/checkout/abc"
    assert body["tickets"] == []


def test_after_paying_the_tickets_are_there_and_after_a_refund_they_say_cancelled(
    api, django_capture_on_commit_callbacks
):
    tier = on_sale(tickets=3)
    (admitted,) = admit_directly(tier.event, [CustomerFactory()])
    claim = claim_create(
        event_id=tier.event_id,
        customer_id=admitted.customer.id,
        admission_token=admitted.token,
        tier_id=tier.id,
        quantity=1,
    )
    claim_confirm(claim_id=claim.pk)

    paid = me(api, tier.event_id, admitted.customer).json()
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=claim.pk, reason=ReleaseReason.REFUNDED)
    refunded = me(api, tier.event_id, admitted.customer).json()

    assert paid["claim"]["status"] == "CONFIRMED"
    (ticket,) = paid["tickets"]
    assert (ticket["status"], ticket["status_text"], ticket["seat"]) == ("VALID", "Valid", 1)
    assert len(ticket["code"]) == 19  # ABCD-2345-EFGH-6789
    assert ticket["url"] == f"/tickets/{ticket['code'].replace('-', '')}/"
    assert refunded["claim"]["release_text"] == "Your purchase was cancelled"
    assert [(t["code"], t["status_text"]) for t in refunded["tickets"]] == [
        (ticket["code"], "Cancelled")
    ]


def test_no_raw_status_word_reaches_a_customer_as_text(api):
    """Every *_text is plain words, even for statuses the page never expects."""
    from storefront.wording import PAYMENT_TEXT, words

    assert words(PAYMENT_TEXT, "REFUND_REQUIRED") == (
        "Paid, but this payment could not be kept: a refund is on its way"
    )
    assert words(PAYMENT_TEXT, "SOMETHING_NEW") == "Being processed"
    assert all("_" not in text and not text.isupper() for text in PAYMENT_TEXT.values())


def test_me_needs_a_customer_token_and_a_known_event(api):
    tier = on_sale(tickets=3)
    assert api.get(f"/api/v1/events/{tier.event_id}/me/").status_code == 401
    unknown = me(api, uuid.uuid4(), CustomerFactory())
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "event_not_found")


def test_my_tickets_lists_mine_only_newest_first(api):
    customer, stranger = CustomerFactory(), CustomerFactory()
    tiers = [on_sale(tickets=3, name=f"Gig {n}", venue="Eko Hotel") for n in range(2)]
    for tier in [*tiers, on_sale(tickets=3)]:
        owner = stranger if tier not in tiers else customer
        (admitted,) = admit_directly(tier.event, [owner])
        claim = claim_create(
            event_id=tier.event_id,
            customer_id=owner.id,
            admission_token=admitted.token,
            tier_id=tier.id,
            quantity=1,
        )
        claim_confirm(claim_id=claim.pk)

    response = api.get("/api/v1/me/tickets/", **bearer(customer))

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["event_name"] for r in results] == ["Gig 1", "Gig 0"]
    assert {r["venue"] for r in results} == {"Eko Hotel"}
    assert api.get("/api/v1/me/tickets/").status_code == 401


@pytest.mark.parametrize(
    ("paid", "words_start"),
    [
        ((4_000, "NGN"), "The amount paid did not match the price"),
        ((5_000, "USD"), "The amount paid did not match the price"),
        ((5_000, "NGN"), "Paid, but this payment could not be kept"),  # a second charge
    ],
)
def test_a_payment_on_the_refund_path_says_why_in_plain_words(api, client, paid, words_start):
    from tests.support.payments import payment_row

    payment = payment_row(reference=f"fq-{uuid.uuid4().hex[:24]}", amount=5_000)
    type(payment).objects.filter(pk=payment.pk).update(
        status="REFUND_REQUIRED", paid_amount=paid[0], paid_currency=paid[1]
    )

    body = me(api, payment.claim.event_id, payment.customer).json()
    page = client.get("/payments/return/", {"reference": payment.reference})

    assert body["payment"]["status_text"].startswith(words_start)
    assert words_start in page.content.decode()


def test_my_holds_are_the_unpaid_claims_still_running(api):
    tier = on_sale(tickets=3)
    other = on_sale(tickets=3)
    customer = CustomerFactory()
    (here,) = admit_directly(tier.event, [customer])
    (there,) = admit_directly(other.event, [customer])
    held = claim_one(tier, here)
    paid = claim_one(other, there)
    claim_confirm(claim_id=paid.pk)

    body = api.get("/api/v1/me/holds/", **bearer(customer)).json()

    assert body == {
        "results": [
            {
                "claim_id": str(held.pk),
                "event_id": str(tier.event_id),
                "event_name": tier.event.name,
                "quantity": 1,
                "expires_at": held.expires_at.isoformat(),
                "paying": False,
                "url": f"/events/{tier.event_id}/queue/",
            }
        ]
    }
    assert api.get("/api/v1/me/holds/", **bearer(CustomerFactory())).json() == {"results": []}
    assert api.get("/api/v1/me/holds/").status_code == 401
