"""Sign-in with an emailed one-time code: request, verify, lockout, expiry,
resend throttle, rate limits."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from customers.models import Customer, OneTimeCode
from customers.tokens import customer_token_verify
from tests.support.factories import CustomerFactory
from tests.support.signin import REQUEST_URL, VERIFY_URL, code_from, other_code

pytestmark = pytest.mark.django_db


def verify(api, email, code, nonce):
    return api.post(VERIFY_URL, {"email": email, "code": code, "nonce": nonce}, format="json")


# --- request -------------------------------------------------------------------


def test_request_sends_one_code_to_the_normalised_address_and_stores_only_a_hash(api, mailoutbox):
    response = api.post(REQUEST_URL, {"email": "  Ada@Example.COM "}, format="json")

    assert response.status_code == 202
    body = response.json()
    assert body == {
        "status": "sent",
        "expires_in": int(settings.OTP_TTL.total_seconds()),
        "resend_after": settings.OTP_RESEND_SECONDS,
        "nonce": body["nonce"],
    }
    assert len(body["nonce"]) >= 32
    assert len(mailoutbox) == 1
    assert mailoutbox[0].to == ["ada@example.com"]
    code = code_from(mailoutbox[0])
    assert code not in mailoutbox[0].subject
    [otp] = OneTimeCode.objects.all()
    assert otp.email == "ada@example.com"
    assert otp.attempts == 0 and otp.consumed_at is None
    salt, _, digest = otp.code_hash.partition("$")
    assert len(salt) == 32 and len(digest) == 64
    assert code not in otp.code_hash
    assert timedelta(minutes=9) < otp.expires_at - timezone.now() <= settings.OTP_TTL
    assert Customer.objects.count() == 0  # an account only once the address is proven


def test_two_codes_for_the_same_code_value_hash_differently(request_code):
    request_code("a@example.com")
    request_code("b@example.com")
    salts = {h.partition("$")[0] for h in OneTimeCode.objects.values_list("code_hash", flat=True)}
    assert len(salts) == 2


def test_known_and_unknown_addresses_get_the_same_answer(api, mailoutbox):
    CustomerFactory(email="known@example.com")

    known = api.post(REQUEST_URL, {"email": "known@example.com"}, format="json")
    unknown = api.post(REQUEST_URL, {"email": "nobody@example.com"}, format="json")

    def shape(answer):
        return answer.status_code, {k: v for k, v in answer.json().items() if k != "nonce"}

    assert shape(known) == shape(unknown)
    assert known.status_code == 202
    assert sorted(m.to[0] for m in mailoutbox) == ["known@example.com", "nobody@example.com"]
    assert Customer.objects.count() == 1  # the request created nobody


@pytest.mark.parametrize(
    ("body", "field"),
    [({"email": "not-an-email"}, "email"), ({}, "email"), ({"email": ""}, "email")],
)
def test_request_with_a_bad_address_is_422_and_sends_nothing(api, mailoutbox, body, field):
    response = api.post(REQUEST_URL, body, format="json")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert field in error["details"]["fields"]
    assert mailoutbox == []
    assert OneTimeCode.objects.count() == 0


def test_a_stale_bearer_token_does_not_block_signing_in(api):
    response = api.post(
        REQUEST_URL,
        {"email": "a@example.com"},
        format="json",
        HTTP_AUTHORIZATION="Bearer expired.or.garbage",
    )
    assert response.status_code == 202


# --- verify --------------------------------------------------------------------


def test_verify_returns_a_customer_token_and_creates_the_customer_once(api, request_code):
    code, nonce = request_code("Ada@Example.com")

    response = verify(api, " ADA@example.com", code, nonce)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"token", "customer_id", "expires_at"}
    [customer] = Customer.objects.all()
    assert customer.email == "ada@example.com"
    assert body["customer_id"] == str(customer.id)
    principal = customer_token_verify(body["token"])
    assert principal.id == customer.id and principal.email == "ada@example.com"
    lifetime = parse_datetime(body["expires_at"]) - timezone.now()
    assert settings.CUSTOMER_TOKEN_TTL - timedelta(minutes=1) < lifetime
    assert lifetime <= settings.CUSTOMER_TOKEN_TTL
    assert OneTimeCode.objects.get().consumed_at is not None


def test_signing_in_caches_the_sign_out_state(api, request_code, django_assert_num_queries):
    """So the customer's first join or poll reads no database for it."""
    code, nonce = request_code("grace@example.com")
    token = verify(api, "grace@example.com", code, nonce).json()["token"]

    with django_assert_num_queries(0):
        assert api.get("/api/v1/auth/me/", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_a_code_works_once(api, request_code):
    code, nonce = request_code("a@example.com")
    assert verify(api, "a@example.com", code, nonce).status_code == 200

    again = verify(api, "a@example.com", code, nonce)

    assert again.status_code == 400
    assert again.json()["error"]["code"] == "otp_invalid"
    assert Customer.objects.count() == 1


def test_an_existing_customer_signs_in_to_the_same_account(api, request_code):
    customer = CustomerFactory(email="known@example.com")
    code, nonce = request_code("KNOWN@example.com")

    response = verify(api, "known@example.com", code, nonce)

    assert response.json()["customer_id"] == str(customer.id)
    assert Customer.objects.count() == 1


def test_a_code_is_bound_to_its_address(api, request_code):
    code, nonce = request_code("a@example.com")
    # Even a copy of a's stored hash under b's address does not accept a's
    # code: the address is part of what is hashed.
    a_row = OneTimeCode.objects.get()
    OneTimeCode.objects.create(
        email="b@example.com",
        nonce_hash=a_row.nonce_hash,
        code_hash=a_row.code_hash,
        expires_at=timezone.now() + timedelta(minutes=5),
    )

    response = verify(api, "b@example.com", code, nonce)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "otp_invalid"
    assert Customer.objects.count() == 0


def test_verify_without_any_code_requested_is_otp_invalid(api):
    response = verify(api, "a@example.com", "123456", "no-such-nonce")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "otp_invalid",
        "message": "This code is not valid. Ask for a new one.",
        "details": {"attempts_left": 0},
    }
    assert Customer.objects.count() == 0


@pytest.mark.parametrize("code", ["12345", "1234567", "abcdef", "", "12 456"])
def test_a_malformed_code_is_422_and_not_counted_as_an_attempt(api, request_code, code):
    _code, nonce = request_code("a@example.com")
    response = verify(api, "a@example.com", code, nonce)
    assert response.status_code == 422
    assert "code" in response.json()["error"]["details"]["fields"]
    assert OneTimeCode.objects.get().attempts == 0


def test_unknown_fields_in_verify_are_refused(api, request_code):
    code, nonce = request_code("a@example.com")
    response = api.post(
        VERIFY_URL,
        {"email": "a@example.com", "code": code, "nonce": nonce, "remember": True},
        format="json",
    )
    assert response.status_code == 422
    assert response.json()["error"]["details"] == {"unknown_fields": ["remember"]}
    assert OneTimeCode.objects.get().consumed_at is None
    assert Customer.objects.count() == 0


# --- wrong codes and lockout --------------------------------------------------------


def test_wrong_codes_count_down_then_lock_the_code_even_for_the_right_one(api, request_code):
    code, nonce = request_code("a@example.com")
    wrong = other_code(code)

    answers = [verify(api, "a@example.com", wrong, nonce) for _ in range(settings.OTP_MAX_ATTEMPTS)]

    assert [a.status_code for a in answers] == [400] * 5
    assert [a.json()["error"]["code"] for a in answers] == ["otp_invalid"] * 5
    assert [a.json()["error"]["details"]["attempts_left"] for a in answers] == [4, 3, 2, 1, 0]
    assert OneTimeCode.objects.get().attempts == 5

    right = verify(api, "a@example.com", code, nonce)

    assert right.status_code == 403
    assert right.json()["error"]["code"] == "otp_locked"
    assert "token" not in right.json()
    assert Customer.objects.count() == 0
    otp = OneTimeCode.objects.get()
    assert otp.attempts == 5  # the lock itself is not another attempt
    assert otp.consumed_at is None


def test_a_new_code_after_a_lockout_works(api, request_code):
    code, nonce = request_code("a@example.com")
    for _ in range(settings.OTP_MAX_ATTEMPTS):
        verify(api, "a@example.com", other_code(code), nonce)
    OneTimeCode.objects.update(created_at=timezone.now() - timedelta(hours=1))

    fresh, nonce = request_code("a@example.com")

    assert verify(api, "a@example.com", fresh, nonce).status_code == 200


# --- expiry ----------------------------------------------------------------------


def test_an_expired_code_is_refused_and_the_attempt_not_counted(api, request_code):
    code, nonce = request_code("a@example.com")
    OneTimeCode.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    response = verify(api, "a@example.com", code, nonce)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "otp_expired"
    assert Customer.objects.count() == 0
    otp = OneTimeCode.objects.get()
    assert otp.consumed_at is None and otp.attempts == 0


def test_a_code_just_before_expiry_still_works(api, request_code):
    code, nonce = request_code("a@example.com")
    OneTimeCode.objects.update(expires_at=timezone.now() + timedelta(seconds=30))
    assert verify(api, "a@example.com", code, nonce).status_code == 200


# --- resend (same client, same nonce) ----------------------------------------------


def test_a_resend_of_the_same_client_is_throttled(api, mailoutbox, request_code):
    _code, nonce = request_code("a@example.com")

    again = api.post(REQUEST_URL, {"email": "A@example.com", "nonce": nonce}, format="json")

    assert again.status_code == 429
    error = again.json()["error"]
    assert error["code"] == "otp_resend_too_soon"
    retry_after = int(again["Retry-After"])
    assert 1 <= retry_after <= settings.OTP_RESEND_SECONDS
    assert error["details"] == {"retry_after": retry_after}
    assert len(mailoutbox) == 1
    assert OneTimeCode.objects.count() == 1


def test_a_resend_after_the_interval_sends_a_new_code_and_the_first_still_works(
    api, request_code
):
    first, first_nonce = request_code("a@example.com")
    OneTimeCode.objects.update(
        created_at=timezone.now() - timedelta(seconds=settings.OTP_RESEND_SECONDS + 1)
    )

    second, nonce = request_code("a@example.com", nonce=first_nonce)

    assert nonce == first_nonce
    assert OneTimeCode.objects.count() == 2
    # The first email (often the last to arrive) still signs in, once.
    assert verify(api, "a@example.com", first, nonce).status_code == 200
    assert OneTimeCode.objects.filter(consumed_at__isnull=True).count() == 0
    again = verify(api, "a@example.com", second, nonce)
    assert again.status_code == 400
    assert again.json()["error"]["code"] == "otp_invalid"


def test_the_latest_code_works_and_ends_the_earlier_ones(api, request_code):
    first, nonce = request_code("a@example.com")
    OneTimeCode.objects.update(
        created_at=timezone.now() - timedelta(seconds=settings.OTP_RESEND_SECONDS + 1)
    )
    second, _ = request_code("a@example.com", nonce=nonce)

    assert verify(api, "a@example.com", second, nonce).status_code == 200
    if first != second:  # one time in a million the two codes are equal
        assert verify(api, "a@example.com", first, nonce).status_code == 400


def test_a_wrong_guess_counts_against_every_live_code_of_the_client(api, request_code):
    first, nonce = request_code("a@example.com")
    OneTimeCode.objects.update(
        created_at=timezone.now() - timedelta(seconds=settings.OTP_RESEND_SECONDS + 1)
    )
    second, _ = request_code("a@example.com", nonce=nonce)
    wrong = next(c for c in (f"{n:06d}" for n in range(10**6)) if c not in (first, second))

    answers = [verify(api, "a@example.com", wrong, nonce) for _ in range(settings.OTP_MAX_ATTEMPTS)]

    assert [a.json()["error"]["details"].get("attempts_left") for a in answers[:-1]] == list(
        range(settings.OTP_MAX_ATTEMPTS - 1, 0, -1)
    )
    # A resend adds no guesses: both codes are used up together.
    assert verify(api, "a@example.com", first, nonce).status_code == 403
    assert verify(api, "a@example.com", second, nonce).status_code == 403


def test_a_code_asked_again_after_its_lifetime_does_not_work(api, request_code):
    first, nonce = request_code("a@example.com")
    OneTimeCode.objects.update(
        created_at=timezone.now() - settings.OTP_TTL, expires_at=timezone.now()
    )
    second, _ = request_code("a@example.com", nonce=nonce)

    if first != second:
        response = verify(api, "a@example.com", first, nonce)
        assert response.status_code == 400
    assert verify(api, "a@example.com", second, nonce).status_code == 200


# --- email failure ---------------------------------------------------------------


def test_a_mail_server_that_is_down_is_503_and_leaves_no_code(api, settings, closed_port):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", closed_port, 2

    response = api.post(REQUEST_URL, {"email": "a@example.com"}, format="json")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "email_unavailable"
    assert response["Retry-After"] == "1"
    assert OneTimeCode.objects.count() == 0  # so an immediate retry is not throttled


# --- OpenAPI -------------------------------------------------------------------------


def test_schema_documents_the_sign_in_bodies(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]

    def resolve(ref: dict) -> dict:
        return components[ref["$ref"].rsplit("/", 1)[1]]

    request_op = schema["paths"]["/api/v1/auth/otp/request/"]["post"]
    body = resolve(request_op["requestBody"]["content"]["application/json"]["schema"])
    assert body["required"] == ["email"]
    assert set(request_op["responses"]) == {"202", "400", "403", "413", "415", "422", "429", "503"}
    assert {p["name"] for p in request_op["parameters"]} == {"X-Challenge-Token"}
    sent = resolve(request_op["responses"]["202"]["content"]["application/json"]["schema"])
    assert set(sent["properties"]) == {"status", "expires_in", "resend_after", "nonce"}

    verify_op = schema["paths"]["/api/v1/auth/otp/verify/"]["post"]
    body = resolve(verify_op["requestBody"]["content"]["application/json"]["schema"])
    assert sorted(body["required"]) == ["code", "email", "nonce"]
    signed_in = resolve(verify_op["responses"]["200"]["content"]["application/json"]["schema"])
    assert set(signed_in["properties"]) == {"token", "customer_id", "expires_at"}
    error = resolve(verify_op["responses"]["400"]["content"]["application/json"]["schema"])
    assert set(error["properties"]) == {"error"}

    me_op = schema["paths"]["/api/v1/auth/me/"]["get"]
    assert {"customerToken": []} in me_op["security"]
    assert schema["components"]["securitySchemes"]["customerToken"]["scheme"] == "bearer"
