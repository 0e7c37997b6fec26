"""The Paystack client, on ``requests``.

Base URL, secret and timeout come from settings (``PAYSTACK_BASE_URL``,
``PAYSTACK_SECRET_KEY``, ``PAYSTACK_TIMEOUT_SECONDS``); nothing here knows
whether it talks to Paystack or to the sandbox gateway.

Failures are typed: ``GatewayTransientError`` (timeouts, connection errors,
5xx, 429: retried here with exponential backoff and full jitter, bounded in
attempts and in time; a 429's ``Retry-After`` is waited out when it fits in
the call's deadline, else handed to the caller) and ``GatewayPermanentError``
(4xx, ``"status": false``, an answer we cannot read: never retried). The
secret is never logged; log lines carry the reference and the status only.

Calls: ``POST /transaction/initialize``, ``GET /transaction/verify/:reference``,
``POST /refund``, ``GET /refund/:id`` and ``GET /refund?reference=`` (Paystack's
API reference).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import os
import random
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeGuard
from urllib.parse import quote

import requests
from django.conf import settings

logger = logging.getLogger(__name__)

DUPLICATE_REFERENCE_MESSAGE = "duplicate transaction reference"
# How the gateway says it has never seen a reference: the 400 of its verify
# endpoint, and the 404 of its OpenAPI description ("Entity not found").
NOT_FOUND_MESSAGES = ("transaction reference not found", "entity not found")
# A Retry-After longer than this is not believed (a misconfigured proxy).
MAX_RETRY_AFTER_SECONDS = 3600


class GatewayTransientError(Exception):
    """The gateway may succeed if asked again later; ``retry_after`` is what it
    asked us to wait (a 429's ``Retry-After``), in seconds, if it said."""

    def __init__(
        self, message: str, *, status_code: int | None = None, retry_after: int | None = None
    ) -> None:
        self.status_code = status_code
        self.retry_after = retry_after
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
        message = self.gateway_message.lower()
        return self.status_code == 404 or any(m in message for m in NOT_FOUND_MESSAGES)

    @property
    def credentials_refused(self) -> bool:
        """Our secret key was refused (rotated, revoked, wrong environment)."""
        return self.status_code in (401, 403)


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> int | None:
    """``Retry-After`` as whole seconds: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = int(value)
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = int((when - (now or datetime.now(UTC))).total_seconds() + 0.999)
    return max(0, min(seconds, MAX_RETRY_AFTER_SECONDS))


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


@dataclass(frozen=True)
class RefundAnswer:
    refund_id: str
    status: str
    amount: Any
    currency: Any
    transaction_reference: str
    raw: dict[str, Any] = field(repr=False)
    merchant_note: str = ""

    @classmethod
    def from_data(cls, data: dict[str, Any], raw: dict[str, Any]) -> RefundAnswer:
        transaction = data.get("transaction")
        reference = data.get("transaction_reference") or (
            transaction.get("reference") if isinstance(transaction, dict) else ""
        )
        return cls(
            refund_id=str(data.get("id") or ""),
            status=str(data.get("status") or ""),
            amount=data.get("amount"),
            currency=data.get("currency"),
            transaction_reference=str(reference or ""),
            raw=raw,
            merchant_note=str(data.get("merchant_note") or ""),
        )


def merchant_amount(data: dict[str, Any]) -> Any:
    """What the customer paid for, from a transaction's ``data`` (verify
    answer or ``charge.success`` body), to compare with what we asked for.

    With the account's "pass fees to customer" setting, Paystack charges the
    customer the amount plus its fees: ``amount`` is then what was charged
    and ``requested_amount`` what the merchant asked for (the verify example
    of Paystack's API reference: 40333 charged for 30050 requested). The
    requested amount counts only when the charge covers it; otherwise, or
    without it, ``amount`` is compared as it is (invariant 7 flags a
    mismatch)."""
    amount, requested = data.get("amount"), data.get("requested_amount")
    if _is_int(amount) and _is_int(requested) and 0 < requested <= amount:
        return requested
    return amount


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


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
    # as thread-safe. It does not read the environment on each call (requests'
    # ``trust_env``: every proxy variable, on every call): ``_route`` has.
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = requests.Session()
        session.trust_env = False
    return session


@dataclass(frozen=True)
class _Route:
    proxies: dict[str, str]
    verify: bool | str


@functools.lru_cache(maxsize=16)
def _route(base_url: str) -> _Route:
    """How calls to ``base_url`` leave this process, from the environment as
    requests reads it (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``,
    ``NO_PROXY``; a CA bundle in ``REQUESTS_CA_BUNDLE`` or
    ``CURL_CA_BUNDLE``), read once per process: set them before it starts."""
    verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    return _Route(requests.utils.get_environ_proxies(base_url), verify)


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
            amount=merchant_amount(data),
            currency=data.get("currency"),
            transaction_id=str(data.get("id") or ""),
            raw=payload,
        )

    def refund(
        self,
        *,
        reference: str,
        amount: int | None,
        currency: str,
        merchant_note: str,
        customer_note: str,
    ) -> RefundAnswer:
        """``POST /refund``: ``amount`` None refunds all that is left."""
        body: dict[str, Any] = {
            "transaction": reference,
            "currency": currency,
            "merchant_note": merchant_note,
            "customer_note": customer_note,
        }
        if amount is not None:
            body["amount"] = amount
        payload = self._call("POST", "/refund", reference=reference, json=body)
        return self._refund_answer(payload)

    def refund_fetch(self, *, refund_id: str, reference: str) -> RefundAnswer:
        path = f"/refund/{quote(refund_id, safe='')}"
        return self._refund_answer(self._call("GET", path, reference=reference))

    def refunds_of(self, *, reference: str) -> list[RefundAnswer]:
        """The refunds the gateway has for a transaction (``GET /refund``,
        filtered by the transaction's reference)."""
        payload = self._call("GET", "/refund", reference=reference, params={"reference": reference})
        data = payload.get("data")
        if not isinstance(data, list):
            raise GatewayPermanentError("refund list answer has no data list", body=payload)
        answers = [RefundAnswer.from_data(d, payload) for d in data if isinstance(d, dict)]
        # A filter the gateway ignored must not hand us another transaction's refunds.
        return [a for a in answers if a.transaction_reference in ("", reference)]

    @staticmethod
    def _refund_answer(payload: dict[str, Any]) -> RefundAnswer:
        data = payload.get("data")
        if not isinstance(data, dict) or "status" not in data:
            raise GatewayPermanentError("refund answer has no data.status", body=payload)
        return RefundAnswer.from_data(data, payload)

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
                if exc.retry_after is not None:
                    delay = max(delay, float(exc.retry_after))
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
            route = _route(self.base_url)
            response = _session().request(
                method,
                self.base_url + path,
                headers=headers,
                timeout=timeout,
                proxies=route.proxies,
                verify=route.verify,
                **kwargs,
            )
        except requests.Timeout as exc:
            raise GatewayTransientError(f"timeout: {type(exc).__name__}") from exc
        except requests.ConnectionError as exc:
            raise GatewayTransientError(f"connection error: {type(exc).__name__}") from exc
        except requests.RequestException as exc:
            raise GatewayTransientError(f"request error: {type(exc).__name__}") from exc

        status_code = response.status_code
        if status_code == 429:
            raise GatewayTransientError(
                "HTTP 429",
                status_code=429,
                retry_after=retry_after_seconds(response.headers.get("Retry-After")),
            )
        if status_code >= 500:
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
