"""Control endpoints of the sandbox (``/_sandbox/...``), for tests, demos and
fault injection. Each needs the control token (``SANDBOX_CONTROL_TOKEN``) in
the ``X-Sandbox-Token`` header: they can mark any payment paid. Without a
configured token they are all refused (403).

- ``GET|POST /_sandbox/config``: see ``devtools.sandbox.state.DEFAULT_CONFIG``.
- ``POST /_sandbox/pay/{reference}``: the transaction reaches ``outcome``
  (default ``success``; any status verify may answer: ``failed``,
  ``abandoned``, ``ongoing``, ``pending``, ``processing``, ``queued``,
  ``reversed``). Only a success sends a webhook (``charge.success``), as
  Paystack does. ``amount`` / ``currency`` override what is reported
  (mismatch tests); ``send_webhook``; ``wait`` (default true).
- ``POST /_sandbox/webhooks/{reference}/resend``: the ``charge.success`` again.
- ``POST /_sandbox/refunds/{id}`` ``{"outcome": "processed"|"failed"}``: settle
  a refund (``refund_outcome: manual``).
- ``POST /_sandbox/disputes/{reference}`` ``{"event": "create"|"remind"|"resolve",
  "resolution": "merchant-accepted"|"declined"}``: a ``charge.dispute.*`` webhook.
- ``GET /_sandbox/transactions/{reference}``, ``GET /_sandbox/stats``,
  ``POST /_sandbox/reset``.
"""

from __future__ import annotations

import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from devtools.sandbox import charges, refunds, shapes, webhooks
from devtools.sandbox.http import Response, fail, json_response, now_iso
from devtools.sandbox.state import DEFAULT_CONFIG, SandboxState

TOKEN_HEADER = "HTTP_X_SANDBOX_TOKEN"  # noqa: S105 - a header name, not a secret


def control(
    gateway: SandboxState, method: str, parts: list[str], environ: dict[str, Any]
) -> Response:
    if not gateway.control_token:
        return fail("403 Forbidden", "The control API is off: set SANDBOX_CONTROL_TOKEN")
    given = environ.get(TOKEN_HEADER, "")
    if not hmac.compare_digest(given.encode(), gateway.control_token.encode()):
        return fail("401 Unauthorized", "Missing or wrong X-Sandbox-Token")
    if parts == ["config"]:
        return _config(gateway, method, environ)
    if parts == ["reset"] and method == "POST":
        gateway.reset()
        return json_response("200 OK", {"status": True})
    if parts == ["stats"] and method == "GET":
        with gateway.lock:
            return json_response("200 OK", {"status": True, "data": dict(gateway.stats)})
    if len(parts) == 2 and parts[0] == "transactions" and method == "GET":
        with gateway.lock:
            tx = gateway.transactions.get(parts[1])
            tx = json.loads(json.dumps(tx)) if tx else None
        if tx is None:
            return fail("404 Not Found", "Transaction reference not found")
        return json_response("200 OK", {"status": True, "data": tx})
    if len(parts) == 2 and parts[0] == "pay" and method == "POST":
        return _pay(gateway, parts[1], environ)
    if len(parts) == 3 and parts[0] == "webhooks" and parts[2] == "resend" and method == "POST":
        return _resend(gateway, parts[1])
    if len(parts) == 2 and parts[0] == "refunds" and method == "POST":
        return _settle_refund(gateway, parts[1], environ)
    if len(parts) == 2 and parts[0] == "disputes" and method == "POST":
        return _dispute(gateway, parts[1], environ)
    return fail("404 Not Found", "Not found")


def _config(gateway: SandboxState, method: str, environ: dict[str, Any]) -> Response:
    if method == "POST":
        body = gateway.json_body(environ)
        if not isinstance(body, dict) or set(body) - set(DEFAULT_CONFIG):
            return fail("400 Bad Request", f"Config keys: {sorted(DEFAULT_CONFIG)}")
        if body.get("refund_outcome", "processed") not in refunds.REFUND_OUTCOMES:
            return fail("400 Bad Request", f"refund_outcome: one of {refunds.REFUND_OUTCOMES}")
        with gateway.lock:
            gateway.config.update(body)
    with gateway.lock:
        return json_response("200 OK", {"status": True, "data": dict(gateway.config)})


def _pay(gateway: SandboxState, reference: str, environ: dict[str, Any]) -> Response:
    body = gateway.json_body(environ)
    if not isinstance(body, dict):
        return fail("400 Bad Request", "Invalid JSON body")
    with gateway.lock:
        known = reference in gateway.transactions
    if not known:
        return fail("404 Not Found", "Transaction reference not found")
    outcome = body.get("outcome", "success")
    if outcome not in shapes.STATUSES:
        return fail("400 Bad Request", f"outcome must be one of {', '.join(shapes.STATUSES)}")
    tx = charges.settle(
        gateway,
        reference,
        outcome=outcome,
        amount=body.get("amount"),
        currency=body.get("currency"),
        send_webhook=body.get("send_webhook"),
        wait=bool(body.get("wait", True)),
    )
    with gateway.lock:
        sent = list(gateway.transactions[reference]["webhooks"])
    return json_response(
        "200 OK", {"status": True, "data": {"status": tx["status"], "webhooks": sent}}
    )


def _resend(gateway: SandboxState, reference: str) -> Response:
    with gateway.lock:
        tx = gateway.transactions.get(reference)
        data = shapes.transaction(tx) if tx and tx["status"] == "success" else None
    if tx is None:
        return fail("404 Not Found", "Transaction reference not found")
    if data is None:
        return fail("400 Bad Request", f"A {tx['status']} transaction has no webhook")
    results = webhooks.send(gateway, reference, "charge.success", data, wait=True)
    return json_response("200 OK", {"status": True, "data": {"webhooks": results}})


def _settle_refund(gateway: SandboxState, refund_id: str, environ: dict[str, Any]) -> Response:
    body = gateway.json_body(environ)
    outcome = body.get("outcome") if isinstance(body, dict) else None
    if outcome not in ("processed", "failed"):
        return fail("400 Bad Request", "outcome must be processed or failed")
    refund = refunds.settle(gateway, int(refund_id), outcome) if refund_id.isdigit() else None
    if refund is None:
        return fail("404 Not Found", "Refund not found")
    return json_response("200 OK", {"status": True, "data": {"status": refund["status"]}})


def _dispute(gateway: SandboxState, reference: str, environ: dict[str, Any]) -> Response:
    body = gateway.json_body(environ)
    event = body.get("event", "create") if isinstance(body, dict) else None
    if event not in ("create", "remind", "resolve"):
        return fail("400 Bad Request", "event must be create, remind or resolve")
    resolution = body.get("resolution", "merchant-accepted") if event == "resolve" else None
    with gateway.lock:
        tx = gateway.transactions.get(reference)
        if tx is None:
            return fail("404 Not Found", "Transaction reference not found")
        dispute = tx.get("dispute")
        if dispute is None:
            gateway.next_id += 1
            dispute = tx["dispute"] = {
                "id": gateway.next_id,
                "refund_amount": tx["reported_amount"],
                "status": "awaiting-merchant-feedback",
                "resolution": None,
                "history": ["pending"],
                "due_at": (datetime.now(UTC) + timedelta(days=1)).isoformat(),
                "resolved_at": None,
                "created_at": now_iso(),
            }
        if event == "resolve":
            dispute.update(status="resolved", resolution=resolution, resolved_at=now_iso())
            dispute["history"].append("resolved")
            if resolution == "merchant-accepted":  # the customer gets the money back
                tx["status"] = "reversed"
                tx["gateway_response"] = shapes.GATEWAY_RESPONSES["reversed"]
        data = shapes.dispute(dispute, tx)
    results = webhooks.send(gateway, reference, f"charge.dispute.{event}", data, wait=True)
    return json_response(
        "200 OK", {"status": True, "data": {"dispute_id": data["id"], "webhooks": results}}
    )
