"""The sandbox gateway: a WSGI app that speaks the part of Paystack's HTTP API
FairQueue uses, for development, demos and end-to-end tests.

Standard library + ``requests`` only (no Django), so it runs as its own
process: ``python -m payments.sandbox --port 8002``.

API (same shapes as Paystack; Bearer secret key):
- ``POST /transaction/initialize``: email, amount (minor units), currency,
  reference (letters, digits, ``-``, ``.``, ``=``), callback_url, metadata. A
  reference seen before -> 400 ``Duplicate Transaction Reference``.
- ``GET /transaction/verify/{reference}``: ``data.status`` is ``abandoned``
  until the customer pays (``success``) or declines (``failed``), or the
  control API puts it in any other status Paystack documents.
- ``POST /refund``, ``GET /refund/{id}``, ``GET /refund?reference=``
  (``payments.sandbox.refunds``).
- ``GET /checkout/{access_code}``: the page at ``authorization_url``
  (``payments.sandbox.checkout``).

Webhooks (``payments.sandbox.webhooks``): ``charge.success``, ``refund.*`` and
``charge.dispute.*``, signed, retried on Paystack's backoff when not answered
200. Never ``charge.failed``: Paystack does not send it.

Control endpoints for tests and fault injection, behind a token:
``payments.sandbox.control``.

State is in memory, per process: restarting the sandbox forgets every
transaction (fine for a sandbox; Paystack keeps them forever).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import secrets
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from fairqueue.money import GATEWAY_CURRENCIES
from payments.sandbox import checkout, refunds, shapes, webhooks
from payments.sandbox.challenge import challenge
from payments.sandbox.control import DEFAULT_CONFIG, control
from payments.sandbox.http import Response, StartResponse, fail, json_response, now_iso

logger = logging.getLogger("payments.sandbox")

DEFAULT_WEBHOOK_URL = "http://127.0.0.1:8000/api/v1/webhooks/paystack/"
# The characters Paystack documents for a transaction reference.
REFERENCE_RE = re.compile(r"^[A-Za-z0-9.=-]{1,100}$")


class SandboxGateway:
    """The WSGI application. Thread-safe: one lock around the in-memory state."""

    def __init__(
        self,
        *,
        secret_key: str,
        webhook_url: str = DEFAULT_WEBHOOK_URL,
        public_url: str = "http://127.0.0.1:8002",
        control_token: str = "",
        webhook_retry_scale: float = 1.0,
    ) -> None:
        self.secret_key = secret_key
        self.webhook_url = webhook_url
        self.public_url = public_url.rstrip("/")
        self.control_token = control_token
        self.default_retry_scale = webhook_retry_scale
        self.follow_host = False
        self.lock = threading.Lock()
        self.generation = 0  # bumped by reset(): pending retries and refunds are forgotten
        self.stopped = False
        self.reset()

    def checkout_base(self, body: dict[str, Any]) -> str:
        """Where the checkout pages are: ``public_url``, or with ``follow_host``
        (a sandbox listening on every interface, as under `make run`) the host
        of the callback URL on our own port: the host the customer used, so a
        phone on the LAN reaches the checkout too."""
        if not self.follow_host:
            return self.public_url
        host = urlsplit(str(body.get("callback_url") or "")).hostname
        if not host:
            return self.public_url
        own = urlsplit(self.public_url)
        host = f"[{host}]" if ":" in host else host
        return f"{own.scheme}://{host}:{own.port}"

    # --- state ----------------------------------------------------------------
    def reset(self) -> None:
        with self.lock:
            self.generation += 1
            self.config = {**DEFAULT_CONFIG, "webhook_retry_scale": self.default_retry_scale}
            self.transactions: dict[str, dict[str, Any]] = {}
            self.by_access_code: dict[str, str] = {}
            self.refunds: dict[int, dict[str, Any]] = {}
            self.stats = {
                "initialize_calls": 0,
                "initialize_created": 0,
                "verify_calls": 0,
                "refund_calls": 0,
                "webhook_attempts": 0,
            }
            self.next_id = 1_000_000

    def _take_fault(self) -> str | None:
        """Consume one injected fault, if any: "key", "429", "delay" or "5xx"."""
        with self.lock:
            if self.config["reject_key"]:
                return "key"
            if self.config["rate_limit_next_n"] > 0:
                self.config["rate_limit_next_n"] -= 1
                return "429"
            if self.config["delay_next_n"] > 0:
                self.config["delay_next_n"] -= 1
                return "delay"
            if self.config["fail_next_n_with_5xx"] > 0:
                self.config["fail_next_n_with_5xx"] -= 1
                return "5xx"
        return None

    def api_guard(self, environ: dict[str, Any], *, record_first: bool = False) -> Response | None:
        """The checks every API call passes: the secret key, then one injected
        fault. Returns the refusal to answer with, or None to go on. With
        ``record_first`` an injected 5xx is left to the caller (initialize
        records the transaction before "losing" its answer)."""
        if not self._authorized(environ):
            return fail("401 Unauthorized", "Invalid key")
        latency = float(self.config["latency_seconds"])
        if latency > 0:
            time.sleep(latency)
        fault = self._take_fault()
        if fault == "key":
            return fail("401 Unauthorized", "Invalid key")
        if fault == "429":
            retry_after = str(self.config["rate_limit_retry_after"])
            status, headers, body = fail("429 Too Many Requests", "Too many requests")
            return status, [*headers, ("Retry-After", retry_after)], body
        if fault == "delay":
            time.sleep(float(self.config["delay_seconds"]))
        if fault == "5xx":
            if record_first and self.config["fail_after_recording"]:
                environ["sandbox.lose_answer"] = True
                return None
            return fail("500 Internal Server Error", "Sandbox: injected failure")
        return None

    # --- WSGI -------------------------------------------------------------------
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
            return self.initialize(environ)
        if method == "GET" and len(parts) == 3 and parts[:2] == ["transaction", "verify"]:
            return self.verify(environ, parts[2])
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

    # --- helpers ----------------------------------------------------------------
    def _authorized(self, environ: dict[str, Any]) -> bool:
        header = environ.get("HTTP_AUTHORIZATION", "")
        expected = f"Bearer {self.secret_key}"
        return hmac.compare_digest(header.encode(), expected.encode())

    @staticmethod
    def _body(environ: dict[str, Any]) -> bytes:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        return environ["wsgi.input"].read(length) if length > 0 else b""

    def json_body(self, environ: dict[str, Any]) -> Any:
        raw = self._body(environ)
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            return None

    # --- Paystack API -----------------------------------------------------------
    def initialize(self, environ: dict[str, Any]) -> Response:
        with self.lock:
            self.stats["initialize_calls"] += 1
        refusal = self.api_guard(environ, record_first=True)
        if refusal is not None:
            return refusal
        body = self.json_body(environ)
        if not isinstance(body, dict):
            return fail("400 Bad Request", "Invalid JSON body")
        if self.config["fail_initialize_permanently"]:
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
        with self.lock:
            if reference in self.transactions:
                return fail("400 Bad Request", "Duplicate Transaction Reference")
            self.next_id += 1
            self.transactions[reference] = {
                "id": self.next_id,
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
            self.by_access_code[access_code] = reference
            self.stats["initialize_created"] += 1
        if environ.get("sandbox.lose_answer"):  # recorded, but the answer "gets lost"
            return fail("500 Internal Server Error", "Sandbox: injected failure")
        return json_response(
            "200 OK",
            {
                "status": True,
                "message": "Authorization URL created",
                "data": {
                    "authorization_url": f"{self.checkout_base(body)}/checkout/{access_code}",
                    "access_code": access_code,
                    "reference": reference,
                },
            },
        )

    def verify(self, environ: dict[str, Any], reference: str) -> Response:
        with self.lock:
            self.stats["verify_calls"] += 1
        refusal = self.api_guard(environ)
        if refusal is not None:
            return refusal
        with self.lock:
            tx = self.transactions.get(reference)
            data = shapes.transaction(tx) if tx else None
        if data is None:
            return fail("400 Bad Request", "Transaction reference not found")
        return json_response(
            "200 OK", {"status": True, "message": "Verification successful", "data": data}
        )

    # --- the customer's side ----------------------------------------------------
    def settle(
        self,
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
        with self.lock:
            tx = self.transactions[reference]
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
            webhooks.send(self, reference, "charge.success", data, wait=wait)
        return snapshot

    def webhook_body(self, reference: str) -> bytes:
        """The ``charge.success`` body the sandbox sends for this transaction now."""
        with self.lock:
            data = shapes.transaction(self.transactions[reference])
        return webhooks.signed(self.secret_key, "charge.success", data)[0]
