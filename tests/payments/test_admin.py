"""Staff admin for payments: filters for what needs attention, actions that
go through the services and land in the append-only log."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from claims.domain import ClaimStatus
from fairqueue.adminscope import PLATFORM_STAFF_GROUP
from payments.models import Payment, PaymentEvent, Refund
from tests.support.factories import UserFactory, bearer
from tests.support.payments import (
    held_tickets,
    make_claim,
    payment_row,
    pending_payment,
    post_webhook,
    reload,
)

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/payments/payment/"


@pytest.fixture
def staff(client):
    user = UserFactory(username="ada", is_superuser=True)
    client.force_login(user)
    return client


def listed(response) -> set[str]:
    return {p.reference for p in response.context["cl"].result_list}


def act(client, action: str, *payments: Payment, **form: str):
    return client.post(
        CHANGELIST,
        {"action": action, "_selected_action": [str(p.pk) for p in payments], **form},
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
    assert listed(staff.get(CHANGELIST, {"attention": "refund_required"})) == {refund.reference}
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


def test_fail_and_release_asks_first(api, staff, sandbox):
    payment = pending_payment(api)

    asked = act(staff, "fail_and_release", payment)

    assert asked.status_code == 200
    words = " ".join(asked.content.decode().split())
    plan = f"{payment.reference}</code> — PENDING — {payment.email}: fails, and releases 1 ticket"
    assert plan in words
    assert 'value="Fail and release"' in words
    assert reload(payment).status == "PENDING"
    assert payment.events.filter(kind="staff_action").count() == 0

    act(staff, "fail_and_release", payment, apply="1")

    payment = reload(payment)
    assert payment.status == "FAILED"
    claim = reload(payment.claim)
    assert claim.status == ClaimStatus.RELEASED
    assert claim.release_reason == "staff"
    assert held_tickets(claim) == 0
    assert payment.events.filter(kind="staff_action", actor="staff:ada").count() == 1


def test_money_of_the_wrong_amount_is_refunded_by_one_action(
    api, client, staff, sandbox, settings
):
    """With automatic refunds off, the payment waits on the refund path, and
    the refund action sends it back; failing it is refused."""
    settings.PAYSTACK_AUTO_REFUND = False
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False, amount=100)
    post_webhook(client, *sandbox.webhook(payment.reference))
    assert reload(payment).status == "REFUND_REQUIRED"

    refused = act(staff, "fail_and_release", payment, apply="1")
    assert any("Only a live payment" in str(m) for m in refused.context["messages"])
    staff.post(
        CHANGELIST,
        {
            "action": "refund",
            "_selected_action": [str(payment.pk)],
            "apply": "1",
            "reason": "paid the wrong amount",
        },
    )

    payment = reload(payment)
    assert payment.status == "REFUND_PENDING"
    assert payment.refunds.get().amount == 100  # what was taken
    assert sandbox.stats()["refund_calls"] == 1


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
    viewer.groups.add(Group.objects.get_or_create(name=PLATFORM_STAFF_GROUP)[0])
    viewer.user_permissions.add(
        Permission.objects.get(codename="view_payment"),
        Permission.objects.get(codename="view_paymentevent"),
    )
    client.force_login(viewer)
    payment = pending_payment(api)
    assert client.get(CHANGELIST).status_code == 200
    act(client, "fail_and_release", payment, apply="1")
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


def test_payment_page_shows_money_in_major_units_and_links(api, staff, sandbox):
    payment = pending_payment(api)  # 500,000 kobo
    page = staff.get(f"{CHANGELIST}{payment.pk}/change/").content.decode()
    assert "NGN 5,000.00" in page
    assert f"/admin/core/customer/{payment.customer_id}/change/" in page
    assert f"/admin/events/event/{payment.claim.event_id}/change/" in page
    assert f"/admin/payments/paymentevent/?payment__id__exact={payment.pk}" in page
    listing = staff.get(CHANGELIST).content.decode()
    assert "NGN 5,000.00" in listing
    other = pending_payment(api)
    log = staff.get("/admin/payments/paymentevent/", {"payment__id__exact": str(payment.pk)})
    assert log.status_code == 200
    shown = {e.payment_id for e in log.context["cl"].result_list}
    assert shown == {payment.pk}  # its log only, not the other payment's
    assert other.events.count() == 3


@pytest.mark.parametrize(
    ("changes", "title", "advice"),
    [
        (
            {
                "status": "REFUND_REQUIRED",
                "flag_reason": "amount 1 != expected 500000",
                "gateway_status": "success",
                "paid_amount": 1,
                "paid_currency": "NGN",
            },
            "Flagged",
            "Check the transaction",
        ),
        ({"status": "REFUND_REQUIRED"}, "Refund required", "automatic refund"),
        ({"status": "REFUND_PENDING"}, "Refund pending", "refund.processed"),
        ({"status": "REFUND_FAILED"}, "Refund failed", "Refund through the gateway"),
        (
            {"status": "INITIALIZING", "blocked_since": timezone.now()},
            "merchant-side",
            "Fix the cause",
        ),
        ({"overdue_at": timezone.now()}, "Overdue", "Verify with the gateway now"),
        ({"status": "CONFIRMED", "dispute": "open"}, "Disputed: open", "Keep the tickets"),
        ({"status": "CONFIRMED", "dispute": "lost"}, "Disputed: lost", "Mark refunded"),
        ({"status": "CONFIRMED", "dispute": "reversed"}, "Disputed: reversed", "Mark refunded"),
    ],
)
def test_every_flag_is_explained_with_what_to_do(api, staff, sandbox, changes, title, advice):
    payment = pending_payment(api)
    Payment.objects.filter(pk=payment.pk).update(**changes)
    page = staff.get(f"{CHANGELIST}{payment.pk}/change/").content.decode()
    assert title in page
    assert advice in page
    assert "What to do:" in page


def test_a_plain_payment_needs_no_one(api, staff, sandbox):
    payment = pending_payment(api)
    page = staff.get(f"{CHANGELIST}{payment.pk}/change/").content.decode()
    assert "this payment needs no one" in page


def paid(api, client, sandbox) -> Payment:
    payment = pending_payment(api)
    sandbox.pay(payment.reference)
    body, signature = sandbox.webhook(payment.reference)
    post_webhook(client, body, signature)
    return reload(payment)


def test_refund_action_asks_for_amount_and_reason_first(api, client, staff, sandbox):
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    payment = paid(api, client, sandbox)

    form = staff.post(CHANGELIST, {"action": "refund", "_selected_action": [str(payment.pk)]})

    assert form.status_code == 200
    assert b"Refund through the gateway" in form.content
    assert payment.reference.encode() in form.content
    assert reload(payment).status == "CONFIRMED"  # nothing happened yet
    assert sandbox.stats()["refund_calls"] == 0
    no_reason = staff.post(
        CHANGELIST,
        {"action": "refund", "_selected_action": [str(payment.pk)], "apply": "1", "reason": ""},
    )
    assert no_reason.status_code == 200  # the form again, with its error
    assert sandbox.stats()["refund_calls"] == 0


def test_refund_a_selection_partially_in_major_units(api, client, staff, sandbox):
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    first, second = paid(api, client, sandbox), paid(api, client, sandbox)

    response = staff.post(
        CHANGELIST,
        {
            "action": "refund",
            "_selected_action": [str(first.pk), str(second.pk)],
            "apply": "1",
            "amount": "1500.00",
            "reason": "show moved to a smaller hall",
        },
        follow=True,
    )

    messages = [str(m) for m in response.context["messages"]]
    assert any("Refunds asked for" in m and "NGN 1,500.00" in m for m in messages), messages
    for payment in (first, second):
        payment = reload(payment)
        assert payment.status == "REFUND_PENDING"
        refund = payment.refunds.get()
        assert (refund.amount, refund.full, refund.reason, refund.requested_by) == (
            150_000,
            False,
            "show moved to a smaller hall",
            "staff:ada",
        )
        assert sandbox.refunds_of(payment.reference)[0]["amount"] == 150_000
        assert reload(payment.claim).status == ClaimStatus.RELEASED  # the purchase is cancelled
        action = payment.events.get(kind="staff_action")
        assert action.data["reason"] == "show moved to a smaller hall"


def test_refund_refusals_are_reported_per_payment(api, client, staff, sandbox):
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    paid_one = paid(api, client, sandbox)
    live_one = pending_payment(api)

    response = staff.post(
        CHANGELIST,
        {
            "action": "refund",
            "_selected_action": [str(paid_one.pk), str(live_one.pk)],
            "apply": "1",
            "reason": "sorry",
        },
        follow=True,
    )

    messages = [str(m) for m in response.context["messages"]]
    assert any(live_one.reference in m and "cannot be refunded" in m for m in messages)
    assert reload(paid_one).status == "REFUND_PENDING"
    assert reload(live_one).status == "PENDING"
    assert live_one.refunds.count() == 0


def test_gateway_incidents_are_listed_for_staff(api, staff, sandbox):
    sandbox.config(reject_key=True)
    claim = make_claim()
    api.post(f"/api/v1/claims/{claim.id}/payments/", format="json", **bearer(claim.customer))
    page = staff.get("/admin/payments/gatewayincident/", {"state": "open"}).content.decode()
    assert "Invalid key" in page
    assert "initialize" in page


def paid_payments(first: int, last: int) -> None:
    """Paid payments numbered ``first`` to ``last``; every third one's refund
    failed (its reason is on its page)."""
    for i in range(first, last + 1):
        payment = payment_row(reference=f"fq-paid-{i}", amount=500_000, status="CONFIRMED")
        if i % 3 == 0:
            Payment.objects.filter(pk=payment.pk).update(status="REFUND_FAILED")
            Refund.objects.create(
                payment=payment,
                amount=payment.amount,
                currency=payment.currency,
                status="FAILED",
                failure_reason="card closed",
                next_check_at=timezone.now(),
            )


def changelist_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        page = client.get(CHANGELIST)
    assert page.status_code == 200
    return len(queries)


def test_the_payments_list_costs_the_same_queries_for_1_and_for_20_rows(staff):
    paid_payments(1, 1)
    one = changelist_queries(staff)
    paid_payments(2, 20)
    page = staff.get(CHANGELIST)
    assert len(page.context["cl"].result_list) == 20
    assert "refund_failed" in page.content.decode()
    assert changelist_queries(staff) == one
