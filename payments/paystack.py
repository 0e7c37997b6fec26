"""The Paystack client, on ``requests``.

Base URL, secret and timeout come from settings (``PAYSTACK_BASE_URL``,
``PAYSTACK_SECRET_KEY``, ``PAYSTACK_TIMEOUT_SECONDS``); nothing here knows
whether it talks to Paystack or to the sandbox gateway.

Failures are typed: ``GatewayTransientError`` (timeouts, connection errors,
5xx, 429: retried here with exponential backoff and full jitter, bounded in
attempts and in time) and ``GatewayPermanentError`` (4xx, ``"status": false``,
an answer we cannot read: never retried). The secret is never logged; log
lines carry the reference and the status only.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import requests
from django.conf import settings

logger = logging.getLogger(__name__)

DUPLICATE_REFERENCE_MESSAGE = "duplicate transaction reference"
REFERENCE_NOT_FOUND_MESSAGE = "transaction reference not found"


class GatewayTransientError(Exception):
    """The gateway may succeed if asked again later."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        self.status_code = status_code
        super().__init__(message)


class GatewayPermanentError(Exception):
    """The gateway refused; asking again with the same request will not help."""

    def __init__(self, message: str, *, status_code: int | None = None, body: Any = None) -> None:
        self.status_code = status_code
        self.body = body
        self.gateway_message = message
        super().__init__(message)

    @property
    def duplicate_reference(self) -> bool:
        """Initialize was refused because the reference exists: an earlier
        attempt got through."""
        return DUPLICATE_REFERENCE_MESSAGE in self.gateway_message.lower()

    @property
    def reference_not_found(self) -> bool:
        return REFERENCE_NOT_FOUND_MESSAGE in self.gateway_message.lower()


@dataclass(frozen=True)
class InitializeAnswer:
    authorization_url: str
    access_code: str
    reference: str
    raw: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class VerifyAnswer:
    status: str
    reference: str
    amount: Any
    currency: Any
    transaction_id: str
    raw: dict[str, Any] = field(repr=False)


def sign(body: bytes, secret: str) -> str:
    """``x-paystack-signature``: HMAC-SHA512 of the raw body, hex."""
    return hmac.new(secret.encode(), body, hashlib.sha512).hexdigest()


def signature_valid(body: bytes, signature: str | None, secret: str) -> bool:
    if not signature or not secret:
        return False
    return hmac.compare_digest(sign(body, secret), signature.strip().lower())


_local = threading.local()


def _session() -> requests.Session:
    # One keep-alive session per thread: requests.Session is not documented
    # as thread-safe.
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = requests.Session()
    return session


class PaystackClient:
    def __init__(
        self,
        *,
        base_url: str | None = None,
        secret_key: str | None = None,
        timeout: float | None = None,
        max_attempts: int | None = None,
        backoff_base: float | None = None,
        backoff_cap: float = 4.0,
        deadline: float | None = None,
    ) -> None:
        self.base_url = (base_url or settings.PAYSTACK_BASE_URL).rstrip("/")
        self._secret = secret_key or settings.PAYSTACK_SECRET_KEY
        self.timeout = timeout or settings.PAYSTACK_TIMEOUT_SECONDS
        self.max_attempts = max(1, max_attempts or settings.PAYSTACK_MAX_ATTEMPTS)
        self.backoff_base = (
            backoff_base if backoff_base is not None else settings.PAYSTACK_RETRY_BASE_SECONDS
        )
        self.backoff_cap = backoff_cap
        # The whole call, retries included, stays under this (each attempt's
        # timeout shrinks to what is left), so a request thread is never held
        # for max_attempts full timeouts.
        self.deadline = deadline or 2 * self.timeout

    def __repr__(self) -> str:  # never show the secret
        return f"PaystackClient(base_url={self.base_url!r})"

    # --- API -----------------------------------------------------------------
    def initialize(
        self,
        *,
        email: str,
        amount: int,
        currency: str,
        reference: str,
        callback_url: str,
        metadata: dict[str, Any],
    ) -> InitializeAnswer:
        body = {
            "email": email,
            "amount": amount,
            "currency": currency,
            "reference": reference,
            "callback_url": callback_url,
            "metadata": metadata,
        }
        payload = self._call("POST", "/transaction/initialize", reference=reference, json=body)
        data = payload.get("data")
        if not isinstance(data, dict) or not data.get("authorization_url"):
            raise GatewayPermanentError("initialize answer has no authorization_url", body=payload)
        return InitializeAnswer(
            authorization_url=str(data["authorization_url"]),
            access_code=str(data.get("access_code") or ""),
            reference=str(data.get("reference") or reference),
            raw=payload,
        )

    def verify(self, *, reference: str) -> VerifyAnswer:
        path = f"/transaction/verify/{quote(reference, safe='')}"
        payload = self._call("GET", path, reference=reference)
        data = payload.get("data")
        if not isinstance(data, dict) or "status" not in data:
            raise GatewayPermanentError("verify answer has no data.status", body=payload)
        return VerifyAnswer(
            status=str(data.get("status") or ""),
            reference=str(data.get("reference") or ""),
            amount=data.get("amount"),
            currency=data.get("currency"),
            transaction_id=str(data.get("id") or ""),
            raw=payload,
        )

    # --- transport -------------------------------------------------------------
    def _call(self, method: str, path: str, *, reference: str, **kwargs: Any) -> dict[str, Any]:
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            remaining = self.deadline - (time.monotonic() - started)
            try:
                return self._once(
                    method,
                    path,
                    reference=reference,
                    timeout=max(0.5, min(self.timeout, remaining)),
                    **kwargs,
                )
            except GatewayTransientError as exc:
                elapsed = time.monotonic() - started
                delay = random.uniform(0, min(self.backoff_cap, self.backoff_base * 2**attempt))
                if attempt >= self.max_attempts or elapsed + delay >= self.deadline:
                    logger.warning(
                        "paystack %s %s reference=%s gave up after %d attempts: %s",
                        method,
                        path,
                        reference,
                        attempt,
                        exc,
                    )
                    raise
                logger.info(
                    "paystack reference=%s transient failure (attempt %d): %s; retry in %.2fs",
                    reference,
                    attempt,
                    exc,
                    delay,
                )
                time.sleep(delay)

    def _once(
        self, method: str, path: str, *, reference: str, timeout: float, **kwargs: Any
    ) -> dict[str, Any]:
        headers = {
            "Authorization": f"Bearer {self._secret}",
            "Accept": "application/json",
            "User-Agent": "fairqueue/1.0",
        }
        try:
            response = _session().request(
                method, self.base_url + path, headers=headers, timeout=timeout, **kwargs
            )
        except requests.Timeout as exc:
            raise GatewayTransientError(f"timeout: {type(exc).__name__}") from exc
        except requests.ConnectionError as exc:
            raise GatewayTransientError(f"connection error: {type(exc).__name__}") from exc
        except requests.RequestException as exc:
            raise GatewayTransientError(f"request error: {type(exc).__name__}") from exc

        status_code = response.status_code
        if status_code == 429 or status_code >= 500:
            raise GatewayTransientError(f"HTTP {status_code}", status_code=status_code)
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            raise GatewayPermanentError(
                f"HTTP {status_code}: answer is not a JSON object", status_code=status_code
            )
        message = str(payload.get("message") or "")
        logger.info(
            "paystack reference=%s HTTP %d status=%s", reference, status_code, payload.get("status")
        )
        if status_code >= 400 or payload.get("status") is not True:
            raise GatewayPermanentError(
                message or f"HTTP {status_code}", status_code=status_code, body=payload
            )
        return payload
