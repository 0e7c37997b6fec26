"""Staff admin for payments: filters for what needs attention, actions that
go through the services and land in the append-only log."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.db import DatabaseError, transaction
from django.utils import timezone

from claims.domain import ClaimStatus
from payments.models import Payment, PaymentEvent
from tests.support.factories import UserFactory
from tests.support.payments import held_tickets, pending_payment, reload

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/payments/payment/"


@pytest.fixture
def staff(client):
    user = UserFactory(username="ada", is_superuser=True)
    client.force_login(user)
    return client


def listed(response) -> set[str]:
    return {p.reference for p in response.context["cl"].result_list}


def act(client, action: str, *payments: Payment):
    return client.post(
        CHANGELIST,
        {"action": action, "_selected_action": [str(p.pk) for p in payments]},
        follow=True,
    )


def test_filters_show_stuck_refund_and_flagged(api, staff, sandbox, settings):
    fresh = pending_payment(api)
    stuck = pending_payment(api)
    Payment.objects.filter(pk=stuck.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.PAYMENT_STALE_SECONDS + 1)
    )
    flagged = pending_payment(api)
    Payment.objects.filter(pk=flagged.pk).update(flag_reason="amount 1 != expected 500000")
    refund = pending_payment(api)
    Payment.objects.filter(pk=refund.pk).update(status="REFUND_REQUIRED")

    assert listed(staff.get(CHANGELIST)) == {p.reference for p in (fresh, stuck, flagged, refund)}
    assert listed(staff.get(CHANGELIST, {"attention": "stuck"})) == {stuck.reference}
    assert listed(staff.get(CHANGELIST, {"attention": "refund"})) == {refund.reference}
    assert listed(staff.get(CHANGELIST, {"attention": "flagged"})) == {flagged.reference}


def test_payment_page_shows_claim_and_event_log(api, staff, sandbox):
    payment = pending_payment(api)
    page = staff.get(f"{CHANGELIST}{payment.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"/admin/claims/claim/{payment.claim_id}/change/" in html
    for kind in ("initialize_requested", "initialize_answer", "state_change"):
        assert kind in html


def test_verify_now_applies_the_gateway_answer(api, staff, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)

    act(staff, "verify_with_gateway", payment)

    payment = reload(payment)
    assert payment.status == "CONFIRMED"
    assert reload(payment.claim).status == ClaimStatus.CONFIRMED
    action = payment.events.get(kind="staff_action")
    assert (action.actor, action.data["action"]) == ("staff:ada", "verify")
    assert payment.events.filter(kind="state_change", actor="staff:ada").count() == 1


def test_fail_and_release(api, staff, sandbox):
    payment = pending_payment(api)

    act(staff, "fail_and_release", payment)

    payment = reload(payment)
    assert payment.status == "FAILED"
    claim = reload(payment.claim)
    assert claim.status == ClaimStatus.RELEASED
    assert claim.release_reason == "staff"
    assert held_tickets(claim) == 0
    assert payment.events.filter(kind="staff_action", actor="staff:ada").count() == 1


def test_fail_and_release_of_money_received_requires_a_refund(api, client, staff, sandbox):
    payment = pending_payment(api)
    Payment.objects.filter(pk=payment.pk).update(
        flag_reason="amount 100 != expected 500000", paid_amount=100
    )
    act(staff, "fail_and_release", payment)
    assert reload(payment).status == "REFUND_REQUIRED"  # never FAILED: money was taken
    assert reload(payment.claim).status == ClaimStatus.RELEASED


def test_mark_refunded_only_from_refund_required(api, staff, sandbox):
    refund = pending_payment(api)
    Payment.objects.filter(pk=refund.pk).update(status="REFUND_REQUIRED")
    pending = pending_payment(api)

    response = act(staff, "mark_refunded", refund, pending)

    assert reload(refund).status == "REFUNDED"
    assert reload(pending).status == "PENDING"  # refused, and said so
    messages = [str(m) for m in response.context["messages"]]
    assert any(pending.reference in m for m in messages)
    assert refund.events.filter(kind="state_change", to_status="REFUNDED").count() == 1
    # The refused attempt is not in the pending payment's log as a change.
    assert pending.events.filter(kind="state_change", to_status="REFUNDED").count() == 0


def test_viewing_staff_cannot_act(api, client, sandbox):
    viewer = UserFactory(username="viewer")
    viewer.user_permissions.add(
        Permission.objects.get(codename="view_payment"),
        Permission.objects.get(codename="view_paymentevent"),
    )
    client.force_login(viewer)
    payment = pending_payment(api)
    assert client.get(CHANGELIST).status_code == 200
    act(client, "fail_and_release", payment)
    assert reload(payment).status == "PENDING"
    assert payment.events.filter(kind="staff_action").count() == 0


def test_event_log_is_read_only(api, staff, sandbox):
    payment = pending_payment(api)
    event = payment.events.first()
    assert staff.get("/admin/payments/paymentevent/").status_code == 200
    assert staff.get("/admin/payments/paymentevent/add/").status_code == 403
    assert staff.get(f"/admin/payments/paymentevent/{event.pk}/delete/").status_code == 403
    staff.post(f"/admin/payments/paymentevent/{event.pk}/change/", {"kind": "state_change"})
    assert PaymentEvent.objects.get(pk=event.pk).kind == event.kind


def test_database_refuses_to_change_the_log(api, sandbox):
    payment = pending_payment(api)
    event = payment.events.first()
    with pytest.raises(DatabaseError), transaction.atomic():
        PaymentEvent.objects.filter(pk=event.pk).update(kind="state_change")
    with pytest.raises(DatabaseError), transaction.atomic():
        PaymentEvent.objects.filter(pk=event.pk).delete()
    assert PaymentEvent.objects.get(pk=event.pk).kind == event.kind
    assert PaymentEvent.objects.filter(payment=payment).count() == 3
