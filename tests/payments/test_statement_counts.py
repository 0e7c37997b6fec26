"""What a ticket's payment costs Postgres: the payment start and the webhook
in few statements, each written once (no ORM compiling them per request).
Counted as Django sends them; the savepoints and the lock timeout's
settings are left out (inside a test's transaction every step is nested,
which adds them)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.domain import ClaimStatus
from customers.revocation import auth_state_warm
from tests.support.factories import bearer
from tests.support.payments import make_claim, pending_payment, post_webhook, reload

pytestmark = pytest.mark.django_db

NESTING = ("SAVEPOINT", "RELEASE SAVEPOINT", "SELECT current_setting('lock_timeout')",
           "SELECT set_config('lock_timeout'")  # fmt: skip


def statements(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(NESTING)]


def test_a_payment_start_takes_four_statements(api, sandbox):
    """Claim locked with its customer's email (its flag says it has no live
    payment, so none is looked for); the payment, its first log entry and
    the claim's payment flag in one statement; then the payment locked; the
    gateway's answer logged, PENDING with its log entry and the incident
    closed (if any), in one statement."""
    claim = make_claim()
    auth_state_warm(customer_id=claim.customer_id)  # as the buyer's earlier requests left it

    with CaptureQueriesContext(connection) as queries:
        response = api.post(
            f"/api/v1/claims/{claim.id}/payments/", format="json", **bearer(claim.customer)
        )

    assert response.status_code == 201
    assert response.json()["status"] == "PENDING"
    assert response.json()["authorization_url"]
    assert len(statements(queries)) == 4, statements(queries)


def test_a_charge_success_webhook_takes_five_statements(api, client, sandbox):
    """Payment locked, receipt and log entry, claim locked, claim confirmed
    with its tickets issued, the payment CONFIRMED with its log entry."""
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)

    with CaptureQueriesContext(connection) as queries:
        response = post_webhook(client, body, signature)

    assert response.json() == {"status": "processed"}
    assert len(statements(queries)) == 5, statements(queries)
    payment = reload(payment)
    assert payment.status == "CONFIRMED"
    claim = reload(payment.claim)
    assert (claim.status, claim.payment_in_flight) == (ClaimStatus.CONFIRMED, False)
    assert claim.issued_tickets.count() == 1
    assert [e.kind for e in payment.events.order_by("created_at", "id")][-2:] == [
        "webhook_received",
        "state_change",
    ]


def test_a_repeated_webhook_is_logged_in_its_one_statement_and_changes_nothing(
    api, client, sandbox
):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)
    assert post_webhook(client, body, signature).json() == {"status": "processed"}

    with CaptureQueriesContext(connection) as queries:
        again = post_webhook(client, body, signature)

    assert again.json() == {"status": "duplicate"}
    assert len(statements(queries)) == 2  # the payment locked; receipt refused, logged
    assert reload(payment).webhooks.count() == 1
    assert [e.kind for e in reload(payment).events.order_by("created_at", "id")][-1] == (
        "webhook_duplicate"
    )
