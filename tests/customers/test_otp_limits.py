"""Sign-in limits: codes bound to the client that asked (a stranger knowing
the address cannot lock its owner out), limits per mailbox and per client
address (sized for carrier NAT, IPv6 per /64), failing closed without Redis."""

from datetime import timedelta  # noqa: F401

import pytest
import redis
from django.conf import settings

from customers import throttling
from customers.models import Customer, OneTimeCode
from customers.throttling import RateLimitStore, rates_parse
from fairqueue.redis import get_redis
from tests.support.signin import REQUEST_URL, VERIFY_URL, other_code

pytestmark = pytest.mark.django_db


def verify(api, email, code, nonce):
    return api.post(VERIFY_URL, {"email": email, "code": code, "nonce": nonce}, format="json")


# --- lock-out resistance: a stranger knowing the address ----------------------------


def test_wrong_guesses_without_the_nonce_never_touch_the_owners_code(api, request_code):
    code, nonce = request_code("victim@example.com")
    guesses = [
        verify(api, "victim@example.com", other_code(code), stolen)
        for stolen in ["", "x" * 32, nonce[:-1] + ("A" if nonce[-1] != "A" else "B")] * 3
    ]

    assert {g.status_code for g in guesses} <= {400, 422}
    otp = OneTimeCode.objects.get()
    assert otp.attempts == 0 and otp.consumed_at is None  # not one attempt counted
    assert verify(api, "victim@example.com", code, nonce).status_code == 200


def test_a_strangers_request_for_the_address_does_not_void_the_owners_code(
    api, request_code, mailoutbox
):
    code, nonce = request_code("victim@example.com")

    stranger = api.post(REQUEST_URL, {"email": "victim@example.com"}, format="json")

    assert stranger.status_code == 202  # not "too soon": that would lock the owner out
    assert stranger.json()["nonce"] != nonce
    assert OneTimeCode.objects.filter(consumed_at__isnull=True).count() == 2
    assert verify(api, "victim@example.com", code, nonce).status_code == 200


def test_the_strangers_own_code_spends_only_its_own_attempts(api, request_code):
    code, nonce = request_code("victim@example.com")
    stranger_code, stranger_nonce = request_code("victim@example.com")
    for _ in range(settings.OTP_MAX_ATTEMPTS + 2):
        verify(api, "victim@example.com", other_code(stranger_code), stranger_nonce)

    owner = verify(api, "victim@example.com", code, nonce)

    assert owner.status_code == 200
    attempts = dict(OneTimeCode.objects.values_list("nonce_hash", "attempts"))
    assert sorted(attempts.values()) == [0, settings.OTP_MAX_ATTEMPTS]


# --- limits per mailbox -------------------------------------------------------------


def test_codes_per_mailbox_are_limited_across_clients_and_plus_tags(api, mailoutbox):
    addresses = [f"ada+{i}@example.com" for i in range(6)]  # one mailbox, six spellings
    answers = [api.post(REQUEST_URL, {"email": a}, format="json") for a in addresses]

    assert [a.status_code for a in answers] == [202] * 5 + [429]
    refused = answers[-1]
    assert refused.json()["error"]["code"] == "rate_limited"
    assert int(refused["Retry-After"]) > 3500  # the hour window
    assert len(mailoutbox) == 5
    assert OneTimeCode.objects.count() == 5
    assert set(OneTimeCode.objects.values_list("email", flat=True)) == {"ada@example.com"}
    # another mailbox is not affected
    assert api.post(REQUEST_URL, {"email": "bob@example.com"}, format="json").status_code == 202


def test_the_daily_mailbox_limit_holds_when_the_hourly_one_has_reset(api, settings, mailoutbox):
    settings.OTP_EMAIL_LIMITS = "2/hour,3/day"
    first = [api.post(REQUEST_URL, {"email": "a@example.com"}, format="json") for _ in range(2)]
    get_redis().delete(RateLimitStore.key("otp_email", "a@example.com", 3600))  # the hour passed

    later = [api.post(REQUEST_URL, {"email": "a@example.com"}, format="json") for _ in range(2)]

    assert [a.status_code for a in first + later] == [202, 202, 202, 429]
    assert int(later[-1]["Retry-After"]) > 86_000
    assert len(mailoutbox) == 3


# --- limits per client address -------------------------------------------------------


def _per_minute(scope: str) -> int:
    return rates_parse(settings.RATE_LIMITS[scope])[0].limit


def test_one_address_behind_a_carrier_nat_signs_in_30_people_a_minute(api, mailoutbox):
    answers = [
        api.post(REQUEST_URL, {"email": f"person{i}@example.com"}, format="json") for i in range(30)
    ]
    assert [a.status_code for a in answers] == [202] * 30
    assert len(mailoutbox) == 30
    assert _per_minute("otp_request") >= 30


def test_otp_request_is_rate_limited_per_client_with_retry_after(api, mailoutbox, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "otp_request": "3/minute"}
    answers = [
        api.post(REQUEST_URL, {"email": f"user{i}@example.com"}, format="json") for i in range(4)
    ]

    assert [a.status_code for a in answers] == [202] * 3 + [429]
    error = answers[-1].json()["error"]
    assert error["code"] == "rate_limited"
    assert 1 <= int(answers[-1]["Retry-After"]) <= 60
    assert error["details"] == {"retry_after": int(answers[-1]["Retry-After"])}
    assert len(mailoutbox) == 3  # the refused request sent nothing
    assert not OneTimeCode.objects.filter(email="user3@example.com").exists()


def test_a_forged_x_forwarded_for_does_not_escape_the_rate_limit(api, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "otp_request": "3/minute"}
    answers = [
        api.post(
            REQUEST_URL,
            {"email": f"user{i}@example.com"},
            format="json",
            HTTP_X_FORWARDED_FOR=f"10.0.0.{i}",  # a new "client" every time
        )
        for i in range(4)
    ]
    assert [a.status_code for a in answers] == [202] * 3 + [429]


def test_behind_one_proxy_each_client_has_its_own_limit(api, settings):
    settings.NUM_PROXIES = 1
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "otp_request": "3/minute"}

    def ask(i: int, client_ip: str):
        return api.post(
            REQUEST_URL,
            {"email": f"user{i}@example.com"},
            format="json",
            # what nginx sends: whatever the client claimed, then the address it saw
            HTTP_X_FORWARDED_FOR=f"6.6.6.{i}, {client_ip}",
        )

    first = [ask(i, "198.51.100.1").status_code for i in range(4)]
    other = ask(999, "198.51.100.2").status_code

    assert first == [202] * 3 + [429]
    assert other == 202


def test_ipv6_clients_are_limited_per_64_network(api, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "otp_request": "3/minute"}

    def ask(i: int, address: str):
        return api.post(
            REQUEST_URL, {"email": f"v6user{i}@example.com"}, format="json", REMOTE_ADDR=address
        ).status_code

    # Four addresses of one /64 (one home, one phone): one budget.
    same_net = [ask(i, f"2001:db8:1:2::{i + 1:x}") for i in range(4)]
    other_net = ask(9, "2001:db8:1:3::1")

    assert same_net == [202] * 3 + [429]
    assert other_net == 202


def test_otp_verify_is_rate_limited_per_client(api, request_code, settings):
    code, nonce = request_code("a@example.com")
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "otp_verify": "3/minute"}
    answers = [verify(api, "a@example.com", "bad", nonce) for _ in range(3)]
    assert {a.status_code for a in answers} == {422}

    refused = verify(api, "a@example.com", code, nonce)

    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert "Retry-After" in refused
    assert OneTimeCode.objects.get().consumed_at is None
    assert Customer.objects.count() == 0


def test_rate_limits_fail_closed_when_redis_is_down(api, mailoutbox, monkeypatch, closed_port):
    dead = redis.Redis.from_url(f"redis://127.0.0.1:{closed_port}/0", socket_connect_timeout=0.2)
    monkeypatch.setattr(throttling, "_store", RateLimitStore(client=dead))

    response = api.post(REQUEST_URL, {"email": "a@example.com"}, format="json")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "busy"
    assert response["Retry-After"] == "1"
    assert mailoutbox == []  # refused, not let through uncounted
    assert OneTimeCode.objects.count() == 0
