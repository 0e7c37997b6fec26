"""The sandbox's state: its transactions, refunds, counters and injected
faults, in memory, behind one lock, and the checks every API call passes (the
secret key, then one injected fault). Every handler module works on it; none
of them imports the WSGI app (``devtools.sandbox.app``), which imports them all.

State is in memory, per process: restarting the sandbox forgets every
transaction (fine for a sandbox; Paystack keeps them forever).
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from devtools.sandbox.http import Response, fail

DEFAULT_WEBHOOK_URL = "http://127.0.0.1:8000/api/v1/webhooks/paystack/"

# What ``GET|POST /_sandbox/config`` reads and changes (``devtools.sandbox.control``).
DEFAULT_CONFIG: dict[str, Any] = {
    # Every API call takes at least this long: the round trip to Paystack from
    # where the servers are (a few hundred ms), which a sale's web workers wait out.
    "latency_seconds": 0.0,
    "fail_next_n_with_5xx": 0,
    "fail_after_recording": False,
    "delay_next_n": 0,
    "delay_seconds": 0.0,
    # Initialize answers 400 status:false (a request the gateway finds invalid).
    "fail_initialize_permanently": False,
    # Every API call answers 401 "Invalid key" (a rotated secret key).
    "reject_key": False,
    # The next N API calls answer 429 with this Retry-After.
    "rate_limit_next_n": 0,
    "rate_limit_retry_after": 1,
    "webhook_delay_seconds": 0.0,
    "duplicate_webhooks": 1,
    "send_webhooks": True,
    # Failed deliveries are retried (Paystack: 4 x 3 min, then hourly for 72 h),
    # the schedule multiplied by webhook_retry_scale.
    "webhook_retries": True,
    "webhook_retry_scale": 1.0,
    "refund_outcome": "processed",
    "refund_delay_seconds": 0.0,
}


class SandboxState:
    """Thread-safe: one lock (``lock``) around everything below."""

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

    # --- helpers ----------------------------------------------------------------
    def _authorized(self, environ: dict[str, Any]) -> bool:
        header = environ.get("HTTP_AUTHORIZATION", "")
        expected = f"Bearer {self.secret_key}"
        return hmac.compare_digest(header.encode(), expected.encode())

    @staticmethod
    def raw_body(environ: dict[str, Any]) -> bytes:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        return environ["wsgi.input"].read(length) if length > 0 else b""

    def json_body(self, environ: dict[str, Any]) -> Any:
        raw = self.raw_body(environ)
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            return None
