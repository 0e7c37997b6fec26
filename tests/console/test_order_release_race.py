"""An organizer releasing an unpaid order while its customer starts paying for
it: exactly one of the two wins. Either the order is released (its tickets
back on sale, no payment started) or the payment starts (the release is
refused with payment_in_flight, the tickets stay held). Never both: a
customer must not pay for tickets already given back (invariant 5)."""

import time

import pytest
from rest_framework.test import APIClient

from claims.models import Claim
from console.services import order_release
from fairqueue.errors import Conflict, InvalidTransition
from inventory.models import Ticket
from payments.models import Payment
from tests.support.factories import TierFactory, bearer
from tests.support.payments import make_claim
from tests.support.races import race

pytestmark = pytest.mark.django_db(transaction=True)

LIVE = ("INITIALIZING", "PENDING")


def release_or_pay(claim: Claim, *, organizer_late_by: float) -> list:
    headers = bearer(claim.customer)

    def act(who: str):
        if who == "organizer":
            time.sleep(organizer_late_by)
            return order_release(claim_id=claim.pk, actor="organizer@example.test")
        return APIClient().post(f"/api/v1/claims/{claim.id}/payments/", format="json", **headers)

    return race(act, ["organizer", "customer"])


def test_a_release_and_a_payment_never_both_win(sandbox):
    tier = TierFactory(inventory=20)
    outcomes = set()
    for round_ in range(10):
        claim = make_claim(tier=tier)
        # Every other round the organizer comes a little later, so both
        # orders of arrival (and the overlap between them) are exercised.
        released, paid = release_or_pay(claim, organizer_late_by=0.2 * (round_ % 2))
        claim.refresh_from_db()
        live = Payment.objects.filter(claim=claim, status__in=LIVE).count()
        held = Ticket.objects.filter(claim=claim).count()

        if isinstance(released, Claim):
            outcomes.add("released")
            assert claim.status == "RELEASED" and claim.release_reason == "staff"
            assert held == 0 and live == 0
            assert paid.status_code == 409, paid.json()
        else:
            outcomes.add("paying")
            assert isinstance(released, (Conflict, InvalidTransition)), released
            assert paid.status_code == 201, paid.json()
            assert claim.status == "CLAIMED" and claim.payment_in_flight
            assert held == 1 and live == 1
    assert outcomes == {"released", "paying"}
