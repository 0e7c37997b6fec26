"""The Paystack transaction API of the sandbox and the customer's side of a
payment: ``POST /transaction/initialize``, ``GET /transaction/verify/{reference}``,
and ``settle`` (the transaction reaches an outcome: the checkout page's Pay and
Decline, the control API's "mark paid"), which sends the ``charge.success``
webhook."""

from __future__ import annotations

import re
import secrets
from typing import Any

from devtools.sandbox import shapes, webhooks
from devtools.sandbox.http import Response, fail, json_response, now_iso
from devtools.sandbox.state import SandboxState
from fairqueue.money import GATEWAY_CURRENCIES

# The characters Paystack documents for a transaction reference.
REFERENCE_RE = re.compile(r"^[A-Za-z0-9.=-]{1,100}$")


def initialize(state: SandboxState, environ: dict[str, Any]) -> Response:
    with state.lock:
        state.stats["initialize_calls"] += 1
    refusal = state.api_guard(environ, record_first=True)
    if refusal is not None:
        return refusal
    body = state.json_body(environ)
    if not isinstance(body, dict):
        return fail("400 Bad Request", "Invalid JSON body")
    if state.config["fail_initialize_permanently"]:
        return fail("400 Bad Request", "Sandbox: initialize refused")
    email = body.get("email")
    if not isinstance(email, str) or "@" not in email:
        return fail("400 Bad Request", "Invalid Email Address Passed")
    amount = body.get("amount")
    if isinstance(amount, str) and amount.isdigit():
        amount = int(amount)
    if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
        return fail("400 Bad Request", "Invalid Amount Sent")
    currency = str(body.get("currency") or "NGN").upper()
    if currency not in GATEWAY_CURRENCIES:
        return fail("400 Bad Request", "Currency not supported by merchant")
    reference = body.get("reference") or secrets.token_hex(8)
    if not isinstance(reference, str) or not REFERENCE_RE.match(reference):
        return fail("400 Bad Request", "Invalid transaction reference")
    access_code = secrets.token_urlsafe(12).replace("-", "x").replace("_", "y")
    with state.lock:
        if reference in state.transactions:
            return fail("400 Bad Request", "Duplicate Transaction Reference")
        state.next_id += 1
        state.transactions[reference] = {
            "id": state.next_id,
            "reference": reference,
            "access_code": access_code,
            "email": email,
            "amount": amount,
            "currency": currency,
            "callback_url": str(body.get("callback_url") or ""),
            "metadata": body.get("metadata") or {},
            "status": "abandoned",
            "gateway_response": shapes.GATEWAY_RESPONSES["abandoned"],
            "created_at": now_iso(),
            "paid_at": None,
            "reported_amount": amount,
            "reported_currency": currency,
            "webhooks": [],
            "dispute": None,
        }
        state.by_access_code[access_code] = reference
        state.stats["initialize_created"] += 1
    if environ.get("sandbox.lose_answer"):  # recorded, but the answer "gets lost"
        return fail("500 Internal Server Error", "Sandbox: injected failure")
    return json_response(
        "200 OK",
        {
            "status": True,
            "message": "Authorization URL created",
            "data": {
                "authorization_url": f"{state.checkout_base(body)}/checkout/{access_code}",
                "access_code": access_code,
                "reference": reference,
            },
        },
    )


def verify(state: SandboxState, environ: dict[str, Any], reference: str) -> Response:
    with state.lock:
        state.stats["verify_calls"] += 1
    refusal = state.api_guard(environ)
    if refusal is not None:
        return refusal
    with state.lock:
        tx = state.transactions.get(reference)
        data = shapes.transaction(tx) if tx else None
    if data is None:
        return fail("400 Bad Request", "Transaction reference not found")
    return json_response(
        "200 OK", {"status": True, "message": "Verification successful", "data": data}
    )


def settle(
    state: SandboxState,
    reference: str,
    *,
    outcome: str,
    amount: int | None = None,
    currency: str | None = None,
    send_webhook: bool | None = None,
    wait: bool = False,
) -> dict[str, Any]:
    """The transaction reaches ``outcome`` (any status verify may answer).
    Only a success sends a webhook (``charge.success``), in the background
    unless ``wait``."""
    with state.lock:
        tx = state.transactions[reference]
        tx["status"] = outcome
        tx["gateway_response"] = shapes.GATEWAY_RESPONSES[outcome]
        if outcome == "success":
            tx["paid_at"] = now_iso()
        elif outcome != "reversed":
            tx["paid_at"] = None
        if amount is not None:
            tx["reported_amount"] = amount
        if currency is not None:
            tx["reported_currency"] = currency
        snapshot = dict(tx)
        data = shapes.transaction(tx)
    if outcome == "success" and (send_webhook if send_webhook is not None else True):
        webhooks.send(state, reference, "charge.success", data, wait=wait)
    return snapshot


def webhook_body(state: SandboxState, reference: str) -> bytes:
    """The ``charge.success`` body the sandbox sends for this transaction now."""
    with state.lock:
        data = shapes.transaction(state.transactions[reference])
    return webhooks.signed(state.secret_key, "charge.success", data)[0]
