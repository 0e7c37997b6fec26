"""Control endpoints of the sandbox, for tests and fault injection."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from payments.sandbox.http import Response, fail, json_response

if TYPE_CHECKING:
    from payments.sandbox.app import SandboxGateway

DEFAULT_CONFIG: dict[str, Any] = {
    "fail_next_n_with_5xx": 0,
    "fail_after_recording": False,
    "delay_next_n": 0,
    "delay_seconds": 0.0,
    "fail_initialize_permanently": False,
    "webhook_delay_seconds": 0.0,
    "duplicate_webhooks": 1,
    "send_webhooks": True,
}


def control(
    gateway: SandboxGateway, method: str, parts: list[str], environ: dict[str, Any]
) -> Response:
    """The ``/_sandbox/...`` endpoints (see ``payments.sandbox.app``)."""
    if parts == ["config"]:
        if method == "POST":
            body = gateway.json_body(environ)
            if not isinstance(body, dict) or set(body) - set(DEFAULT_CONFIG):
                return fail("400 Bad Request", f"Config keys: {sorted(DEFAULT_CONFIG)}")
            with gateway.lock:
                gateway.config.update(body)
        with gateway.lock:
            return json_response("200 OK", {"status": True, "data": dict(gateway.config)})
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
        body = gateway.json_body(environ)
        if not isinstance(body, dict):
            return fail("400 Bad Request", "Invalid JSON body")
        with gateway.lock:
            known = parts[1] in gateway.transactions
        if not known:
            return fail("404 Not Found", "Transaction reference not found")
        outcome = body.get("outcome", "success")
        if outcome not in ("success", "failed"):
            return fail("400 Bad Request", "outcome must be success or failed")
        wait = bool(body.get("wait", True))
        tx = gateway.settle(
            parts[1],
            outcome=outcome,
            amount=body.get("amount"),
            currency=body.get("currency"),
            send_webhook=body.get("send_webhook"),
            wait=wait,
        )
        with gateway.lock:
            webhooks = list(gateway.transactions[parts[1]]["webhooks"])
        return json_response(
            "200 OK",
            {"status": True, "data": {"status": tx["status"], "webhooks": webhooks}},
        )
    if len(parts) == 3 and parts[0] == "webhooks" and parts[2] == "resend":
        with gateway.lock:
            known = parts[1] in gateway.transactions
        if not known or method != "POST":
            return fail("404 Not Found", "Transaction reference not found")
        results = gateway.send_webhooks(parts[1], wait=True)
        return json_response("200 OK", {"status": True, "data": {"webhooks": results}})
    return fail("404 Not Found", "Not found")
