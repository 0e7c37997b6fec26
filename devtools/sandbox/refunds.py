"""The sandbox's Refund API, as Paystack's: ``POST /refund`` (transaction by
reference or id, optional amount in minor units, notes), ``GET /refund/:id``,
``GET /refund?reference=``. A refund starts ``pending`` (``refund.pending``
is sent), then after ``refund_delay_seconds`` becomes what ``refund_outcome``
says (``processed`` or ``failed``, with its webhook), or waits for
``POST /_sandbox/refunds/{id}`` when the outcome is ``manual``. A transaction
refunded in full verifies as ``reversed``."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs

from devtools.sandbox import shapes, webhooks
from devtools.sandbox.http import Response, fail, json_response, now_iso
from devtools.sandbox.state import SandboxState

REFUND_OUTCOMES = ("processed", "failed", "manual")


def _find_transaction(gateway: SandboxState, key: Any) -> dict[str, Any] | None:
    """By reference, or by the transaction's numeric id (Paystack takes both)."""
    if not isinstance(key, str | int) or isinstance(key, bool):
        return None
    tx = gateway.transactions.get(str(key))
    if tx is None and str(key).isdigit():
        tx = next((t for t in gateway.transactions.values() if t["id"] == int(key)), None)
    return tx


def refundable(gateway: SandboxState, tx: dict[str, Any]) -> int:
    taken = sum(
        r["amount"]
        for r in gateway.refunds.values()
        if r["reference"] == tx["reference"] and r["status"] != "failed"
    )
    return tx["reported_amount"] - taken


def create(gateway: SandboxState, environ: dict[str, Any]) -> Response:
    with gateway.lock:
        gateway.stats["refund_calls"] += 1
    refusal = gateway.api_guard(environ)
    if refusal is not None:
        return refusal
    body = gateway.json_body(environ)
    if not isinstance(body, dict):
        return fail("400 Bad Request", "Invalid JSON body")
    amount = body.get("amount")
    if amount is not None and (
        not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0
    ):
        return fail("400 Bad Request", "Invalid amount")
    with gateway.lock:
        tx = _find_transaction(gateway, body.get("transaction"))
        if tx is None:
            return fail("404 Not Found", "Transaction not found")
        if tx["status"] not in ("success", "reversed"):
            return fail("400 Bad Request", "Cannot refund a transaction that is not successful")
        left = refundable(gateway, tx)
        if left <= 0:
            return fail("400 Bad Request", "Transaction has been fully reversed")
        if amount is not None and amount > left:
            return fail(
                "400 Bad Request", "Refund amount cannot be greater than transaction amount"
            )
        gateway.next_id += 1
        now = now_iso()
        refund = {
            "id": gateway.next_id,
            "reference": tx["reference"],
            "refund_reference": f"RFD_sandbox{gateway.next_id}",
            "amount": left if amount is None else amount,
            "currency": str(body.get("currency") or tx["reported_currency"]).upper(),
            "merchant_note": str(body.get("merchant_note") or ""),
            "customer_note": str(body.get("customer_note") or ""),
            "status": "pending",
            "refunded_at": None,
            "expected_at": (datetime.now(UTC) + timedelta(days=9)).isoformat(),
            "created_at": now,
            "updated_at": now,
        }
        gateway.refunds[refund["id"]] = refund
        view = shapes.refund(refund, tx)
        event_data = shapes.refund_event(refund, tx)
        outcome, delay = (
            gateway.config["refund_outcome"],
            float(gateway.config["refund_delay_seconds"]),
        )
    threading.Thread(
        target=_announce_then_settle,
        args=(gateway, tx["reference"], event_data, refund["id"], outcome, delay),
        daemon=True,
    ).start()
    return json_response(
        "200 OK", {"status": True, "message": "Refund has been queued for processing", "data": view}
    )


def _announce_then_settle(
    gateway: SandboxState,
    reference: str,
    pending: dict[str, Any],
    refund_id: int,
    outcome: str,
    delay: float,
) -> None:
    """``refund.pending`` first (its first delivery attempt), then, unless
    the outcome is manual, the refund settles after ``delay``."""
    generation = gateway.generation
    webhooks.send(gateway, reference, "refund.pending", pending, wait=True)
    if outcome == "manual":
        return
    time.sleep(delay)
    if gateway.generation == generation:
        settle(gateway, refund_id, outcome)


def settle(gateway: SandboxState, refund_id: int, outcome: str) -> dict[str, Any] | None:
    """The refund reaches ``processed`` or ``failed`` (once); its webhook goes out."""
    with gateway.lock:
        refund = gateway.refunds.get(refund_id)
        if refund is None or refund["status"] != "pending":
            return refund
        refund["status"] = outcome
        refund["updated_at"] = now_iso()
        if outcome == "processed":
            refund["refunded_at"] = refund["updated_at"]
        tx = gateway.transactions[refund["reference"]]
        if outcome == "processed" and refundable(gateway, tx) <= 0:
            tx["status"] = "reversed"
            tx["gateway_response"] = shapes.GATEWAY_RESPONSES["reversed"]
        event_data = shapes.refund_event(refund, tx)
        snapshot = dict(refund)
    webhooks.send(gateway, refund["reference"], f"refund.{outcome}", event_data, wait=False)
    return snapshot


def fetch(gateway: SandboxState, environ: dict[str, Any], refund_id: str) -> Response:
    refusal = gateway.api_guard(environ)
    if refusal is not None:
        return refusal
    with gateway.lock:
        refund = gateway.refunds.get(int(refund_id)) if refund_id.isdigit() else None
        view = shapes.refund(refund, gateway.transactions[refund["reference"]]) if refund else None
    if view is None:
        return fail("404 Not Found", "Refund not found")
    return json_response("200 OK", {"status": True, "message": "Refund retrieved", "data": view})


def listing(gateway: SandboxState, environ: dict[str, Any]) -> Response:
    refusal = gateway.api_guard(environ)
    if refusal is not None:
        return refusal
    query = parse_qs(environ.get("QUERY_STRING", ""))
    wanted = (query.get("reference") or query.get("transaction") or [None])[0]
    with gateway.lock:
        tx = _find_transaction(gateway, wanted) if wanted else None
        rows = [
            shapes.refund(r, gateway.transactions[r["reference"]])
            for r in sorted(gateway.refunds.values(), key=lambda r: r["id"])
            if wanted is None or (tx is not None and r["reference"] == tx["reference"])
        ]
    meta = {"total": len(rows), "skipped": 0, "perPage": 50, "page": 1, "pageCount": 1}
    return json_response(
        "200 OK", {"status": True, "message": "Refunds retrieved", "data": rows, "meta": meta}
    )
