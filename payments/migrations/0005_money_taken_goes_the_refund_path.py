"""Money the gateway took that no ticket keeps goes the refund path.

A success of the wrong amount or currency used to be flagged and left where
it found the payment: a live payment then held its claim's tickets until
staff acted, and a FAILED one kept the money with no action able to give it
back. Every payment the gateway took money for (a success reported, or an
amount recorded as paid) that is still INITIALIZING, PENDING or FAILED
becomes REFUND_REQUIRED, with the change in its log like any other; a claim
left without a live payment is no longer marked in flight, so it expires as
usual. Reconciliation then refunds them (``PAYSTACK_AUTO_REFUND``), or staff
do, in one action. Going back changes nothing: the log is append-only and
the money is on its way back.
"""

from django.db import migrations
from django.db.models import Q
from django.utils import timezone

LIVE = ("INITIALIZING", "PENDING")
UNPAID = (*LIVE, "FAILED")


def money_taken_to_refund_path(apps, schema_editor):
    Payment = apps.get_model("payments", "Payment")
    PaymentEvent = apps.get_model("payments", "PaymentEvent")
    Claim = apps.get_model("claims", "Claim")
    taken = Payment.objects.filter(status__in=UNPAID).filter(
        Q(gateway_status="success") | Q(paid_amount__isnull=False)
    )
    for payment in taken.select_for_update().order_by("pk"):
        now = timezone.now()
        Payment.objects.filter(pk=payment.pk).update(status="REFUND_REQUIRED", updated_at=now)
        PaymentEvent.objects.create(
            payment_id=payment.pk,
            kind="state_change",
            actor="migration",
            from_status=payment.status,
            to_status="REFUND_REQUIRED",
            data={"reason": "money taken and not kept for a ticket: it goes back"},
        )
        if payment.status in LIVE and not Payment.objects.filter(
            claim_id=payment.claim_id, status__in=LIVE
        ).exists():
            Claim.objects.filter(pk=payment.claim_id).update(payment_in_flight=False)


class Migration(migrations.Migration):

    dependencies = [
        ("claims", "0008_seats"),
        ("payments", "0004_refunds_disputes_incidents"),
    ]

    operations = [
        migrations.RunPython(money_taken_to_refund_path, migrations.RunPython.noop),
    ]
