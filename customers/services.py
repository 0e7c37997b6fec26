"""Customer sign-in with an emailed one-time code.

Design choices (the why):

- **Customers are created on the first successful verify**, not on request.
  Anyone can type any address into the request form; only a verify proves the
  address is theirs, so only then does it become an account. The request
  therefore does the same work for every address (no customer lookup at all),
  which makes "known or not" invisible in both the answer and its timing.
- **Codes are stored as HMAC-SHA256(SECRET_KEY, salt:email:code)**, the salt
  random per row. A 6-digit code has only 10^6 values, so no hash, however
  slow, survives an offline search by someone holding the database *and* the
  key; what protects a leaked table is the server-side key, and the code is
  dead within minutes anyway. Django's password hashers (PBKDF2, ~0.3 s of
  CPU each) would add nothing here but would turn every sign-in into CPU
  work on the sync web workers during a flash-sale rush.
- **A code is bound to the client that asked for it.** The request answers
  with a random nonce (only its hash is stored); verify must carry it. A
  guess without that nonce finds no code, so it never counts against, locks
  or spends the code the real owner is typing, and another client's request
  for the same address does not void it either. A resend from the same
  client (same nonce), at most once per OTP_RESEND_SECONDS, adds a code: the
  ones it sent before keep working for their lifetime (the first email often
  arrives last, and a phone reloads the page on the way to the mail app).
  Every wrong guess counts against each live code of the client, so a
  resend adds no guesses: OTP_MAX_ATTEMPTS per client and code.
- **Limits per mailbox** (OTP_EMAIL_LIMITS, e.g. 5 codes an hour, 20 a day)
  bound what a stranger can send to someone's inbox and how many codes
  (each with OTP_MAX_ATTEMPTS guesses) exist for one address; the limits
  per client address live in the throttles (customers/throttling.py).
- **One mailbox, one customer**: addresses are looked up by their canonical
  form (customers/emails.py), so ``ada+2@`` signs in as ``ada@``.
- **The resend interval** is decided under a transaction-scoped advisory
  lock per address, so two parallel requests cannot both pass the check and
  both send a code.
- **Verify locks the client's newest code row** (``SELECT ... FOR UPDATE``),
  counts a wrong attempt or consumes the code with conditional UPDATEs, and
  commits before answering: a wrong attempt is counted even though the
  request fails, and two parallel verifies of one code give one token at most.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.mail import send_mail
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.crypto import salted_hmac

from customers.emails import email_canonical, email_normalize
from customers.models import Customer, OneTimeCode
from customers.revocation import auth_state_warm
from customers.throttling import rate_limit_hit, rates_parse
from customers.tokens import customer_token_issue
from fairqueue.errors import AppError, Busy, ErrorCode, Forbidden, RateLimited
from fairqueue.locks import sign_in_code_lock

logger = logging.getLogger(__name__)

CODE_DIGITS = 6
_HMAC_KEY_SALT = "customers.otp"


@dataclass(frozen=True)
class OtpSent:
    expires_in: int  # seconds
    resend_after: int  # seconds
    nonce: str  # binds the code to this client: verify must carry it


@dataclass(frozen=True)
class SignIn:
    token: str
    customer_id: uuid.UUID
    expires_at: datetime


NONCE_BYTES = 24


def _nonce_hash(nonce: str) -> str:
    return hashlib.sha256(nonce.encode()).hexdigest()


def _code_new() -> str:
    return f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"


def _code_digest(*, salt: str, email: str, code: str) -> str:
    return salted_hmac(_HMAC_KEY_SALT, f"{salt}:{email}:{code}", algorithm="sha256").hexdigest()


def _code_hash(*, email: str, code: str) -> str:
    salt = secrets.token_hex(16)
    return f"{salt}${_code_digest(salt=salt, email=email, code=code)}"


def _code_matches(*, stored: str, email: str, code: str) -> bool:
    salt, _, digest = stored.partition("$")
    return hmac.compare_digest(digest, _code_digest(salt=salt, email=email, code=code))


def _code_matching(codes: list[OneTimeCode], *, email: str, code: str) -> OneTimeCode | None:
    return next(
        (c for c in codes if _code_matches(stored=c.code_hash, email=email, code=code)), None
    )


def _lock_email(email: str) -> None:
    """Transaction-scoped advisory lock: one request per address at a time."""
    key = int.from_bytes(hashlib.sha256(f"otp:{email}".encode()).digest()[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def otp_request(*, email: str, nonce: str | None = None) -> OtpSent:
    """Send a fresh code to ``email``, bound to a nonce returned to this
    client. Same answer for every address. ``nonce`` (optional) is the one a
    previous request of this client got: a resend, which adds a code (the
    earlier ones keep working within their lifetime) and is refused (429
    ``otp_resend_too_soon``) within OTP_RESEND_SECONDS of the last one. Over
    the mailbox's limits: 429 ``rate_limited``."""
    address = email_normalize(email)
    canonical = email_canonical(address)
    code = _code_new()
    now = timezone.now()
    resend = settings.OTP_RESEND_SECONDS
    with transaction.atomic():
        _lock_email(canonical)
        previous = None
        if nonce:
            previous = (
                OneTimeCode.objects.filter(email=canonical, nonce_hash=_nonce_hash(nonce))
                .order_by("-created_at", "-id")
                .first()
            )
        # An unknown nonce is no resend: a fresh one, so nobody picks the nonce.
        bound = nonce if previous is not None and nonce else secrets.token_urlsafe(NONCE_BYTES)
        if previous is not None:
            wait = resend - (now - previous.created_at).total_seconds()
            if wait > 0:
                retry_after = math.ceil(wait)
                raise RateLimited(
                    "A code was sent recently; wait before asking for another.",
                    code=ErrorCode.OTP_RESEND_TOO_SOON,
                    details={"retry_after": retry_after},
                    retry_after=retry_after,
                )
        # Counted only for codes that will really be sent.
        rate_limit_hit(
            scope="otp_email", ident=canonical, rates=rates_parse(settings.OTP_EMAIL_LIMITS)
        )
        otp = OneTimeCode.objects.create(
            email=canonical,
            nonce_hash=_nonce_hash(bound),
            code_hash=_code_hash(email=canonical, code=code),
            expires_at=now + settings.OTP_TTL,
        )
    # Sent after the commit: no transaction or lock is held across the mail server.
    minutes = max(1, int(settings.OTP_TTL.total_seconds() // 60))
    try:
        send_mail(
            subject="Your FairQueue sign-in code",
            message=(
                f"Your sign-in code is {code}.\n\n"
                f"It expires in {minutes} minutes. If you did not ask for it, ignore this email."
            ),
            from_email=None,
            recipient_list=[address],
        )
    except Exception as exc:
        # Nothing was sent: forget the code so the customer may retry at once.
        OneTimeCode.objects.filter(pk=otp.pk).delete()
        logger.exception("sign-in code could not be sent")
        raise Busy(
            "The code could not be sent; try again shortly.", code=ErrorCode.EMAIL_UNAVAILABLE
        ) from exc
    return OtpSent(
        expires_in=int(settings.OTP_TTL.total_seconds()), resend_after=resend, nonce=bound
    )


def otp_verify(*, email: str, code: str, nonce: str) -> SignIn:
    """Exchange a code for a customer token (creating the customer on first
    sign-in). Only the code of this client (``nonce``) is looked at. Errors:
    ``otp_invalid`` (400, with attempts left), ``otp_expired`` (400),
    ``otp_locked`` (403, too many wrong attempts: ask for a new code)."""
    address = email_normalize(email)
    email = email_canonical(address)
    now = timezone.now()
    max_attempts = settings.OTP_MAX_ATTEMPTS
    error: AppError | None = None
    # durable: the attempt counter must really be committed before we answer,
    # never rolled back with some caller's outer transaction.
    with transaction.atomic(durable=True):
        mine = OneTimeCode.objects.filter(email=email, nonce_hash=_nonce_hash(nonce))
        # The newest row's lock orders this client's verifies; the codes it
        # sent before still work within their lifetime (a resend adds one).
        newest = sign_in_code_lock(mine.order_by("-created_at", "-id"))
        live = [
            c
            for c in mine.filter(
                consumed_at__isnull=True, expires_at__gt=now, attempts__lt=max_attempts
            ).order_by("-created_at", "-id")
            if newest is None or c.pk != newest.pk
        ]
        otp = newest
        if otp is not None and live and (
            otp.consumed_at is not None or otp.attempts >= max_attempts or otp.expires_at <= now
        ):
            otp = live.pop(0)  # the newest is spent: the newest code still alive answers
        if otp is None or otp.consumed_at is not None:
            error = AppError(
                "This code is not valid. Ask for a new one.",
                code=ErrorCode.OTP_INVALID,
                details={"attempts_left": 0},
            )
        elif otp.attempts >= max_attempts:
            error = Forbidden("Too many wrong codes. Ask for a new one.", code=ErrorCode.OTP_LOCKED)
        elif otp.expires_at <= now:
            error = AppError(
                "This code has expired. Ask for a new one.", code=ErrorCode.OTP_EXPIRED
            )
        elif (matched := _code_matching([otp, *live], email=email, code=code)) is None:
            # One wrong guess counts against every live code of this client.
            counted = OneTimeCode.objects.filter(
                pk__in=[otp.pk, *(c.pk for c in live)],
                consumed_at__isnull=True,
                attempts__lt=max_attempts,
            ).update(attempts=F("attempts") + 1)
            left = max(0, max_attempts - otp.attempts - (1 if counted else 0))
            error = AppError(
                "This code is not valid.",
                code=ErrorCode.OTP_INVALID,
                details={"attempts_left": left},
            )
        else:
            consumed = OneTimeCode.objects.filter(
                pk=matched.pk, consumed_at__isnull=True, attempts__lt=max_attempts
            ).update(consumed_at=now)
            if consumed:  # signed in: this client's other codes are done too
                mine.filter(consumed_at__isnull=True).update(consumed_at=now)
            if not consumed:  # cannot happen under the row lock; never hand out a token
                error = AppError("This code is not valid.", code=ErrorCode.OTP_INVALID)
            else:
                customer = customer_for_mailbox(address=address)
    if error is not None:
        raise error
    token, expires_at = customer_token_issue(
        customer_id=customer.id, email=customer.email, version=customer.token_version
    )
    # The customer's next requests (joining, polling) find it in Redis.
    auth_state_warm(customer_id=customer.id)
    return SignIn(token=token, customer_id=customer.id, expires_at=expires_at)


def customer_for_mailbox(*, address: str) -> Customer:
    """The customer of ``address``'s mailbox, made on first sign-in. Rows
    that share a mailbox from before canonical lookup resolve to the one the
    migration kept (``superseded_by`` empty): always the same one."""
    customer, _ = Customer.objects.get_or_create(
        email_canonical=email_canonical(address),
        superseded_by=None,
        defaults={"email": address},
    )
    return customer
