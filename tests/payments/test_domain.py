"""The payment state machine and the pure rules (no database)."""

import re
from pathlib import Path

import pytest

from fairqueue.states import IllegalTransition
from payments.domain import (
    PAYMENT_MACHINE,
    DisputeState,
    PaymentStatus,
    RefundStatus,
    VerifyOutcome,
    backoff_seconds,
    dispute_state_of,
    mismatch_reason,
    refund_amount_error,
    refund_status_of,
    verify_outcome,
)

P = PaymentStatus


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (P.INITIALIZING, P.PENDING),
        (P.PENDING, P.CONFIRMED),
        (P.INITIALIZING, P.CONFIRMED),  # a webhook overtaking our own PENDING write
        (P.INITIALIZING, P.FAILED),
        (P.PENDING, P.FAILED),
        (P.FAILED, P.CONFIRMED),  # late success, claim re-instated
        (P.FAILED, P.REFUND_REQUIRED),  # late success, tickets gone
        (P.PENDING, P.REFUND_REQUIRED),
        (P.REFUND_REQUIRED, P.REFUNDED),  # refunded by hand
        (P.REFUND_REQUIRED, P.REFUND_PENDING),  # refund asked of the gateway
        (P.CONFIRMED, P.REFUND_PENDING),  # a paid purchase refunded (tickets released)
        (P.CONFIRMED, P.REFUNDED),  # money returned by a chargeback staff accept
        (P.REFUND_PENDING, P.REFUNDED),  # refund.processed
        (P.REFUND_PENDING, P.REFUND_FAILED),  # refund.failed
        (P.REFUND_FAILED, P.REFUND_PENDING),  # staff try again
        (P.REFUND_FAILED, P.REFUNDED),  # refunded by other means
    ],
)
def test_allowed_transitions(source, target):
    PAYMENT_MACHINE.check(source, target)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (P.CONFIRMED, P.FAILED),
        (P.CONFIRMED, P.PENDING),
        (P.CONFIRMED, P.REFUND_FAILED),
        (P.FAILED, P.PENDING),
        (P.FAILED, P.REFUND_PENDING),  # nothing was taken
        (P.PENDING, P.INITIALIZING),
        (P.REFUNDED, P.CONFIRMED),
        (P.REFUNDED, P.REFUND_PENDING),
        (P.PENDING, P.REFUNDED),
        (P.PENDING, P.REFUND_PENDING),
        (P.REFUND_REQUIRED, P.CONFIRMED),
        (P.REFUND_PENDING, P.CONFIRMED),
        (P.REFUND_PENDING, P.REFUND_REQUIRED),
    ],
)
def test_refused_transitions(source, target):
    with pytest.raises(IllegalTransition):
        PAYMENT_MACHINE.check(source, target)


def test_sources_of_confirmed_are_the_where_clause():
    assert sorted(PAYMENT_MACHINE.sources_of(P.CONFIRMED)) == ["FAILED", "INITIALIZING", "PENDING"]


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        ("success", VerifyOutcome.SUCCESS),
        ("SUCCESS", VerifyOutcome.SUCCESS),
        ("failed", VerifyOutcome.FAILED),
        ("reversed", VerifyOutcome.REVERSED),
        ("abandoned", VerifyOutcome.ABANDONED),
        ("ongoing", VerifyOutcome.IN_PROGRESS),
        ("pending", VerifyOutcome.IN_PROGRESS),
        ("processing", VerifyOutcome.IN_PROGRESS),
        ("queued", VerifyOutcome.IN_PROGRESS),
        ("", VerifyOutcome.IN_PROGRESS),
        (None, VerifyOutcome.IN_PROGRESS),
    ],
)
def test_gateway_status_meaning(status, outcome):
    assert verify_outcome(status) == outcome


def test_mismatch_reason():
    ok = {"expected_amount": 500_000, "expected_currency": "NGN"}
    assert mismatch_reason(**ok, paid_amount=500_000, paid_currency="NGN") == ""
    assert mismatch_reason(**ok, paid_amount=500_000, paid_currency="ngn") == ""
    assert "amount 400000" in mismatch_reason(**ok, paid_amount=400_000, paid_currency="NGN")
    assert "currency 'USD'" in mismatch_reason(**ok, paid_amount=500_000, paid_currency="USD")
    # Strings, floats and booleans are not amounts in minor units.
    assert mismatch_reason(**ok, paid_amount="500000", paid_currency="NGN")
    assert mismatch_reason(**ok, paid_amount=500_000.0, paid_currency="NGN")
    assert mismatch_reason(**ok, paid_amount=True, paid_currency="NGN")
    assert mismatch_reason(**ok, paid_amount=None, paid_currency=None).count(";") == 1


def test_backoff_grows_and_is_capped():
    assert [backoff_seconds(base=120, checks=n) for n in range(4)] == [120, 240, 480, 960]
    assert backoff_seconds(base=120, checks=50) == 3600


def test_the_documented_state_machine_is_the_real_one():
    """docs/PAYMENTS.md draws every edge of PAYMENT_MACHINE, and no other."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "PAYMENTS.md").read_text()
    drawn = set(re.findall(r"^\s+([A-Z_]+) --> ([A-Z_]+):", text, flags=re.MULTILINE))
    real = {
        (src.value, dst.value) for src, dsts in PAYMENT_MACHINE.transitions.items() for dst in dsts
    }
    assert drawn == real


@pytest.mark.parametrize(
    ("gateway_status", "status"),
    [
        ("pending", RefundStatus.PENDING),
        ("processing", RefundStatus.PENDING),
        ("processed", RefundStatus.PROCESSED),
        ("PROCESSED", RefundStatus.PROCESSED),
        ("failed", RefundStatus.FAILED),
        ("something new", RefundStatus.PENDING),  # not final until the gateway says so
        (None, RefundStatus.PENDING),
    ],
)
def test_refund_status_meaning(gateway_status, status):
    assert refund_status_of(gateway_status) == status


def test_refund_amounts():
    assert refund_amount_error(requested=None, refundable=500) == ""
    assert refund_amount_error(requested=500, refundable=500) == ""
    assert refund_amount_error(requested=1, refundable=500) == ""
    assert "at most 500" in refund_amount_error(requested=501, refundable=500)
    for bad in (0, -1, 1.5, True, "100"):
        assert "positive whole number" in refund_amount_error(requested=bad, refundable=500)
    assert refund_amount_error(requested=None, refundable=0) == "nothing is left to refund"


@pytest.mark.parametrize(
    ("event", "resolution", "state"),
    [
        ("charge.dispute.create", None, DisputeState.OPEN),
        ("charge.dispute.remind", None, DisputeState.OPEN),
        ("charge.dispute.resolve", "declined", DisputeState.WON),
        ("charge.dispute.resolve", "merchant-accepted", DisputeState.LOST),
        ("charge.dispute.resolve", None, DisputeState.LOST),  # unknown: staff look
    ],
)
def test_dispute_meaning(event, resolution, state):
    assert dispute_state_of(event=event, resolution=resolution) == state
