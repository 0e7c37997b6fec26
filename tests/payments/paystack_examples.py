"""Paystack's published example bodies, replayed by test_paystack_examples.py
through the real client (served over HTTP) and the real webhook view.

Each example is copied from the page named above it (Paystack's API
reference at https://paystack.com/docs/api/ and its guides at
https://paystack.com/docs/payments/), field names and nesting as published.
Where a page shows one status, the other statuses Paystack lists for the same
object are the same body with ``status`` (and ``gateway_response``) changed:
``variant()`` makes those, and says so.
"""

from __future__ import annotations

import copy
from typing import Any

# --- POST /transaction/initialize -------------------------------------------
# https://paystack.com/docs/api/transaction/#initialize (200 response sample)
INITIALIZE_OK = {
    "status": True,
    "message": "Authorization URL created",
    "data": {
        "authorization_url": "https://checkout.paystack.com/0peioxfhpn",
        "access_code": "0peioxfhpn",
        "reference": "7PVGX8MEk85tgeEpVDtD",
    },
}

# --- GET /transaction/verify/:reference -------------------------------------
# https://paystack.com/docs/api/transaction/#verify (200 response sample).
# Note: data.amount (40333) is what was charged with the fees passed on to
# the customer; requested_amount (30050) what the merchant asked for.
VERIFY_SUCCESS = {
    "status": True,
    "message": "Verification successful",
    "data": {
        "id": 4099260516,
        "domain": "test",
        "status": "success",
        "reference": "re4lyvq3s3",
        "receipt_number": None,
        "amount": 40333,
        "message": None,
        "gateway_response": "Successful",
        "paid_at": "2024-08-22T09:15:02.000Z",
        "created_at": "2024-08-22T09:14:24.000Z",
        "channel": "card",
        "currency": "NGN",
        "ip_address": "197.210.54.33",
        "metadata": "",
        "log": {
            "start_time": 1724318098,
            "time_spent": 4,
            "attempts": 1,
            "errors": 0,
            "success": True,
            "mobile": False,
            "input": [],
            "history": [
                {"type": "action", "message": "Attempted to pay with card", "time": 3},
                {"type": "success", "message": "Successfully paid with card", "time": 4},
            ],
        },
        "fees": 10283,
        "fees_split": None,
        "authorization": {
            "authorization_code": "AUTH_uh8bcl3zbn",
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
            "signature": "SIG_yEXu7dLBeqG0kU7g95Ke",
            "account_name": None,
        },
        "customer": {
            "id": 181873746,
            "first_name": None,
            "last_name": None,
            "email": "demo@test.com",
            "customer_code": "CUS_1rkzaqsv4rrhqo6",
            "phone": None,
            "metadata": None,
            "risk_action": "default",
            "international_format_phone": None,
        },
        "plan": None,
        "split": {},
        "order_id": None,
        "paidAt": "2024-08-22T09:15:02.000Z",
        "createdAt": "2024-08-22T09:14:24.000Z",
        "requested_amount": 30050,
        "pos_transaction_data": None,
        "source": None,
        "fees_breakdown": None,
        "connect": None,
        "transaction_date": "2024-08-22T09:14:24.000Z",
        "plan_object": {},
        "subaccount": {},
    },
}
# The statuses the same page lists for data.status, with the gateway_response
# Paystack shows for them.
VERIFY_STATUSES = {
    "success": "Successful",
    "failed": "Declined",
    "abandoned": "The transaction was not completed",
    "ongoing": "The customer is currently attempting a payment",
    "pending": "Transaction is pending",
    "processing": "Transaction is processing",
    "queued": "Transaction is queued",
    "reversed": "Reversed",
}

# --- errors ------------------------------------------------------------------
# https://paystack.com/docs/api/#errors and the error samples of each endpoint:
# {"status": false, "message": ...} with the newer "meta" / "type" / "code".
ERROR_400_INVALID_EMAIL = {
    "status": False,
    "message": "Invalid Email Address Passed",
    "meta": {"nextStep": "Ensure you pass a valid email address"},
    "type": "validation_error",
    "code": "invalid_email_address",
}
ERROR_400_DUPLICATE_REFERENCE = {
    "status": False,
    "message": "Duplicate Transaction Reference",
    "meta": {"nextStep": "Ensure that you're passing a unique reference for each transaction"},
    "type": "validation_error",
    "code": "duplicate_reference",
}
ERROR_400_REFERENCE_NOT_FOUND = {
    "status": False,
    "message": "Transaction reference not found",
    "meta": {
        "nextStep": "Ensure that you're passing the reference of a transaction that exists on "
        "this integration"
    },
    "type": "validation_error",
    "code": "transaction_not_found",
}
ERROR_401_INVALID_KEY = {
    "status": False,
    "message": "Invalid key",
    "meta": {"nextStep": "Ensure that you provide the correct authorization key for the request"},
    "type": "validation_error",
    "code": "invalid_Key",
}
# https://github.com/PaystackOSS/openapi (the 404 response of /transaction/verify)
ERROR_404_NOT_FOUND = {"status": False, "message": "Entity not found"}
# https://paystack.com/docs/api/#errors: 429 is rate limiting; the body keeps
# the error shape (the wording is not published).
ERROR_429 = {"status": False, "message": "Too many requests. Please try again later."}

# --- webhooks ---------------------------------------------------------------
# https://paystack.com/docs/payments/webhooks/ ("Receiving a charge.success event")
CHARGE_SUCCESS = {
    "event": "charge.success",
    "data": {
        "id": 302961,
        "domain": "live",
        "status": "success",
        "reference": "qTPrJoy9Bx",
        "amount": 10000,
        "message": None,
        "gateway_response": "Approved by Financial Institution",
        "paid_at": "2016-09-30T21:10:19.000Z",
        "created_at": "2016-09-30T21:09:56.000Z",
        "channel": "card",
        "currency": "NGN",
        "ip_address": "41.242.49.37",
        "metadata": 0,
        "log": {
            "time_spent": 16,
            "attempts": 1,
            "authentication": "pin",
            "errors": 0,
            "success": False,
            "mobile": False,
            "input": [],
            "channel": None,
            "history": [
                {
                    "type": "input",
                    "message": "Filled these fields: card number, card expiry, card cvv",
                    "time": 15,
                },
                {"type": "action", "message": "Attempted to pay", "time": 15},
                {"type": "auth", "message": "Authentication Required: pin", "time": 16},
            ],
        },
        "fees": None,
        "customer": {
            "id": 68324,
            "first_name": "BoJack",
            "last_name": "Horseman",
            "email": "bojack@horsinaround.com",
            "customer_code": "CUS_qo38as2hpsgk2r0",
            "phone": None,
            "metadata": None,
            "risk_action": "default",
        },
        "authorization": {
            "authorization_code": "AUTH_f5rnfq9p",
            "bin": "539999",
            "last4": "8877",
            "exp_month": "08",
            "exp_year": "2020",
            "card_type": "mastercard DEBIT",
            "bank": "Guaranty Trust Bank",
            "country_code": "NG",
            "brand": "mastercard",
            "account_name": "BoJack Horseman",
        },
        "plan": {},
    },
}

# https://paystack.com/docs/payments/refunds/ ("Listen for refund notifications":
# refund.pending, refund.processing, refund.processed, refund.failed)
REFUND_PROCESSED = {
    "event": "refund.processed",
    "data": {
        "status": "processed",
        "transaction_reference": "T685312322670591",
        "refund_reference": "132013318360",
        "amount": 10000,
        "currency": "NGN",
        "processor": "mpgs_zen",
        "customer": {
            "first_name": "Damilola",
            "last_name": "Odujoko",
            "email": "damilola@example.com",
        },
        "integration": 412829,
        "domain": "live",
    },
}


def refund_event(status: str) -> dict[str, Any]:
    """The refunds guide's body for refund.<status> (it shows refund.processed;
    the others differ in ``event`` and ``data.status``; a pending refund has
    no ``refund_reference`` yet)."""
    body = copy.deepcopy(REFUND_PROCESSED)
    body["event"] = f"refund.{status}"
    body["data"]["status"] = status
    if status in ("pending", "processing"):
        body["data"]["refund_reference"] = None
    return body


# https://paystack.com/docs/api/refund/#create (200 response sample)
REFUND_CREATE_OK = {
    "status": True,
    "message": "Refund has been queued for processing",
    "data": {
        "transaction": {
            "id": 1004723697,
            "domain": "live",
            "reference": "T685312322670591",
            "amount": 10000,
            "paid_at": "2021-08-20T18:34:11.000Z",
            "channel": "apple_pay",
            "currency": "NGN",
            "authorization": {"exp_month": None, "exp_year": None, "account_name": None},
            "customer": {"international_format_phone": None},
            "plan": {},
            "subaccount": {"currency": None},
            "split": {},
            "order_id": None,
            "paidAt": "2021-08-20T18:34:11.000Z",
            "pos_transaction_data": None,
            "source": None,
            "fees_breakdown": None,
        },
        "integration": 412829,
        "deducted_amount": 0,
        "channel": None,
        "merchant_note": "Refund for transaction T685312322670591 by test@me.com",
        "customer_note": "Refund for transaction T685312322670591",
        "status": "pending",
        "refunded_by": "test@me.com",
        "expected_at": "2021-12-16T09:21:17.016Z",
        "currency": "NGN",
        "domain": "live",
        "amount": 10000,
        "fully_deducted": False,
        "id": 3018284,
        "createdAt": "2021-12-07T09:21:17.122Z",
        "updatedAt": "2021-12-07T09:21:17.122Z",
    },
}

# https://paystack.com/docs/api/dispute/#fetch (the Dispute object) and
# https://paystack.com/docs/payments/webhooks/#supported-events
# (charge.dispute.create / remind / resolve carry it as ``data``).
DISPUTE_CREATE = {
    "event": "charge.dispute.create",
    "data": {
        "id": 2867,
        "refund_amount": 10000,
        "currency": "NGN",
        "status": "awaiting-merchant-feedback",
        "resolution": None,
        "domain": "test",
        "transaction": {
            "id": 5991760,
            "domain": "test",
            "status": "success",
            "reference": "asqsmlrk0l9t6gw",
            "amount": 10000,
            "message": None,
            "gateway_response": "Successful",
            "paid_at": "2018-06-22T08:47:49.000Z",
            "created_at": "2018-06-22T08:47:49.000Z",
            "channel": "card",
            "currency": "NGN",
            "ip_address": None,
            "metadata": "",
            "log": None,
            "fees": 250,
            "fees_split": None,
            "authorization": {},
            "customer": {"international_format_phone": None},
            "plan": {},
            "subaccount": {},
            "split": {},
            "order_id": None,
            "paidAt": "2018-06-22T08:47:49.000Z",
            "requested_amount": 10000,
            "pos_transaction_data": None,
        },
        "transaction_reference": None,
        "category": "chargeback",
        "customer": {
            "id": 84312,
            "first_name": "Tolu",
            "last_name": "Robert",
            "email": "tolu@example.com",
            "customer_code": "CUS_0cbvz9ppwxtfhl0",
            "phone": "",
            "metadata": {},
            "risk_action": "default",
            "international_format_phone": None,
        },
        "bin": "123456",
        "last4": "1234",
        "dueAt": "2018-06-23T08:47:49.000Z",
        "resolvedAt": None,
        "evidence": None,
        "attachments": None,
        "note": None,
        "history": [
            {"status": "pending", "by": "demo@test.co", "createdAt": "2019-01-16T11:18:15.000Z"}
        ],
        "messages": [
            {
                "sender": "demo@test.co",
                "body": "Customer complained about debit",
                "createdAt": "2019-01-16T11:18:15.000Z",
            }
        ],
        "created_at": "2019-01-16T11:18:15.000Z",
        "updated_at": "2019-01-16T11:18:15.000Z",
    },
}


def dispute_event(event: str, resolution: str | None = None) -> dict[str, Any]:
    """charge.dispute.<event> with the same Dispute object; a resolved one has
    status "resolved", its ``resolution`` (merchant-accepted / declined, as in
    https://paystack.com/docs/api/dispute/#resolve) and ``resolvedAt``."""
    body = copy.deepcopy(DISPUTE_CREATE)
    body["event"] = f"charge.dispute.{event}"
    if event == "resolve":
        body["data"].update(
            status="resolved", resolution=resolution, resolvedAt="2019-01-17T11:18:15.000Z"
        )
    return body


# https://paystack.com/docs/payments/transfers/ (a transfer.success event): an
# event FairQueue does not act on.
TRANSFER_SUCCESS = {
    "event": "transfer.success",
    "data": {
        "amount": 30000,
        "currency": "NGN",
        "domain": "test",
        "failures": None,
        "id": 37272792,
        "integration": {"id": 463433, "is_live": True, "business_name": "Boom Boom Industries NG"},
        "reason": "Have fun...",
        "reference": "1jhbs3ozmen0k7y5efmw",
        "source": "balance",
        "source_details": None,
        "status": "success",
        "titan_code": None,
        "transfer_code": "TRF_wpl1dem4967avzm",
        "transferred_at": None,
        "recipient": {
            "active": True,
            "currency": "NGN",
            "description": "",
            "domain": "test",
            "email": None,
            "id": 8690817,
            "integration": 463433,
            "metadata": None,
            "name": "Jack Sparrow",
            "recipient_code": "RCP_a8wkxiychzdzfgs",
            "type": "nuban",
            "is_deleted": False,
            "details": {
                "account_number": "0000000000",
                "account_name": None,
                "bank_code": "011",
                "bank_name": "First Bank of Nigeria",
            },
            "created_at": "2020-09-03T12:11:25.000Z",
            "updated_at": "2020-09-03T12:11:25.000Z",
        },
        "session": {"provider": None, "id": None},
        "created_at": "2020-10-26T12:28:57.000Z",
        "updated_at": "2020-10-26T12:28:57.000Z",
    },
}


def variant(example: dict[str, Any], **data: Any) -> dict[str, Any]:
    """A deep copy of ``example`` with ``data`` fields replaced (a status the
    page lists but does not show)."""
    body = copy.deepcopy(example)
    body["data"].update(data)
    return body
