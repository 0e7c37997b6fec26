"""The sandbox gateway: a WSGI app that speaks the part of Paystack's HTTP API
FairQueue uses, for development, demos and end-to-end tests.

Standard library + ``requests`` only (no Django), so it runs as its own
process: ``python -m devtools.sandbox --port 8002``.

API (same shapes as Paystack; Bearer secret key):
- ``POST /transaction/initialize``: email, amount (minor units), currency,
  reference (letters, digits, ``-``, ``.``, ``=``), callback_url, metadata. A
  reference seen before -> 400 ``Duplicate Transaction Reference``.
- ``GET /transaction/verify/{reference}``: ``data.status`` is ``abandoned``
  until the customer pays (``success``) or declines (``failed``), or the
  control API puts it in any other status Paystack documents.
- ``POST /refund``, ``GET /refund/{id}``, ``GET /refund?reference=``
  (``devtools.sandbox.refunds``).
- ``GET /checkout/{access_code}``: the page at ``authorization_url``
  (``devtools.sandbox.checkout``).

Webhooks (``devtools.sandbox.webhooks``): ``charge.success``, ``refund.*`` and
``charge.dispute.*``, signed, retried on Paystack's backoff when not answered
200. Never ``charge.failed``: Paystack does not send it.

Control endpoints for tests and fault injection, behind a token:
``devtools.sandbox.control``.

State is in memory, per process: restarting the sandbox forgets every
transaction (fine for a sandbox; Paystack keeps them forever).
"""

from __future__ import annotations

import logging
from typing import Any

from devtools.sandbox import charges, checkout, refunds
from devtools.sandbox.challenge import challenge
from devtools.sandbox.control import control
from devtools.sandbox.http import Response, StartResponse, fail, json_response
from devtools.sandbox.state import DEFAULT_WEBHOOK_URL, SandboxState

logger = logging.getLogger("devtools.sandbox")

__all__ = ["DEFAULT_WEBHOOK_URL", "SandboxGateway"]


class SandboxGateway(SandboxState):
    """The WSGI application: the state (``devtools.sandbox.state``) and the
    routes to each handler module."""

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        try:
            status, headers, body = self.route(environ)
        except Exception:
            logger.exception("sandbox error")
            status, headers, body = fail("500 Internal Server Error", "sandbox error")
        start_response(status, [*headers, ("Content-Length", str(len(body)))])
        return [body]

    def route(self, environ: dict[str, Any]) -> Response:
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "")
        parts = [p for p in path.split("/") if p]
        if method == "POST" and parts == ["transaction", "initialize"]:
            return charges.initialize(self, environ)
        if method == "GET" and len(parts) == 3 and parts[:2] == ["transaction", "verify"]:
            return charges.verify(self, environ, parts[2])
        if parts == ["refund"] and method == "POST":
            return refunds.create(self, environ)
        if parts == ["refund"] and method == "GET":
            return refunds.listing(self, environ)
        if len(parts) == 2 and parts[0] == "refund" and method == "GET":
            return refunds.fetch(self, environ, parts[1])
        if len(parts) == 2 and parts[0] == "checkout" and method == "GET":
            return checkout.page(self, parts[1])
        if len(parts) == 3 and parts[0] == "checkout" and parts[2] in ("pay", "decline"):
            if method == "POST":
                return checkout.submit(self, parts[1], parts[2])
            return fail("405 Method Not Allowed", "Use POST")
        if parts[:1] == ["_sandbox"]:
            return control(self, method, parts[1:], environ)
        if parts[:1] == ["challenge"]:  # the bot challenge's test verifier
            return challenge(self, method, parts[1:], environ)
        if parts == [] and method == "GET":
            return json_response("200 OK", {"status": True, "message": "FairQueue sandbox gateway"})
        return fail("404 Not Found", "Not found")

    def webhook_body(self, reference: str) -> bytes:
        """``charges.webhook_body``: the ``charge.success`` body sent for it now."""
        return charges.webhook_body(self, reference)
