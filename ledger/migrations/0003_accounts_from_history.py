"""Purchases made before accounts existed get theirs, written from what their
payments, refunds, returns and transfers recorded: the charges, the refunds
(asked, settled, failed), money refunded by hand, tickets resold (owed and
fee) and sent on, a dispute lost, and the tickets given up by a cancelled
purchase. ``manage.py check_invariants`` reports any account that still does
not balance."""

from django.db import migrations
from django.db.models import Q, Sum
from django.utils import timezone

TAKEN = ("CONFIRMED", "REFUND_REQUIRED", "REFUND_PENDING", "REFUNDED", "REFUND_FAILED")


def _entry(Entry, claim, kind, amount=0, debit="", credit="", tickets=0, **extra):
    return Entry(
        claim_id=claim.pk,
        kind=kind,
        amount=amount,
        currency=claim.currency,
        debit=debit,
        credit=credit,
        tickets=tickets,
        actor="history",
        created_at=timezone.now(),
        **extra,
    )


def _account(apps, claim):
    """The entries of one purchase, in the order they happened."""
    Entry = apps.get_model("ledger", "AccountEntry")
    Payment = apps.get_model("payments", "Payment")
    Refund = apps.get_model("payments", "Refund")
    Return = apps.get_model("claims", "TicketReturn")
    Transfer = apps.get_model("claims", "TicketTransfer")
    face = claim.amount // max(claim.quantity, 1)
    entries, tickets = [], 0
    if claim.source == "transfer":
        tickets = 1
        entries.append(_entry(Entry, claim, "ticket_received", tickets=1))
    for payment in Payment.objects.filter(claim_id=claim.pk, status__in=TAKEN).order_by(
        "created_at"
    ):
        taken = payment.paid_amount if payment.paid_amount is not None else payment.amount
        held = claim.quantity if payment.confirmed_at else 0
        tickets += held
        entries.append(
            _entry(Entry, claim, "charge", taken, "", "held", held, payment_id=payment.pk)
        )
        for refund in Refund.objects.filter(payment_id=payment.pk).order_by("created_at"):
            origin = "owed" if refund.for_resale else "held"
            ids = {"payment_id": payment.pk, "refund_id": refund.pk}
            entries.append(
                _entry(Entry, claim, "refund_asked", refund.amount, origin, "in_flight", **ids)
            )
            if refund.status == "PROCESSED":
                entries.append(
                    _entry(
                        Entry,
                        claim,
                        "refund_settled",
                        refund.amount,
                        "in_flight",
                        "refunded",
                        **ids,
                    )
                )
            elif refund.status == "FAILED":
                entries.append(
                    _entry(Entry, claim, "refund_failed", refund.amount, "in_flight", origin, **ids)
                )
        by_refunds = (
            Refund.objects.filter(payment_id=payment.pk, status="PROCESSED").aggregate(
                t=Sum("amount")
            )["t"]
            or 0
        )
        if payment.refunded_amount > by_refunds:  # marked refunded by staff
            entries.append(
                _entry(
                    Entry,
                    claim,
                    "refund_outside",
                    payment.refunded_amount - by_refunds,
                    "held",
                    "refunded",
                    payment_id=payment.pk,
                )
            )
        if payment.dispute in ("lost", "reversed"):
            entries.append(
                _entry(Entry, claim, "dispute_lost", taken, "held", "lost", payment_id=payment.pk)
            )
    for ret in Return.objects.filter(claim_id=claim.pk, status="RESOLD"):
        tickets -= 1
        entries.append(
            _entry(
                Entry,
                claim,
                "ticket_resold",
                ret.refund_amount,
                "held",
                "owed",
                -1,
                ref=str(ret.pk),
            )
        )
        if ret.fee:
            entries.append(_entry(Entry, claim, "fee_kept", min(ret.fee, face), "held", "fee"))
    for transfer in Transfer.objects.filter(ticket__claim_id=claim.pk, status="ACCEPTED"):
        tickets -= 1
        entries.append(
            _entry(Entry, claim, "ticket_sent", face, "held", "sent", -1, ref=str(transfer.pk))
        )
    if claim.status == "RELEASED" and tickets > 0:
        entries.append(_entry(Entry, claim, "cancelled", tickets=-tickets))
    return entries


def forward(apps, schema_editor):
    Claim = apps.get_model("claims", "Claim")
    Entry = apps.get_model("ledger", "AccountEntry")
    started = Entry.objects.values("claim_id")
    purchases = (
        Claim.objects.filter(Q(payments__status__in=TAKEN) | Q(source="transfer"))
        .exclude(pk__in=started)
        .distinct()
    )
    for claim in purchases.iterator():
        entries = _account(apps, claim)
        if entries:
            Entry.objects.bulk_create(entries)


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0002_append_only"),
        ("payments", "0007_refunds_matched_by_gateway_id"),
        ("claims", "0011_retire_the_confirmation_sweep_entry"),
    ]

    # Backwards: the accounts stay (append-only); nothing to undo.
    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
