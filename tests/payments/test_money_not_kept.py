"""Money the gateway took that no ticket keeps goes back (invariants 5 and 7).

A success with the wrong amount or currency is never kept, whatever it finds:
a live payment on its claim, a payment already failed (its claim released,
its tickets free or gone), or a claim another payment has paid. Each goes
REFUND_REQUIRED, is refunded automatically (``PAYSTACK_AUTO_REFUND``) or by
one staff action, and never confirms or re-instates a claim. A refund made in
the gateway's dashboard for such a payment settles it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from claims.domain import ClaimStatus, ReleaseReason
from claims.models import Claim
from claims.services import claim_release, claims_expire
from fairqueue.errors import InvalidTransition
from fairqueue.faults import InjectedFault, fault_armed
from inventory.models import Ticket
from payments.models import Payment, Refund
from payments.services import (
    paying_claims_expire,
    payment_fail_and_release,
    payment_initialize,
    payment_mark_refunded,
    payment_refund_by_staff,
    payments_reconcile,
)
from payments.services.outcomes import apply_failure, payment_lock
from tests.support.factories import CustomerFactory, EventFactory, TierFactory
from tests.support.invariants import failing
from tests.support.payments import (
    held_tickets,
    make_claim,
    pending_payment,
    post_webhook,
    reload,
    transitions,
)

pytestmark = pytest.mark.django_db

WRONG = 100  # kobo, where far more was asked for


def tier_of(inventory: int):
    """A tier whose event lets a customer buy two tickets."""
    return TierFactory(inventory=inventory, event=EventFactory(max_tickets_per_customer=2))


@pytest.fixture
def gateway(sandbox):
    """Webhooks delivered by hand (the test client), refunds settled on demand."""
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    return sandbox


def deliver(client, body_and_signature) -> None:
    assert post_webhook(client, *body_and_signature).json() == {"status": "processed"}


def wrong_success(client, gateway, payment: Payment, **reported) -> Payment:
    """The customer paid, and the gateway reports other money than we asked for."""
    gateway.pay(payment.reference, send_webhook=False, **(reported or {"amount": WRONG}))
    deliver(client, gateway.webhook(payment.reference))
    return reload(payment)


def declined(client, gateway, payment: Payment) -> Payment:
    """A decline, found when the customer came back: FAILED (the claim stays
    held until its expiry)."""
    gateway.pay(payment.reference, outcome="failed")
    assert client.get("/payments/return/", {"reference": payment.reference}).status_code == 200
    payment = reload(payment)
    assert payment.status == "FAILED"
    return payment


# --- the states a wrong success can find ------------------------------------------


@dataclass
class Found:
    payment: Payment
    claim: Claim
    tickets_held: int  # by the claim, before the success arrives
    tier_free: int  # free tickets of the tier, before the success arrives


def _found(payment: Payment) -> Found:
    claim = reload(payment.claim)
    free = Ticket.objects.filter(tier_id=claim.tier_id, claim__isnull=True).count()
    return Found(reload(payment), claim, held_tickets(claim), free)


def live_on_its_claim(api, client, gateway, settings) -> Found:
    return _found(pending_payment(api, make_claim(tier=tier_of(3), quantity=2)))


def initializing_on_its_claim(api, client, gateway, settings) -> Found:
    """The gateway has the transaction; our PENDING write never happened."""
    claim = make_claim(tier=tier_of(3), quantity=2)
    with fault_armed("payment.after_gateway_answer"), pytest.raises(InjectedFault):
        payment_initialize(claim_id=claim.id, customer_id=claim.customer_id)
    found = _found(Payment.objects.get(claim=claim))
    assert found.payment.status == "INITIALIZING"
    return found


def live_with_its_claim_released(api, client, gateway, settings) -> Found:
    """Past the bound for non-final statuses: the claim went, the payment is watched."""
    claim = make_claim(tier=tier_of(3), quantity=2)
    payment = pending_payment(api, claim)
    claim_release(claim_id=claim.pk, reason=ReleaseReason.EXPIRED)
    Payment.objects.filter(pk=payment.pk).update(overdue_at=timezone.now())
    return _found(payment)


def failed_tickets_free(api, client, gateway, settings) -> Found:
    claim = make_claim(tier=tier_of(3), quantity=2)
    return _found(declined(client, gateway, pending_payment(api, claim)))


def failed_tickets_gone(api, client, gateway, settings) -> Found:
    tier = tier_of(2)
    claim = make_claim(tier=tier, quantity=2)
    payment = declined(client, gateway, pending_payment(api, claim))
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now())
    claims_expire()  # the buyer did not try again: the hold ran out
    make_claim(tier=tier, customer=CustomerFactory(), quantity=2)  # the tickets went on
    return _found(payment)


def failed_claim_paid_by_another(api, client, gateway, settings) -> Found:
    """The first checkout failed (expiry asked the gateway), the customer paid
    a second one in time; then the first one's money arrives after all."""
    claim = make_claim(tier=tier_of(3), quantity=2)
    first = pending_payment(api, claim)
    with transaction.atomic():
        apply_failure(
            payment=payment_lock(payment_id=first.pk),
            reason="gateway says abandoned",
            actor="test",
            release_claim=False,
        )
    second = pending_payment(api, claim)
    gateway.pay(second.reference, send_webhook=False)
    deliver(client, gateway.webhook(second.reference))
    assert reload(second).status == "CONFIRMED"
    return _found(first)


STATES: dict[str, Callable[..., Found]] = {
    "pending_on_its_claim": live_on_its_claim,
    "initializing_on_its_claim": initializing_on_its_claim,
    "pending_with_its_claim_released": live_with_its_claim_released,
    "failed_tickets_free": failed_tickets_free,
    "failed_tickets_gone": failed_tickets_gone,
    "failed_claim_paid_by_another": failed_claim_paid_by_another,
}


@pytest.fixture(params=list(STATES))
def found(request, api, client, gateway, settings, fault_hooks) -> Found:
    return STATES[request.param](api, client, gateway, settings)


def test_a_wrong_amount_is_never_kept_whatever_it_finds(client, gateway, found):
    before = found.payment.status
    claim_before = found.claim.status

    payment = wrong_success(client, gateway, found.payment)

    assert payment.status == "REFUND_REQUIRED"
    assert f"amount {WRONG} != expected {payment.amount}" in payment.flag_reason
    assert (payment.paid_amount, payment.paid_currency) == (WRONG, "NGN")
    assert transitions(payment)[-1] == (before, "REFUND_REQUIRED")
    assert payment.events.filter(kind="state_change", to_status="CONFIRMED").count() == 0
    assert payment.events.filter(kind="flagged").count() == 1
    # The claim is neither confirmed nor re-instated by it (invariant 7),
    # and no ticket moved.
    claim = reload(found.claim)
    assert claim.status == claim_before
    assert claim.payment_in_flight is False
    assert held_tickets(claim) == found.tickets_held
    free = Ticket.objects.filter(tier_id=claim.tier_id, claim__isnull=True).count()
    assert free == found.tier_free
    assert failing(claim.event, redis=False) == {}


def test_it_is_refunded_automatically(client, gateway, found):
    payment = wrong_success(client, gateway, found.payment)

    assert payments_reconcile() == {"auto_refund:pending": 1}

    [asked] = gateway.refunds_of(payment.reference)
    assert asked["amount"] == WRONG  # what was taken, not what was asked for
    assert reload(payment).status == "REFUND_PENDING"
    gateway.settle_refund(str(asked["id"]), "processed")
    deliver(client, gateway.refund_webhook(asked["id"]))
    payment = reload(payment)
    assert (payment.status, payment.refunded_amount) == ("REFUNDED", WRONG)
    assert payments_reconcile() == {}  # nothing left: no second refund
    assert gateway.stats()["refund_calls"] == 1


def test_with_automatic_refunds_off_one_staff_action_refunds_it(client, gateway, settings, found):
    settings.PAYSTACK_AUTO_REFUND = False
    payment = wrong_success(client, gateway, found.payment)
    assert payments_reconcile() == {}
    assert gateway.stats()["refund_calls"] == 0

    refund = payment_refund_by_staff(
        payment_id=payment.pk, actor="staff:ada", reason="paid the wrong amount"
    )

    assert (refund.status, refund.amount) == ("PENDING", WRONG)
    assert reload(payment).status == "REFUND_PENDING"
    assert gateway.stats()["refund_calls"] == 1


def test_a_wrong_currency_takes_the_same_path(api, client, gateway):
    payment = wrong_success(client, gateway, pending_payment(api), currency="USD")
    assert payment.status == "REFUND_REQUIRED"
    assert "currency 'USD'" in payment.flag_reason
    assert reload(payment.claim).status == ClaimStatus.CLAIMED


def test_a_repeated_wrong_success_changes_nothing_more(api, client, gateway):
    payment = wrong_success(client, gateway, pending_payment(api))
    gateway.control("POST", f"webhooks/{payment.reference}/resend")
    deliver_again = post_webhook(client, *gateway.webhook(payment.reference))

    assert deliver_again.json() == {"status": "duplicate"}
    assert reload(payment).status == "REFUND_REQUIRED"
    assert payment.events.filter(kind="flagged").count() == 1
    assert payment.events.filter(kind="state_change", to_status="REFUND_REQUIRED").count() == 1


# --- a flagged live payment and its tickets ---------------------------------------


def test_the_tickets_of_a_live_payment_paid_wrongly_go_back_when_its_hold_runs_out(
    api, client, gateway, settings
):
    settings.PAYSTACK_AUTO_REFUND = False
    tier = tier_of(2)
    claim = make_claim(tier=tier, quantity=2)
    payment = wrong_success(client, gateway, pending_payment(api, claim))
    # Long past its expiry, and past the bound a payment in flight may hold it.
    bound = django_settings.PAYMENT_IN_PROGRESS_MAX_SECONDS
    Claim.objects.filter(pk=claim.pk).update(
        expires_at=timezone.now() - timedelta(seconds=bound + 60)
    )

    for _ in range(3):  # beat's expiry runs, again and again
        claims_expire()
        paying_claims_expire()

    claim = reload(claim)
    assert (claim.status, claim.release_reason) == (ClaimStatus.RELEASED, "expired")
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 2
    assert reload(payment).status == "REFUND_REQUIRED"  # and its money goes back
    assert failing(tier.event, redis=False, settled=True) == {}


def test_the_customer_may_pay_again_while_the_hold_runs(api, client, gateway):
    claim = make_claim()
    wrong = wrong_success(client, gateway, pending_payment(api, claim))
    assert wrong.status == "REFUND_REQUIRED"

    again = pending_payment(api, claim)
    gateway.pay(again.reference, send_webhook=False)
    deliver(client, gateway.webhook(again.reference))

    assert reload(again).status == "CONFIRMED"
    assert reload(claim).status == ClaimStatus.CONFIRMED
    assert reload(wrong).status == "REFUND_REQUIRED"
    assert failing(claim.event, redis=False) == {}


def test_expiry_asking_the_gateway_finds_the_wrong_money_and_lets_the_claim_go(api, gateway):
    claim = make_claim(quantity=2)
    payment = pending_payment(api, claim)
    gateway.pay(payment.reference, send_webhook=False, amount=WRONG)  # its webhook is lost
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    report = paying_claims_expire()

    assert (report.released, report.left_alone) == (1, 0)
    assert reload(payment).status == "REFUND_REQUIRED"
    claim = reload(claim)
    assert (claim.status, held_tickets(claim)) == (ClaimStatus.RELEASED, 0)


def test_staff_fail_and_release_refuses_a_payment_on_the_refund_path(api, client, gateway):
    payment = wrong_success(client, gateway, pending_payment(api))
    with pytest.raises(InvalidTransition):
        payment_fail_and_release(payment_id=payment.pk, actor="staff:ada")
    assert reload(payment).status == "REFUND_REQUIRED"


def test_staff_may_mark_it_refunded_by_hand(api, client, gateway, settings):
    settings.PAYSTACK_AUTO_REFUND = False
    payment = wrong_success(client, gateway, pending_payment(api))

    payment_mark_refunded(payment_id=payment.pk, actor="staff:ada", note="cash back at the desk")

    payment = reload(payment)
    assert (payment.status, payment.refunded_amount) == ("REFUNDED", WRONG)


# --- refunds made in the gateway's dashboard --------------------------------------


def test_a_dashboard_refund_of_money_paid_wrongly_settles_it(client, gateway, settings, found):
    settings.PAYSTACK_AUTO_REFUND = False
    payment = wrong_success(client, gateway, found.payment)

    made = gateway.dashboard_refund(payment.reference)
    deliver(client, gateway.refund_webhook(made["id"]))
    gateway.settle_refund(str(made["id"]), "processed")
    deliver(client, gateway.refund_webhook(made["id"]))

    payment = reload(payment)
    assert (payment.status, payment.refunded_amount) == ("REFUNDED", WRONG)
    refund = Refund.objects.get(payment=payment)
    assert (refund.status, refund.amount, refund.requested_by) == ("PROCESSED", WRONG, "gateway")
    assert refund.gateway_refund_id == str(made["id"])
    assert transitions(payment)[-2:] == [
        ("REFUND_REQUIRED", "REFUND_PENDING"),
        ("REFUND_PENDING", "REFUNDED"),
    ]
    assert failing(reload(found.claim).event, redis=False) == {}


@pytest.mark.parametrize("before", ["PENDING", "FAILED"])
def test_a_dashboard_refund_before_its_success_arrived_settles_it_for_good(
    api, client, gateway, settings, before
):
    """The success webhook is late (or lost), staff refund the customer in
    the dashboard: a refund proves the money was taken, so the payment
    settles as refunded, and the late success then changes nothing."""
    settings.PAYSTACK_AUTO_REFUND = False
    tier = tier_of(2)
    claim = make_claim(tier=tier, quantity=2)
    payment = pending_payment(api, claim)
    if before == "FAILED":
        payment = declined(client, gateway, payment)
    gateway.pay(payment.reference, send_webhook=False)
    late_success = gateway.webhook(payment.reference)  # on its way, not here yet

    made = gateway.dashboard_refund(payment.reference)
    gateway.settle_refund(str(made["id"]), "processed")
    deliver(client, gateway.refund_webhook(made["id"]))

    payment = reload(payment)
    assert (payment.status, payment.refunded_amount) == ("REFUNDED", payment.amount)
    assert transitions(payment)[-3:] == [
        (before, "REFUND_REQUIRED"),
        ("REFUND_REQUIRED", "REFUND_PENDING"),
        ("REFUND_PENDING", "REFUNDED"),
    ]

    deliver(client, late_success)

    assert reload(payment).status == "REFUNDED"
    claim = reload(claim)
    assert claim.status != ClaimStatus.CONFIRMED  # the refunded money buys nothing
    assert claim.payment_in_flight is False
    assert payment.events.filter(kind="state_change", to_status="CONFIRMED").count() == 0
    assert failing(tier.event, redis=False) == {}
