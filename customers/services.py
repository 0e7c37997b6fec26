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
- **The resend throttle and "a new code kills the old ones"** are decided
  under a transaction-scoped advisory lock per email, so two parallel
  requests cannot both pass the check and both send a code.
- **Verify locks the newest code row** (``SELECT ... FOR UPDATE``), counts a
  wrong attempt or consumes the code with conditional UPDATEs, and commits
  before answering: a wrong attempt is counted even though the request fails,
  and two parallel verifies of one code give one token at most.
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

from customers.models import Customer, OneTimeCode
from customers.tokens import customer_token_issue
from fairqueue.errors import AppError, Busy, ErrorCode, Forbidden, RateLimited

logger = logging.getLogger(__name__)

CODE_DIGITS = 6
_HMAC_KEY_SALT = "customers.otp"


@dataclass(frozen=True)
class OtpSent:
    expires_in: int  # seconds
    resend_after: int  # seconds


@dataclass(frozen=True)
class SignIn:
    token: str
    customer_id: uuid.UUID
    expires_at: datetime


def email_normalize(email: str) -> str:
    return email.strip().lower()


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


def _lock_email(email: str) -> None:
    """Transaction-scoped advisory lock: one request per address at a time."""
    key = int.from_bytes(hashlib.sha256(f"otp:{email}".encode()).digest()[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def otp_request(*, email: str) -> OtpSent:
    """Send a fresh code to ``email``. Same answer for every address; refused
    (429 ``otp_resend_too_soon``) within OTP_RESEND_SECONDS of the last code."""
    email = email_normalize(email)
    code = _code_new()
    now = timezone.now()
    resend = settings.OTP_RESEND_SECONDS
    with transaction.atomic():
        _lock_email(email)
        last = OneTimeCode.objects.filter(email=email).order_by("-created_at", "-id").first()
        if last is not None:
            wait = resend - (now - last.created_at).total_seconds()
            if wait > 0:
                retry_after = math.ceil(wait)
                raise RateLimited(
                    "A code was sent recently; wait before asking for another.",
                    code=ErrorCode.OTP_RESEND_TOO_SOON,
                    details={"retry_after": retry_after},
                    retry_after=retry_after,
                )
        # A new code makes every older one useless.
        OneTimeCode.objects.filter(email=email, consumed_at__isnull=True).update(consumed_at=now)
        otp = OneTimeCode.objects.create(
            email=email,
            code_hash=_code_hash(email=email, code=code),
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
            recipient_list=[email],
        )
    except Exception as exc:
        # Nothing was sent: forget the code so the customer may retry at once.
        OneTimeCode.objects.filter(pk=otp.pk).delete()
        logger.exception("sign-in code could not be sent")
        raise Busy(
            "The code could not be sent; try again shortly.", code=ErrorCode.EMAIL_UNAVAILABLE
        ) from exc
    return OtpSent(expires_in=int(settings.OTP_TTL.total_seconds()), resend_after=resend)


def otp_verify(*, email: str, code: str) -> SignIn:
    """Exchange a code for a customer token (creating the customer on first
    sign-in). Errors: ``otp_invalid`` (400, with attempts left), ``otp_expired``
    (400), ``otp_locked`` (403, too many wrong attempts: ask for a new code)."""
    email = email_normalize(email)
    now = timezone.now()
    max_attempts = settings.OTP_MAX_ATTEMPTS
    error: AppError | None = None
    # durable: the attempt counter must really be committed before we answer,
    # never rolled back with some caller's outer transaction.
    with transaction.atomic(durable=True):
        otp = (
            OneTimeCode.objects.select_for_update()
            .filter(email=email)
            .order_by("-created_at", "-id")
            .first()
        )
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
        elif not _code_matches(stored=otp.code_hash, email=email, code=code):
            counted = OneTimeCode.objects.filter(
                pk=otp.pk, consumed_at__isnull=True, attempts__lt=max_attempts
            ).update(attempts=F("attempts") + 1)
            left = max(0, max_attempts - otp.attempts - counted)
            error = AppError(
                "This code is not valid.",
                code=ErrorCode.OTP_INVALID,
                details={"attempts_left": left},
            )
        else:
            consumed = OneTimeCode.objects.filter(
                pk=otp.pk, consumed_at__isnull=True, attempts__lt=max_attempts
            ).update(consumed_at=now)
            if not consumed:  # cannot happen under the row lock; never hand out a token
                error = AppError("This code is not valid.", code=ErrorCode.OTP_INVALID)
            else:
                customer, _ = Customer.objects.get_or_create(email=email)
    if error is not None:
        raise error
    token, expires_at = customer_token_issue(customer_id=customer.id, email=customer.email)
    return SignIn(token=token, customer_id=customer.id, expires_at=expires_at)
