"""Webhook delivery as Paystack does it: the body signed with the secret key
(HMAC-SHA512, hex, in ``x-paystack-signature``), POSTed to the webhook URL,
and, when the answer is not a 200, tried again on a backoff: every 3 minutes
for the first 4 tries, then hourly, for 72 hours. ``webhook_retry_scale``
(config) compresses that schedule for tests: 0.001 makes 3 minutes 0.18 s."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import threading
import time
from typing import Any

import requests

from devtools.sandbox.http import now_iso
from devtools.sandbox.state import SandboxState

logger = logging.getLogger("devtools.sandbox")

# Pauses before each retry, in seconds: 4 x 3 minutes, then hourly up to 72 h.
RETRY_SCHEDULE = (180.0,) * 4 + (3600.0,) * 72


def signed(secret_key: str, event: str, data: dict[str, Any]) -> tuple[bytes, str]:
    body = json.dumps({"event": event, "data": data}, separators=(",", ":")).encode()
    return body, hmac.new(secret_key.encode(), body, hashlib.sha512).hexdigest()


def send(
    gateway: SandboxState, reference: str, event: str, data: dict[str, Any], *, wait: bool
) -> list[int | str]:
    """Deliver ``event`` about the transaction ``reference`` (each attempt is
    recorded on it). With ``wait`` the first attempt of each copy is made
    before returning (and its results returned); retries always run in the
    background."""
    with gateway.lock:
        config = dict(gateway.config)
        generation = gateway.generation
    if not config["send_webhooks"]:
        return []
    body, signature = signed(gateway.secret_key, event, data)
    copies = max(1, int(config["duplicate_webhooks"]))
    delay = float(config["webhook_delay_seconds"])
    results: list[int | str] = []
    barrier = threading.Barrier(copies)

    def first_attempt() -> bool:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=5)  # copies leave together: a real race
        outcome = _post(gateway, reference, event, body, signature, attempt=1)
        with gateway.lock:
            results.append(outcome)
        return _delivered(outcome)

    def retries() -> None:
        if not config["webhook_retries"]:
            return
        scale = float(config["webhook_retry_scale"])
        for attempt, pause in enumerate(RETRY_SCHEDULE, start=2):
            time.sleep(pause * scale)
            if gateway.generation != generation or gateway.stopped:
                return  # the sandbox was reset or stopped: forget it
            outcome = _post(gateway, reference, event, body, signature, attempt=attempt)
            if _delivered(outcome):
                return
        logger.warning("sandbox: gave up delivering %s for %s", event, reference)

    def copy() -> None:
        if not first_attempt():
            retries()

    def run() -> None:
        if delay > 0:
            time.sleep(delay)
        threads = [threading.Thread(target=copy, daemon=True) for _ in range(copies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    if wait and delay <= 0:
        firsts = [
            threading.Thread(target=_first_then_background, args=(first_attempt, retries))
            for _ in range(copies)
        ]
        for thread in firsts:
            thread.start()
        for thread in firsts:
            thread.join()
    else:
        threading.Thread(target=run, daemon=True).start()
    return results


def _first_then_background(first_attempt, retries) -> None:
    """The first attempt in this thread (the caller waits for it); retries,
    if any are needed, in a new background thread."""
    if not first_attempt():
        threading.Thread(target=retries, daemon=True).start()


def _delivered(outcome: int | str) -> bool:
    return isinstance(outcome, int) and 200 <= outcome < 300


def _post(
    gateway: SandboxState,
    reference: str,
    event: str,
    body: bytes,
    signature: str,
    *,
    attempt: int,
) -> int | str:
    try:
        answer = requests.post(
            gateway.webhook_url,
            data=body,
            headers={"Content-Type": "application/json", "x-paystack-signature": signature},
            timeout=30,
            allow_redirects=False,
        )
        outcome: int | str = answer.status_code
    except requests.RequestException as exc:
        outcome = f"error: {type(exc).__name__}"
    with gateway.lock:
        gateway.stats["webhook_attempts"] += 1
        tx = gateway.transactions.get(reference)
        if tx is not None:
            tx["webhooks"].append(
                {"event": event, "at": now_iso(), "attempt": attempt, "result": outcome}
            )
    if not _delivered(outcome):
        logger.info("sandbox: %s for %s attempt %d -> %s", event, reference, attempt, outcome)
    return outcome
