"""Token audience separation: only a customer token, signed with our key and
not expired, authenticates a customer. (The WebSocket takes no customer
token at all: tests/queueing/test_ws_tickets.py.)"""

import uuid
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from django.conf import settings

from customers.tokens import CUSTOMER_AUDIENCE, customer_token_issue
from fairqueue import tokens
from fairqueue.tokens import ISSUER, sign
from queueing.tokens import ADMISSION_AUDIENCE, admission_token_issue
from tests.support.factories import CustomerFactory

ME_URL = "/api/v1/auth/me/"
CUSTOMER_ID = uuid.uuid4()

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def customer():
    return CustomerFactory(id=CUSTOMER_ID, email="ada@example.com")


def customer_token() -> str:
    return customer_token_issue(customer_id=CUSTOMER_ID, email="ada@example.com")[0]


def admission_token() -> str:
    return admission_token_issue(
        event_id=uuid.uuid4(),
        customer_id=CUSTOMER_ID,
        queue_entry_id=uuid.uuid4(),
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
    )


def claims(**overrides) -> dict:
    now = datetime.now(UTC)
    base = {
        "sub": str(CUSTOMER_ID),
        "email": "ada@example.com",
        "iss": ISSUER,
        "aud": CUSTOMER_AUDIENCE,
        "iat": int(now.timestamp()),
        "exp": int((now + timedelta(hours=1)).timestamp()),
    }
    return {k: v for k, v in {**base, **overrides}.items() if v is not None}


def other_key_token() -> str:
    return jwt.encode(claims(), "some-other-key-that-is-long-enough-32b", algorithm="HS256")


def expired_token() -> str:
    return sign(
        {"sub": str(CUSTOMER_ID), "email": "ada@example.com"},
        audience=CUSTOMER_AUDIENCE,
        ttl=timedelta(seconds=-5),
    )[0]


def unsigned_token() -> str:
    return jwt.encode(claims(), None, algorithm="none")


def no_subject_token() -> str:
    return jwt.encode(claims(sub=None), settings.TOKEN_SIGNING_KEY, algorithm="HS256")


def bad_subject_token() -> str:
    return jwt.encode(claims(sub="not-a-uuid"), settings.TOKEN_SIGNING_KEY, algorithm="HS256")


def other_issuer_token() -> str:
    return jwt.encode(claims(iss="someone-else"), settings.TOKEN_SIGNING_KEY, algorithm="HS256")


def future_iat_token() -> str:
    later = int((datetime.now(UTC) + timedelta(hours=1)).timestamp())
    return jwt.encode(claims(iat=later), settings.TOKEN_SIGNING_KEY, algorithm="HS256")


def tampered_token() -> str:
    """Our header and signature, someone else's claims."""
    header, _, signature = customer_token().split(".")
    other = jwt.encode(claims(sub=str(uuid.uuid4())), "x" * 40, algorithm="HS256").split(".")[1]
    return f"{header}.{other}.{signature}"


REFUSED = [
    pytest.param(admission_token, "invalid_token", id="admission-token"),
    pytest.param(
        lambda: sign(
            {"sub": str(CUSTOMER_ID)}, audience=ADMISSION_AUDIENCE, ttl=timedelta(hours=1)
        )[0],
        "invalid_token",
        id="other-audience",
    ),
    pytest.param(other_key_token, "invalid_token", id="other-key"),
    pytest.param(expired_token, "token_expired", id="expired"),
    pytest.param(unsigned_token, "invalid_token", id="alg-none"),
    pytest.param(no_subject_token, "invalid_token", id="no-subject"),
    pytest.param(bad_subject_token, "invalid_token", id="subject-not-uuid"),
    pytest.param(other_issuer_token, "invalid_token", id="other-issuer"),
    pytest.param(lambda: "not.a.jwt", "invalid_token", id="garbage"),
    pytest.param(future_iat_token, "invalid_token", id="issued-in-the-future"),
    pytest.param(tampered_token, "invalid_token", id="tampered-claims"),
]


def test_our_own_tokens_take_the_short_path_and_others_still_verify():
    """The tokens we mint are checked without PyJWT's general path; a token
    in another shape (an extra header field here) still goes through PyJWT."""
    assert tokens._verify_own(customer_token(), audience=CUSTOMER_AUDIENCE, check_expiry=True)
    assert tokens._verify_own(admission_token(), audience=ADMISSION_AUDIENCE, check_expiry=False)
    with_kid = jwt.encode(
        claims(), settings.TOKEN_SIGNING_KEY, algorithm="HS256", headers={"kid": "k1"}
    )
    assert tokens._verify_own(with_kid, audience=CUSTOMER_AUDIENCE, check_expiry=True) is None
    assert tokens.verify(with_kid, audience=CUSTOMER_AUDIENCE)["sub"] == str(CUSTOMER_ID)


# --- DRF -------------------------------------------------------------------------


def test_a_customer_token_authenticates(api):
    response = api.get(ME_URL, HTTP_AUTHORIZATION=f"Bearer {customer_token()}")
    assert response.status_code == 200
    assert response.json() == {"customer_id": str(CUSTOMER_ID), "email": "ada@example.com"}


@pytest.mark.parametrize(("make_token", "code"), REFUSED)
def test_drf_refuses_every_other_token(api, make_token, code):
    response = api.get(ME_URL, HTTP_AUTHORIZATION=f"Bearer {make_token()}")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == code
    assert "customer_id" not in response.json()


@pytest.mark.parametrize(
    "header",
    [None, "Token abc", "Bearer", "Bearer a b"],
    ids=["missing", "other-scheme", "empty", "two-parts"],
)
def test_drf_without_a_usable_bearer_is_401(api, header):
    extra = {"HTTP_AUTHORIZATION": header} if header is not None else {}
    response = api.get(ME_URL, **extra)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
