"""The optional bot challenge on sign-in requests and queue joins.

Off unless ``CHALLENGE_PROVIDER=turnstile``. Then the page renders
Cloudflare Turnstile's widget (site key ``CHALLENGE_SITE_KEY``), the browser
sends the token it gets in the ``X-Challenge-Token`` header, and the server
checks it with the provider's siteverify API over HTTP before doing anything
else: ``POST CHALLENGE_VERIFY_URL`` with ``secret``, ``response`` and
``remoteip``, answered ``{"success": bool, "error-codes": [...]}``.
``make run`` points the URL at the sandbox gateway's test verifier.

A plain ``requests`` call rather than a library: the Django Turnstile
packages are form fields for server-rendered forms, and our forms post JSON
to the API. Fails closed: a verifier that cannot be reached refuses the
request (503 ``challenge_unavailable``), it never waves it through.
"""

from __future__ import annotations

import logging

import requests
from django.conf import settings
from drf_spectacular.utils import OpenApiParameter

from fairqueue.errors import Busy, ErrorCode, Forbidden

logger = logging.getLogger(__name__)

CHALLENGE_HEADER = "X-Challenge-Token"
PROVIDERS = ("turnstile",)  # config/safety.py refuses any other non-empty value
MAX_TOKEN_LENGTH = 2048  # Turnstile's own limit

CHALLENGE_HEADER_PARAMETER = OpenApiParameter(
    CHALLENGE_HEADER,
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="The bot challenge's token, when the site has the challenge on "
    "(GET the page's config: challenge_site_key).",
)


def _failed(codes: list[str]) -> Forbidden:
    return Forbidden(
        "Please complete the check that you are not a robot, then try again.",
        code=ErrorCode.CHALLENGE_FAILED,
        details={"error_codes": codes},
    )


def _unavailable() -> Busy:
    return Busy(
        "The robot check cannot be verified right now; try again shortly.",
        code=ErrorCode.CHALLENGE_UNAVAILABLE,
    )


def challenge_enabled() -> bool:
    return settings.CHALLENGE_PROVIDER in PROVIDERS


def challenge_verify(*, token: str | None, remote_ip: str) -> None:
    """Nothing when the challenge is off or passed; 403 ``challenge_failed``
    or 503 ``challenge_unavailable`` otherwise."""
    if not challenge_enabled():
        return
    if not token or len(token) > MAX_TOKEN_LENGTH:
        raise _failed(["missing-input-response"])
    try:
        answer = requests.post(
            settings.CHALLENGE_VERIFY_URL,
            data={
                "secret": settings.CHALLENGE_SECRET_KEY,
                "response": token,
                "remoteip": remote_ip,
            },
            timeout=settings.CHALLENGE_TIMEOUT_SECONDS,
        )
        answer.raise_for_status()
        result = answer.json()
    except (requests.RequestException, ValueError) as exc:
        logger.warning("challenge verifier unavailable: %s", type(exc).__name__)
        raise _unavailable() from exc
    if not isinstance(result, dict):
        raise _unavailable()
    if result.get("success") is not True:
        codes = [str(c) for c in result.get("error-codes") or []][:5]
        if any(c in ("missing-input-secret", "invalid-input-secret") for c in codes):
            logger.error("challenge verifier refused our secret: %s", codes)
            raise _unavailable()
        raise _failed(codes)
