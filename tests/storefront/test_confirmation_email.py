"""The confirmation email: sent by a Celery task enqueued after the payment's
transaction commits, HTML and text, the tickets with their QR codes, and a
receipt. Tests use Django's outbox (locmem backend)."""

from __future__ import annotations

import smtplib
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from claims.domain import ReleaseReason, ticket_code_display
from claims.models import IssuedTicket
from claims.services import claim_confirm, claim_release
from payments.services import payment_refund
from storefront import services
from storefront.tasks import confirmation_email_send, emails_sweep
from tests.support.payments import make_claim, pending_payment, post_webhook
from tests.support.sales import on_sale, pay

pytestmark = pytest.mark.django_db


def test_a_paid_webhook_sends_one_email_with_the_tickets_and_a_receipt(
    api, client, sandbox, eager_tasks, django_capture_on_commit_callbacks, settings
):
    settings.PUBLIC_BASE_URL = "https://tickets.example.test"
    tier = on_sale(tickets=5, price=500_000, name="Detty December", venue="Eko Hotel")
    type(tier.event).objects.filter(pk=tier.event_id).update(max_tickets_per_customer=2)
    claim = make_claim(tier=tier, quantity=2)
    payment = pending_payment(api, claim)
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)

    with django_capture_on_commit_callbacks(execute=True):
        assert post_webhook(client, body, signature).status_code == 200

    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    codes = [
        ticket_code_display(c)
        for c in IssuedTicket.objects.filter(claim=claim)
        .order_by("seat")
        .values_list("code", flat=True)
    ]
    assert message.to == [claim.customer.email]
    assert message.subject == "Your tickets for Detty December"
    text = message.body
    assert all(code in text for code in codes)
    assert "Ticket 1 of 2" in text and "Ticket 2 of 2" in text
    assert f"2 \N{MULTIPLICATION SIGN} {tier.name} at NGN 5,000.00" in text
    assert "Total paid: NGN 10,000.00" in text
    assert f"Payment reference: {payment.reference}" in text
    assert f"https://tickets.example.test/tickets/{codes[0].replace('-', '')}/" in text
    ((html, mimetype),) = message.alternatives
    assert mimetype == "text/html"
    assert html.count('src="cid:qr-') == 2
    assert payment.reference in html
    images = [a for a in message.attachments if getattr(a, "get_content_type", None)]
    assert [i.get_content_type() for i in images] == ["image/png", "image/png"]
    assert {i["Content-ID"] for i in images} == {f"<qr-{c.replace('-', '')}>" for c in codes}
    assert IssuedTicket.objects.filter(claim=claim, emailed_at__isnull=False).count() == 2


def test_a_second_delivery_sends_nothing_more(eager_tasks):
    tier = on_sale(tickets=5)
    claim = make_claim(tier=tier)
    pay(claim, status="CONFIRMED")
    claim_confirm(claim_id=claim.pk)

    first = confirmation_email_send.delay(str(claim.pk)).get()
    second = confirmation_email_send.delay(str(claim.pk)).get()

    assert (first, second) == ("sent", "already_sent")
    assert len(mail.outbox) == 1


def test_a_claim_refunded_before_the_email_gets_none(django_capture_on_commit_callbacks):
    tier = on_sale(tickets=5)
    claim = make_claim(tier=tier)
    claim_confirm(claim_id=claim.pk)
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=claim.pk, reason=ReleaseReason.REFUNDED)

    assert services.confirmation_email_deliver(claim_id=claim.pk) == "not_confirmed"
    assert len(mail.outbox) == 0


class RefusingBackend:
    """An SMTP server that refuses (a Django email backend, not our code)."""

    def __init__(self, *args, **kwargs):
        pass

    def send_messages(self, messages):
        raise smtplib.SMTPServerDisconnected("try later")


def test_a_refused_send_raises_and_leaves_the_tickets_unemailed_for_the_retry(settings):
    settings.EMAIL_BACKEND = f"{__name__}.RefusingBackend"
    tier = on_sale(tickets=5)
    claim = make_claim(tier=tier)
    claim_confirm(claim_id=claim.pk)

    with pytest.raises(smtplib.SMTPException):
        services.confirmation_email_deliver(claim_id=claim.pk)

    assert IssuedTicket.objects.filter(claim=claim, emailed_at__isnull=True).count() == 1
    # The task retries these (with backoff) and nothing else.
    assert smtplib.SMTPException in confirmation_email_send.autoretry_for
    assert confirmation_email_send.max_retries >= 5


def test_the_sweep_sends_confirmations_whose_enqueue_was_lost(eager_tasks):
    tier = on_sale(tickets=5)
    old, fresh = make_claim(tier=tier), make_claim(tier=tier)
    claim_confirm(claim_id=old.pk)
    claim_confirm(claim_id=fresh.pk)  # on_commit never ran: nothing was enqueued
    IssuedTicket.objects.filter(claim=old).update(issued_at=timezone.now() - timedelta(minutes=5))

    assert emails_sweep() == 1

    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [old.customer.email]
    assert IssuedTicket.objects.get(claim=fresh).emailed_at is None


@pytest.mark.parametrize("name", ["Gig\r\nBcc: attacker@evil.test", "Gig\nNight", "Gig\rNight"])
def test_an_event_name_with_line_breaks_still_gets_its_tickets_mailed(eager_tasks, name):
    """A name is one line of a header: CR/LF in it made the message
    unbuildable (Django refuses header newlines), so the buyer got no
    tickets, and they must never start a header of their own."""
    tier = on_sale(tickets=5, name=name)
    claim = make_claim(tier=tier)
    pay(claim, status="CONFIRMED")
    claim_confirm(claim_id=claim.pk)

    outcome = confirmation_email_send.delay(str(claim.pk)).get()

    assert outcome == "sent"
    [message] = mail.outbox
    assert message.subject == "Your tickets for " + " ".join(name.split())
    built = message.message()
    assert built["Bcc"] is None
    assert message.recipients() == [claim.customer.email]
    assert "\r" not in built["Subject"] and "\n" not in built["Subject"]


def test_a_staff_refund_sends_the_buyer_one_cancellation_email(
    api, client, sandbox, eager_tasks, django_capture_on_commit_callbacks
):
    tier = on_sale(tickets=5, price=500_000, name="Detty December")
    claim = make_claim(tier=tier)
    payment = pending_payment(api, claim)
    sandbox.pay(payment.reference, send_webhook=False)
    with django_capture_on_commit_callbacks(execute=True):
        post_webhook(client, *sandbox.webhook(payment.reference))
    code = ticket_code_display(IssuedTicket.objects.get(claim=claim).code)

    with django_capture_on_commit_callbacks(execute=True):
        payment_refund(
            payment_id=payment.pk, actor="staff:ada", reason="asked by the buyer", staff_action=True
        )

    assert [m.subject for m in mail.outbox] == [
        "Your tickets for Detty December",
        "Cancelled: your tickets for Detty December",
    ]
    cancelled = mail.outbox[1]
    assert cancelled.to == [claim.customer.email]
    assert "cancelled and refunded: NGN 5,000.00" in cancelled.body
    assert code in cancelled.body
    ((html, _),) = cancelled.alternatives
    assert code in html
