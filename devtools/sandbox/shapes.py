"""The JSON objects the sandbox answers with and sends, shaped like Paystack's
(its API reference: the Transaction, Refund and Dispute objects; its webhook
docs: the ``data`` of each event). Only plain dicts: no state here."""

from __future__ import annotations

from typing import Any

from devtools.sandbox.http import now_iso

INTEGRATION_ID = 100200
CUSTOMER_ID = 4242

# What Paystack's gateway_response says for each status the sandbox can be in.
GATEWAY_RESPONSES = {
    "abandoned": "The transaction was not completed",
    "success": "Successful",
    "failed": "Declined",
    "ongoing": "The customer is completing the payment",
    "pending": "Transaction is pending",
    "processing": "Transaction is processing",
    "queued": "Transaction is queued",
    "reversed": "Reversed",
}
# Every status a verify may answer (Paystack documents these).
STATUSES = tuple(GATEWAY_RESPONSES)


def customer(tx: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": CUSTOMER_ID,
        "first_name": None,
        "last_name": None,
        "email": tx["email"],
        "customer_code": f"CUS_sandbox{CUSTOMER_ID}",
        "phone": None,
        "metadata": None,
        "risk_action": "default",
        "international_format_phone": None,
    }


def authorization(tx: dict[str, Any]) -> dict[str, Any]:
    if tx["status"] not in ("success", "reversed"):
        return {}
    return {
        "authorization_code": f"AUTH_sandbox{tx['id']}",
        "bin": "408408",
        "last4": "4081",
        "exp_month": "12",
        "exp_year": "2030",
        "channel": "card",
        "card_type": "visa ",
        "bank": "TEST BANK",
        "country_code": "NG",
        "brand": "visa",
        "reusable": True,
        "signature": f"SIG_sandbox{tx['id']}",
        "account_name": None,
    }


def transaction(tx: dict[str, Any]) -> dict[str, Any]:
    """The Transaction object of verify and of ``charge.success``."""
    return {
        "id": tx["id"],
        "domain": "test",
        "status": tx["status"],
        "reference": tx["reference"],
        "receipt_number": None,
        "amount": tx["reported_amount"],
        "message": None,
        "gateway_response": tx["gateway_response"],
        "paid_at": tx["paid_at"],
        "created_at": tx["created_at"],
        "channel": "card",
        "currency": tx["reported_currency"],
        "ip_address": "127.0.0.1",
        "metadata": tx["metadata"],
        "log": None,
        "fees": (tx["reported_amount"] * 15) // 1000 if tx["paid_at"] else None,
        "fees_split": None,
        "authorization": authorization(tx),
        "customer": customer(tx),
        "plan": None,
        "split": {},
        "order_id": None,
        "paidAt": tx["paid_at"],
        "createdAt": tx["created_at"],
        "requested_amount": tx["amount"],
        "pos_transaction_data": None,
        "source": None,
        "fees_breakdown": None,
        "transaction_date": tx["created_at"],
        "plan_object": {},
        "subaccount": {},
    }


def refund(refund_: dict[str, Any], tx: dict[str, Any]) -> dict[str, Any]:
    """The Refund object of ``POST /refund`` and ``GET /refund/:id``."""
    return {
        "id": refund_["id"],
        "integration": INTEGRATION_ID,
        "domain": "test",
        "transaction": {
            "id": tx["id"],
            "domain": "test",
            "reference": tx["reference"],
            "amount": tx["reported_amount"],
            "paid_at": tx["paid_at"],
            "channel": "card",
            "currency": tx["reported_currency"],
            "authorization": {"exp_month": None, "exp_year": None, "account_name": None},
            "customer": {"international_format_phone": None},
            "plan": {},
            "subaccount": {"currency": None},
            "split": {},
            "order_id": None,
            "paidAt": tx["paid_at"],
            "pos_transaction_data": None,
            "source": None,
            "fees_breakdown": None,
        },
        "dispute": None,
        "settlement": None,
        "amount": refund_["amount"],
        "deducted_amount": 0,
        "currency": refund_["currency"],
        "channel": None,
        "fully_deducted": False,
        "refunded_by": tx["email"],
        "merchant_note": refund_["merchant_note"],
        "customer_note": refund_["customer_note"],
        "status": refund_["status"],
        "refunded_at": refund_["refunded_at"],
        "expected_at": refund_["expected_at"],
        "createdAt": refund_["created_at"],
        "updatedAt": refund_["updated_at"],
    }


def refund_event(refund_: dict[str, Any], tx: dict[str, Any]) -> dict[str, Any]:
    """The ``data`` of ``refund.pending`` / ``refund.processed`` / ``refund.failed``
    (Paystack's refunds guide; the sandbox adds the refund's ``id``)."""
    return {
        "status": refund_["status"],
        "transaction_reference": tx["reference"],
        "refund_reference": refund_["refund_reference"],
        "amount": refund_["amount"],
        "currency": refund_["currency"],
        "processor": "sandbox",
        "customer": {"first_name": None, "last_name": None, "email": tx["email"]},
        "integration": INTEGRATION_ID,
        "domain": "test",
        "id": str(refund_["id"]),
    }


def dispute(dispute_: dict[str, Any], tx: dict[str, Any]) -> dict[str, Any]:
    """The Dispute object, the ``data`` of ``charge.dispute.*``."""
    return {
        "id": dispute_["id"],
        "refund_amount": dispute_["refund_amount"],
        "currency": tx["reported_currency"],
        "status": dispute_["status"],
        "resolution": dispute_["resolution"],
        "domain": "test",
        "transaction": transaction(tx),
        "transaction_reference": None,
        "category": "chargeback",
        "customer": customer(tx),
        "bin": "408408",
        "last4": "4081",
        "dueAt": dispute_["due_at"],
        "resolvedAt": dispute_["resolved_at"],
        "evidence": None,
        "attachments": None,
        "note": None,
        "history": [
            {"status": h, "by": tx["email"], "createdAt": now_iso()} for h in dispute_["history"]
        ],
        "messages": [
            {
                "sender": tx["email"],
                "body": "I did not receive what I paid for",
                "createdAt": dispute_["created_at"],
            }
        ],
        "created_at": dispute_["created_at"],
        "updated_at": now_iso(),
    }
