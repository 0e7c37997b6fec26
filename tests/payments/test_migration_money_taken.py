"""Payments an older release left holding money with no way back (a success
of the wrong amount flagged and left FAILED or live) are put on the refund
path by the migration, and reconciliation refunds them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from claims.models import Claim
from payments.models import Payment
from payments.services import payments_reconcile
from tests.support.invariants import failing
from tests.support.payments import make_claim, pending_payment, reload, transitions

BEFORE = [("payments", "0004_refunds_disputes_incidents")]
PAID_WRONGLY = {
    "gateway_status": "success",
    "paid_amount": 100,
    "paid_currency": "NGN",
    "flag_reason": "amount 100 != expected 500000",
}


@pytest.mark.django_db(transaction=True)
def test_money_left_failed_or_live_goes_the_refund_path(api, client, sandbox):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    # As the older release left them: flagged, status unchanged.
    failed = pending_payment(api)
    sandbox.pay(failed.reference, outcome="failed")
    assert client.get("/payments/return/", {"reference": failed.reference}).status_code == 200
    assert reload(failed).status == "FAILED"
    live = pending_payment(api, make_claim())
    for payment in (failed, live):
        sandbox.pay(payment.reference, send_webhook=False, amount=100)
        Payment.objects.filter(pk=payment.pk).update(**PAID_WRONGLY)
    declined = pending_payment(api)  # no money taken: stays as it is
    sandbox.pay(declined.reference, outcome="failed")
    client.get("/payments/return/", {"reference": declined.reference})
    assert reload(declined).status == "FAILED"

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert transitions(reload(failed))[-1] == ("FAILED", "REFUND_REQUIRED")
    assert transitions(reload(live))[-1] == ("PENDING", "REFUND_REQUIRED")
    assert reload(declined).status == "FAILED"
    claim = Claim.objects.get(pk=live.claim_id)
    assert (claim.status, claim.payment_in_flight) == ("CLAIMED", False)  # it expires as usual
    for payment in (failed, live):
        assert failing(payment.claim.event, redis=False) == {}

    assert payments_reconcile() == {"auto_refund:pending": 2}
    for payment in (failed, live):
        payment = reload(payment)
        assert payment.status == "REFUND_PENDING"
        assert payment.refunds.get().amount == 100
    assert reload(declined).refunds.count() == 0
