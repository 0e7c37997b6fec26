"""The sandbox gateway: a WSGI app that speaks the part of Paystack's HTTP API
FairQueue uses, for development, demos and end-to-end tests.

Standard library + ``requests`` only (no Django), so it runs as its own
process: ``python -m payments.sandbox --port 8002``.

API (same shapes as Paystack):
- ``POST /transaction/initialize`` (Bearer secret): email, amount (minor
  units), currency, reference, callback_url, metadata. A reference seen
  before -> 400 ``{"status": false, "message": "Duplicate Transaction Reference"}``.
- ``GET /transaction/verify/{reference}`` (Bearer secret): ``data.status`` is
  ``abandoned`` until the customer pays (``success``) or declines (``failed``).
- ``GET /checkout/{access_code}``: the page at ``authorization_url``, with Pay
  and Decline buttons. Either sends a signed ``charge.success`` /
  ``charge.failed`` webhook (HMAC-SHA512 of the body with the secret key, in
  ``x-paystack-signature``) to the webhook URL and redirects to callback_url.

Control endpoints for tests and fault injection (no auth; never expose the
sandbox publicly):
- ``GET|POST /_sandbox/config``: ``fail_next_n_with_5xx`` (API calls answer
  500), ``fail_after_recording`` (an injected 500 on initialize happens after
  the transaction was recorded: "the answer got lost"), ``delay_next_n``
  + ``delay_seconds`` (slow answers, for timeouts), ``fail_initialize_permanently``
  (400 ``status: false``), ``webhook_delay_seconds``, ``duplicate_webhooks``
  (copies of each webhook, sent in parallel), ``send_webhooks``.
- ``POST /_sandbox/pay/{reference}``: the customer pays (or, with
  ``{"outcome": "failed"}``, declines) without a browser; ``amount`` /
  ``currency`` override what is reported (mismatch tests); ``send_webhook``.
- ``POST /_sandbox/webhooks/{reference}/resend``: deliver the last webhook again.
- ``GET /_sandbox/transactions/{reference}``, ``GET /_sandbox/stats``,
  ``POST /_sandbox/reset``.

State is in memory, per process: restarting the sandbox forgets every
transaction (fine for a sandbox; Paystack keeps them forever).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import html
import json
import logging
import re
import secrets
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import requests

from payments.sandbox.challenge import challenge
from payments.sandbox.control import DEFAULT_CONFIG, control
from payments.sandbox.http import Response, StartResponse, fail, json_response, now_iso, with_query

logger = logging.getLogger("payments.sandbox")

DEFAULT_WEBHOOK_URL = "http://127.0.0.1:8000/api/v1/webhooks/paystack/"
REFERENCE_RE = re.compile(r"^[A-Za-z0-9.=_-]{1,100}$")
CURRENCIES = {"NGN", "GHS", "ZAR", "USD", "KES", "XOF", "EGP"}


class SandboxGateway:
    """The WSGI application. Thread-safe: one lock around the in-memory state."""

    def __init__(
        self,
        *,
        secret_key: str,
        webhook_url: str = DEFAULT_WEBHOOK_URL,
        public_url: str = "http://127.0.0.1:8002",
    ) -> None:
        self.secret_key = secret_key
        self.webhook_url = webhook_url
        self.public_url = public_url.rstrip("/")
        self.follow_host = False
        self.lock = threading.Lock()
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
        with getattr(self, "lock", threading.Lock()):
            self.config = dict(DEFAULT_CONFIG)
            self.transactions: dict[str, dict[str, Any]] = {}
            self.by_access_code: dict[str, str] = {}
            self.stats = {"initialize_calls": 0, "initialize_created": 0, "verify_calls": 0}
            self.next_id = 1_000_000

    def _take_fault(self) -> str | None:
        """Consume one injected fault, if any: "5xx" or "delay"."""
        with self.lock:
            if self.config["delay_next_n"] > 0:
                self.config["delay_next_n"] -= 1
                return "delay"
            if self.config["fail_next_n_with_5xx"] > 0:
                self.config["fail_next_n_with_5xx"] -= 1
                return "5xx"
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
        if len(parts) == 2 and parts[0] == "checkout" and method == "GET":
            return self.checkout_page(parts[1])
        if len(parts) == 3 and parts[0] == "checkout" and parts[2] in ("pay", "decline"):
            if method == "POST":
                return self.checkout_submit(parts[1], parts[2])
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
        if not self._authorized(environ):
            return fail("401 Unauthorized", "Invalid key")
        fault = self._take_fault()
        if fault == "delay":
            time.sleep(float(self.config["delay_seconds"]))
        if fault == "5xx" and not self.config["fail_after_recording"]:
            return fail("500 Internal Server Error", "Sandbox: injected failure")
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
        if currency not in CURRENCIES:
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
                "gateway_response": "The transaction was not completed",
                "created_at": now_iso(),
                "paid_at": None,
                "reported_amount": amount,
                "reported_currency": currency,
                "webhooks": [],
            }
            self.by_access_code[access_code] = reference
            self.stats["initialize_created"] += 1
        if fault == "5xx":  # recorded, but the answer "gets lost"
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

    def _transaction_data(self, tx: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": tx["id"],
            "domain": "test",
            "status": tx["status"],
            "reference": tx["reference"],
            "amount": tx["reported_amount"],
            "currency": tx["reported_currency"],
            "message": None,
            "gateway_response": tx["gateway_response"],
            "paid_at": tx["paid_at"],
            "created_at": tx["created_at"],
            "channel": "card",
            "metadata": tx["metadata"],
            "customer": {"email": tx["email"]},
            "requested_amount": tx["amount"],
        }

    def verify(self, environ: dict[str, Any], reference: str) -> Response:
        with self.lock:
            self.stats["verify_calls"] += 1
        if not self._authorized(environ):
            return fail("401 Unauthorized", "Invalid key")
        fault = self._take_fault()
        if fault == "delay":
            time.sleep(float(self.config["delay_seconds"]))
        elif fault == "5xx":
            return fail("500 Internal Server Error", "Sandbox: injected failure")
        with self.lock:
            tx = self.transactions.get(reference)
            data = self._transaction_data(tx) if tx else None
        if data is None:
            return fail("400 Bad Request", "Transaction reference not found")
        return json_response(
            "200 OK", {"status": True, "message": "Verification successful", "data": data}
        )

    # --- the customer's side ----------------------------------------------------
    def checkout_page(self, access_code: str) -> Response:
        with self.lock:
            reference = self.by_access_code.get(access_code)
            tx = dict(self.transactions[reference]) if reference else None
        if tx is None:
            return "404 Not Found", [("Content-Type", "text/plain")], b"Unknown checkout"
        amount = f"{tx['currency']} {tx['amount'] / 100:,.2f}"
        done = tx["status"] in ("success", "failed")
        buttons = (
            f"<p>This payment is <strong>{html.escape(tx['status'])}</strong>.</p>"
            if done
            else (
                f'<form method="post" action="/checkout/{html.escape(access_code)}/pay">'
                '<button type="submit" name="pay">Pay</button></form>'
                f'<form method="post" action="/checkout/{html.escape(access_code)}/decline">'
                '<button type="submit" name="decline">Decline</button></form>'
            )
        )
        page = (
            "<!doctype html><html><head><meta charset='utf-8'><title>Sandbox checkout</title>"
            "<style>body{font-family:sans-serif;max-width:28rem;margin:3rem auto}"
            "form{display:inline-block;margin-right:1rem}button{font-size:1.1rem;"
            "padding:.5rem 1.5rem}</style></head><body>"
            "<h1>Sandbox checkout</h1>"
            "<p>Test gateway: no real money moves.</p>"
            f"<p>Pay <strong>{html.escape(amount)}</strong> as {html.escape(tx['email'])}</p>"
            f"<p>Reference <code>{html.escape(tx['reference'])}</code></p>"
            f"{buttons}</body></html>"
        )
        return "200 OK", [("Content-Type", "text/html; charset=utf-8")], page.encode()

    def checkout_submit(self, access_code: str, action: str) -> Response:
        with self.lock:
            reference = self.by_access_code.get(access_code)
        if reference is None:
            return "404 Not Found", [("Content-Type", "text/plain")], b"Unknown checkout"
        outcome = "success" if action == "pay" else "failed"
        tx = self.settle(reference, outcome=outcome)
        callback = tx.get("callback_url") or ""
        if callback:
            location = with_query(callback, trxref=reference, reference=reference)
            return "303 See Other", [("Location", location), ("Content-Type", "text/plain")], b""
        return self.checkout_page(access_code)

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
        """The customer pays (``success``) or declines (``failed``); then the
        webhook(s) go out, in the background unless ``wait``."""
        with self.lock:
            tx = self.transactions[reference]
            tx["status"] = outcome
            tx["gateway_response"] = "Successful" if outcome == "success" else "Declined"
            tx["paid_at"] = now_iso() if outcome == "success" else None
            if amount is not None:
                tx["reported_amount"] = amount
            if currency is not None:
                tx["reported_currency"] = currency
            snapshot = dict(tx)
            if send_webhook is None:
                send_webhook = bool(self.config["send_webhooks"])
        if send_webhook:
            self.send_webhooks(reference, wait=wait)
        return snapshot

    # --- webhooks ----------------------------------------------------------------
    def webhook_body(self, reference: str) -> bytes:
        with self.lock:
            tx = self.transactions[reference]
            event = "charge.success" if tx["status"] == "success" else "charge.failed"
            data = self._transaction_data(tx)
        return json.dumps({"event": event, "data": data}, separators=(",", ":")).encode()

    def send_webhooks(self, reference: str, *, wait: bool) -> list[int | str]:
        body = self.webhook_body(reference)
        signature = hmac.new(self.secret_key.encode(), body, hashlib.sha512).hexdigest()
        copies = max(1, int(self.config["duplicate_webhooks"]))
        delay = float(self.config["webhook_delay_seconds"])
        results: list[int | str] = []
        barrier = threading.Barrier(copies)

        def deliver() -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=5)  # copies leave together: a real race
            try:
                answer = requests.post(
                    self.webhook_url,
                    data=body,
                    headers={"Content-Type": "application/json", "x-paystack-signature": signature},
                    timeout=30,
                )
                outcome: int | str = answer.status_code
            except requests.RequestException as exc:
                outcome = f"error: {type(exc).__name__}"
            with self.lock:
                results.append(outcome)
                self.transactions[reference]["webhooks"].append(
                    {"at": now_iso(), "result": outcome}
                )

        def run() -> None:
            if delay > 0:
                time.sleep(delay)
            threads = [threading.Thread(target=deliver, daemon=True) for _ in range(copies)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        if wait and delay <= 0:
            run()
        else:
            threading.Thread(target=run, daemon=True).start()
        return results
