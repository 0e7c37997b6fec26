"""Sign-in under concurrency, with real threads on real Postgres.

Each guarded test first shows the race a naive read-check-write has (the
guard "switched off", written out here), then that the service holds when the
calls really overlap (tests/support/races.py).
"""

import threading
from collections import Counter
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.core import mail
from django.db import transaction
from django.utils import timezone

from customers.models import Customer, OneTimeCode
from customers.services import _code_matches, _lock_email, otp_request, otp_verify
from customers.tokens import customer_token_issue
from fairqueue.errors import AppError
from fairqueue.redis import get_redis
from tests.support.races import race_calls, wait_until_blocked
from tests.support.signin import code_from, other_code

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "race@example.com"


@contextmanager
def holding_code_row(email: str):
    with transaction.atomic():
        OneTimeCode.objects.select_for_update().filter(email=email).get()
        yield


def fresh_code(email: str = EMAIL) -> tuple[str, str]:
    """(code, nonce) of a new sign-in request."""
    sent = otp_request(email=email)
    return code_from(mail.outbox[-1]), sent.nonce


def error_codes(results: list[Any]) -> Counter:
    return Counter(r.code for r in results if isinstance(r, AppError))


# --- one code, two verifies: one token at most ---------------------------------------


def test_race_shown_without_the_guard_two_verifies_both_get_a_token(mailoutbox):
    code, _nonce = fresh_code()
    barrier = threading.Barrier(2)

    def naive_verify(email: str, code: str) -> str | None:
        otp = OneTimeCode.objects.filter(email=email).order_by("-created_at").first()  # no lock
        ok = otp.consumed_at is None and _code_matches(stored=otp.code_hash, email=email, code=code)
        barrier.wait()  # both have checked before either writes
        if not ok:
            return None
        OneTimeCode.objects.filter(pk=otp.pk).update(consumed_at=timezone.now())  # unconditional
        customer, _ = Customer.objects.get_or_create(email=email)
        return customer_token_issue(customer_id=customer.id, email=email)[0]

    calls = [{"email": EMAIL, "code": code}] * 2
    running = race_calls(naive_verify, calls)
    results = running.results()

    assert sum(isinstance(r, str) for r in results) == 2  # the bug the guard prevents


def test_two_parallel_verifies_of_one_code_give_exactly_one_token(mailoutbox):
    code, nonce = fresh_code()

    with holding_code_row(EMAIL):
        running = race_calls(otp_verify, [{"email": EMAIL, "code": code, "nonce": nonce}] * 2)
        wait_until_blocked(2)
    results = running.results()

    tokens = [r for r in results if not isinstance(r, Exception)]
    assert len(tokens) == 1
    assert error_codes(results) == Counter({"otp_invalid": 1})
    assert Customer.objects.filter(email=EMAIL).count() == 1
    otp = OneTimeCode.objects.get()
    assert otp.consumed_at is not None and otp.attempts == 0


def test_the_first_and_the_resent_code_in_parallel_give_exactly_one_token(mailoutbox):
    first, nonce = fresh_code()
    OneTimeCode.objects.update(
        created_at=timezone.now() - timedelta(seconds=settings.OTP_RESEND_SECONDS + 1)
    )
    otp_request(email=EMAIL, nonce=nonce)
    second = code_from(mail.outbox[-1])
    calls = [{"email": EMAIL, "code": c, "nonce": nonce} for c in (first, second)] * 2

    with transaction.atomic():
        # The newest code's row: every verify of this client waits on it.
        OneTimeCode.objects.select_for_update().filter(email=EMAIL).order_by("-created_at")[:1].get()
        running = race_calls(otp_verify, calls)
        wait_until_blocked(len(calls))
    results = running.results()

    assert len([r for r in results if not isinstance(r, Exception)]) == 1
    assert Customer.objects.filter(email=EMAIL).count() == 1
    assert OneTimeCode.objects.filter(consumed_at__isnull=True).count() == 0


# --- wrong codes in parallel: attempts counted exactly ---------------------------------


def test_race_shown_without_the_guard_parallel_wrong_codes_lose_attempts(mailoutbox):
    fresh_code()
    n = 8
    barrier = threading.Barrier(n)

    def naive_wrong_attempt() -> None:
        otp = OneTimeCode.objects.filter(email=EMAIL).get()  # no lock
        barrier.wait()  # everyone read the same count
        OneTimeCode.objects.filter(pk=otp.pk).update(attempts=otp.attempts + 1)  # read-modify-write

    running = race_calls(naive_wrong_attempt, [{}] * n)
    results = running.results()

    assert results == [None] * n
    assert OneTimeCode.objects.get().attempts == 1  # 8 wrong guesses, 7 of them lost


def test_parallel_wrong_codes_are_counted_exactly_and_lock_the_code(mailoutbox):
    code, nonce = fresh_code()
    n = 8

    with holding_code_row(EMAIL):
        wrong = {"email": EMAIL, "code": other_code(code), "nonce": nonce}
        running = race_calls(otp_verify, [wrong] * n)
        wait_until_blocked(n)
    results = running.results()

    max_attempts = settings.OTP_MAX_ATTEMPTS
    assert error_codes(results) == Counter(
        {"otp_invalid": max_attempts, "otp_locked": n - max_attempts}
    )
    left = sorted(r.details["attempts_left"] for r in results if r.code == "otp_invalid")
    assert left == list(range(max_attempts))  # 0, 1, 2, 3, 4: each count seen once
    assert OneTimeCode.objects.get().attempts == max_attempts
    with pytest.raises(AppError) as refused:
        otp_verify(email=EMAIL, code=code, nonce=nonce)
    assert refused.value.code == "otp_locked"
    assert Customer.objects.count() == 0


def test_a_right_and_wrong_codes_in_parallel_never_exceed_the_attempts(mailoutbox):
    code, nonce = fresh_code()
    wrong = {"email": EMAIL, "code": other_code(code), "nonce": nonce}
    calls = [wrong] * 6 + [{"email": EMAIL, "code": code, "nonce": nonce}]

    with holding_code_row(EMAIL):
        running = race_calls(otp_verify, calls)
        wait_until_blocked(len(calls))
    results = running.results()

    otp = OneTimeCode.objects.get()
    tokens = [r for r in results if not isinstance(r, Exception)]
    # Whatever order Postgres granted the lock in: at most one token, never
    # after the fifth wrong attempt, and the count stops at the maximum.
    assert len(tokens) <= 1
    assert otp.attempts <= settings.OTP_MAX_ATTEMPTS
    if tokens:
        assert otp.consumed_at is not None
        assert Customer.objects.count() == 1
    else:
        assert otp.attempts == settings.OTP_MAX_ATTEMPTS
        assert Customer.objects.count() == 0


# --- parallel requests for one address: one code per client, the mailbox limit exact ----


def test_parallel_resends_of_one_client_send_exactly_one_code(mailoutbox):
    _code, nonce = fresh_code()
    OneTimeCode.objects.update(
        created_at=timezone.now() - timedelta(seconds=settings.OTP_RESEND_SECONDS + 1)
    )
    n = 5
    with transaction.atomic():
        _lock_email(EMAIL)  # the same advisory lock the service takes
        running = race_calls(otp_request, [{"email": EMAIL, "nonce": nonce}] * n)
        wait_until_blocked(n)
    results = running.results()

    assert sum(not isinstance(r, Exception) for r in results) == 1
    assert error_codes(results) == Counter({"otp_resend_too_soon": n - 1})
    assert OneTimeCode.objects.count() == 2  # the first code and one resend, both live
    assert OneTimeCode.objects.filter(consumed_at__isnull=True).count() == 2
    assert len(mailoutbox) == 2


def test_race_shown_without_the_guard_a_read_then_count_limit_lets_everyone_through():
    """The mailbox limit counted the naive way (read, compare, then INCR):
    parallel requests all read the same count and all pass."""
    client = get_redis()
    key, limit, n = "fq:rl:{naive}:3600", 5, 12
    barrier = threading.Barrier(n)

    def naive_hit() -> bool:
        count = int(client.get(key) or 0)
        barrier.wait()  # everyone has read before anyone counts
        if count >= limit:
            return False
        client.incr(key)
        return True

    results = race_calls(naive_hit, [{}] * n).results()

    assert results.count(True) == n  # 12 codes where 5 were allowed


def test_parallel_requests_from_many_clients_never_pass_the_mailbox_limit(mailoutbox, settings):
    settings.OTP_EMAIL_LIMITS = "5/hour"
    n = 12
    running = race_calls(otp_request, [{"email": EMAIL}] * n)
    results = running.results()

    assert sum(not isinstance(r, Exception) for r in results) == 5
    assert error_codes(results) == Counter({"rate_limited": n - 5})
    assert OneTimeCode.objects.count() == 5
    assert len(mailoutbox) == 5
