"""The automatic refund is started the one way follow-up work is
(fairqueue/news.py): ``refund_required`` sent after the transaction commits,
a receiver that enqueues the task. Checked on the real broker: exactly one
message after a commit, none after a rollback."""

from __future__ import annotations

import pytest
from django.db import transaction

from payments.services.outcomes import apply_success, payment_lock
from tests.support.broker import published
from tests.support.payments import payment_row

pytestmark = pytest.mark.django_db(transaction=True)

AUTO_REFUND = "payments.tasks.payment_refund_auto"


class RolledBack(Exception):
    pass


def paid_a_wrong_amount(payment) -> None:
    """The gateway says the customer paid 1 kobo: REFUND_REQUIRED."""
    locked = payment_lock(payment_id=payment.pk)
    apply_success(payment=locked, amount=1, currency="NGN", transaction_id="t-1", actor="test")
    assert locked.status == "REFUND_REQUIRED"


def test_the_automatic_refund_is_enqueued_once_after_commit():
    payment = payment_row(reference="follow-up-commit", amount=5000)
    with transaction.atomic():
        paid_a_wrong_amount(payment)
        assert published() == []  # nothing before the commit
    assert published() == [(AUTO_REFUND, [str(payment.pk)])]


def test_a_rolled_back_refund_required_enqueues_nothing():
    payment = payment_row(reference="follow-up-rollback", amount=5000)
    with pytest.raises(RolledBack), transaction.atomic():
        paid_a_wrong_amount(payment)
        raise RolledBack
    assert published() == []
    payment.refresh_from_db()
    assert payment.status == "PENDING"


def test_with_the_automatic_refund_off_nothing_is_enqueued(settings):
    settings.PAYSTACK_AUTO_REFUND = False
    payment = payment_row(reference="follow-up-off", amount=5000)
    with transaction.atomic():
        paid_a_wrong_amount(payment)
    assert published() == []
