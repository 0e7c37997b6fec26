"""Bad input on every endpoint: wrong or missing tokens, tokens of the wrong
kind, oversized bodies, wrong content types, malformed JSON. The answer is
always a 4xx with the error envelope, one the OpenAPI schema documents for
that operation, never a 500, and nothing is written.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from django.conf import settings
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from claims.models import Claim
from customers.models import Customer
from customers.tokens import CUSTOMER_AUDIENCE, customer_token_issue
from events.models import Event
from fairqueue.tokens import ISSUER
from inventory.models import Ticket
from payments.models import Payment
from queueing.models import QueueEntry
from queueing.services import admission_tick_event
from queueing.tokens import admission_token_issue
from tests.support.factories import CustomerFactory, TierFactory

pytestmark = pytest.mark.django_db

# Every operation that needs a customer token (checked against the OpenAPI
# schema below, so a new endpoint cannot be forgotten here).
PROTECTED = [
    ("get", "/api/v1/auth/me/"),
    ("post", "/api/v1/auth/logout/"),
    ("get", "/api/v1/claims/{claim_id}/"),
    ("delete", "/api/v1/claims/{claim_id}/"),
    ("post", "/api/v1/claims/{claim_id}/payments/"),
    ("post", "/api/v1/events/{event_id}/claims/"),
    ("post", "/api/v1/events/{event_id}/queue/"),
    ("delete", "/api/v1/events/{event_id}/queue/"),
    ("get", "/api/v1/events/{event_id}/queue/position/"),
    ("post", "/api/v1/events/{event_id}/queue/ws-ticket/"),
    ("post", "/api/v1/events/{event_id}/queue/extend/"),
    ("post", "/api/v1/events/{event_id}/waitlist/"),
    ("get", "/api/v1/events/{event_id}/waitlist/"),
    ("delete", "/api/v1/events/{event_id}/waitlist/"),
    ("get", "/api/v1/payments/{payment_id}/"),
    ("get", "/api/v1/events/{event_id}/me/"),
    ("get", "/api/v1/me/tickets/"),
    ("get", "/api/v1/me/holds/"),
    ("get", "/api/v1/tickets/{code}/return/"),
    ("post", "/api/v1/tickets/{code}/return/"),
    ("delete", "/api/v1/tickets/{code}/return/"),
    ("post", "/api/v1/tickets/{code}/transfer/"),
    ("post", "/api/v1/transfers/{transfer_id}/accept/"),
    ("delete", "/api/v1/transfers/{transfer_id}/"),
]
# Operations that take a JSON body.
WITH_BODY = [
    "/api/v1/auth/otp/request/",
    "/api/v1/auth/otp/verify/",
    "/api/v1/auth/logout/",
    "/api/v1/events/{event_id}/claims/",
    "/api/v1/claims/{claim_id}/payments/",
    "/api/v1/events/{event_id}/waitlist/",
]
WEBHOOK = "/api/v1/webhooks/paystack/"


@dataclass
class World:
    """One customer mid-purchase: in a queue (admitted elsewhere), holding a
    claim with a live payment, plus an admission token for a second event."""

    customer: Customer
    token: str
    event: Event
    other_event: Event
    tier_id: str
    claim: Claim
    payment: Payment
    admission_token: str  # the customer's, for ``other_event``

    def path(self, template: str) -> str:
        return template.format(
            event_id=self.event.pk,
            claim_id=self.claim.pk,
            payment_id=self.payment.pk,
            # No ticket or transfer of anyone: a wrong token is refused first.
            code="ABCD-2345-EFGH-6789",
            transfer_id=self.payment.pk,
        )


def _bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.fixture
def world(api: APIClient) -> World:
    customer = CustomerFactory()
    token, _ = customer_token_issue(customer_id=customer.id, email=customer.email)
    tier = TierFactory(inventory=5)
    other_tier = TierFactory(inventory=5)
    # Through the API and the real admission tick: join, admitted, claim.
    for event in (tier.event, other_tier.event):
        response = api.post(f"/api/v1/events/{event.pk}/queue/", **_bearer(token))
        assert response.status_code == 201, response.content
        assert admission_tick_event(event_id=event.pk, use_lock=False).admitted == 1
    position = api.get(f"/api/v1/events/{tier.event_id}/queue/position/", **_bearer(token))
    response = api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {
            "admission_token": position.json()["admission_token"],
            "tier_id": str(tier.id),
            "quantity": 1,
        },
        format="json",
        **_bearer(token),
    )
    assert response.status_code == 201, response.content
    claim = Claim.objects.get(pk=response.json()["claim_id"])
    payment = Payment.objects.create(
        claim=claim,
        customer=customer,
        reference=f"fq_test_{uuid.uuid4().hex[:12]}",
        email=customer.email,
        amount=claim.amount,
        currency=claim.currency,
        status="PENDING",
        next_check_at=datetime.now(UTC) + timedelta(hours=1),
    )
    other = api.get(f"/api/v1/events/{other_tier.event_id}/queue/position/", **_bearer(token))
    return World(
        customer=customer,
        token=token,
        event=tier.event,
        other_event=other_tier.event,
        tier_id=str(tier.id),
        claim=claim,
        payment=payment,
        admission_token=other.json()["admission_token"],
    )


def snapshot() -> dict[str, object]:
    """Everything a request could write."""
    return {
        "queue": sorted(QueueEntry.objects.values_list("id", "status")),
        "claims": sorted(Claim.objects.values_list("id", "status")),
        "payments": sorted(Payment.objects.values_list("id", "status")),
        "held": Ticket.objects.filter(claim__isnull=False).count(),
        "customers": Customer.objects.count(),
    }


@functools.cache
def documented_statuses() -> dict[tuple[str, str], set[int]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (method, path): {int(status) for status in operation["responses"]}
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
    }


def assert_documented(method: str, template: str, response) -> None:
    """The answer's status is one the schema documents for the operation."""
    documented = documented_statuses()[method.lower(), template]
    assert response.status_code in documented, (method, template, response.status_code)


def assert_envelope(response, statuses: tuple[int, ...]) -> str:
    assert response.status_code in statuses, (response.status_code, response.content[:300])
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    assert body["error"]["code"] and isinstance(body["error"]["code"], str)
    return body["error"]["code"]


def _foreign_key_token(customer: Customer) -> str:
    now = datetime.now(UTC)
    claims = {
        "sub": str(customer.id),
        "email": customer.email,
        "iss": ISSUER,
        "aud": CUSTOMER_AUDIENCE,
        "iat": int(now.timestamp()),
        "exp": int((now + timedelta(hours=1)).timestamp()),
    }
    return jwt.encode(claims, "not-our-signing-key-but-long-enough-32b", algorithm="HS256")


def _expired_customer_token(customer: Customer) -> str:
    now = datetime.now(UTC)
    claims = {
        "sub": str(customer.id),
        "email": customer.email,
        "iss": ISSUER,
        "aud": CUSTOMER_AUDIENCE,
        "iat": int((now - timedelta(hours=2)).timestamp()),
        "exp": int((now - timedelta(hours=1)).timestamp()),
    }
    return jwt.encode(claims, settings.TOKEN_SIGNING_KEY, algorithm="HS256")


# (name, header value or None, expected codes)
def bad_credentials(world: World) -> list[tuple[str, str | None, set[str]]]:
    return [
        ("missing", None, {"not_authenticated"}),
        ("garbage", "Bearer garbage", {"invalid_token"}),
        ("three dots", "Bearer a.b.c", {"invalid_token"}),
        ("bearer without token", "Bearer", {"not_authenticated"}),
        ("two words", "Bearer a b", {"not_authenticated"}),
        ("basic auth", "Basic dXNlcjpwdw==", {"not_authenticated"}),
        ("admission token as bearer", f"Bearer {world.admission_token}", {"invalid_token"}),
        ("other signing key", f"Bearer {_foreign_key_token(world.customer)}", {"invalid_token"}),
        ("expired", f"Bearer {_expired_customer_token(world.customer)}", {"token_expired"}),
    ]


def test_protected_list_matches_the_schema():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    protected = sorted(
        (method, path)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if {"customerToken": []} in operation.get("security", [])
        and {} not in operation["security"]
    )
    assert protected == sorted(PROTECTED)


@pytest.mark.parametrize(("method", "template"), PROTECTED)
def test_wrong_tokens_are_401_and_change_nothing(api, world, method, template):
    before = snapshot()
    body = {"admission_token": world.admission_token, "tier_id": world.tier_id, "quantity": 1}
    for name, header, codes in bad_credentials(world):
        client = APIClient()
        extra = {"HTTP_AUTHORIZATION": header} if header is not None else {}
        response = getattr(client, method)(world.path(template), body, format="json", **extra)
        code = assert_envelope(response, (401, 403))
        assert code in codes, (name, code)
        assert_documented(method, template, response)
    assert snapshot() == before


@pytest.mark.parametrize(
    ("name", "expected_status", "expected_code"),
    [
        ("customer token", 401, "invalid_token"),
        ("garbage", 401, "invalid_token"),
        ("empty", 422, "validation_error"),
        ("other customer", 403, "admission_invalid"),
        ("other event", 403, "admission_invalid"),
        ("expired", 403, "admission_expired"),
    ],
)
def test_wrong_admission_tokens_are_refused_and_claim_nothing(
    world, name, expected_status, expected_code
):
    """The customer is admitted to ``other_event`` and claims there with
    every kind of wrong admission token."""
    entry = QueueEntry.objects.get(event=world.other_event, customer=world.customer)

    def minted(*, event_id, customer_id, seconds: int) -> str:
        return admission_token_issue(
            event_id=event_id,
            customer_id=customer_id,
            queue_entry_id=entry.id,
            expires_at=datetime.now(UTC) + timedelta(seconds=seconds),
        )

    admission = {
        "customer token": world.token,
        "garbage": "garbage",
        "empty": "",
        # Genuine signatures, wrong binding.
        "other customer": minted(
            event_id=world.other_event.pk, customer_id=CustomerFactory().id, seconds=300
        ),
        "other event": minted(event_id=world.event.pk, customer_id=world.customer.id, seconds=300),
        "expired": minted(event_id=world.other_event.pk, customer_id=world.customer.id, seconds=-5),
    }[name]
    if name == "expired":  # the window itself is over (the token only said when it would be)
        QueueEntry.objects.filter(pk=entry.pk).update(
            admission_expires_at=datetime.now(UTC) - timedelta(seconds=5)
        )
    before = snapshot()
    response = claim_on_other_event(world, admission)
    assert assert_envelope(response, (expected_status,)) == expected_code
    assert snapshot() == before


def claim_on_other_event(world: World, admission_token: str):
    return APIClient().post(
        f"/api/v1/events/{world.other_event.pk}/claims/",
        {
            "admission_token": admission_token,
            "tier_id": str(world.other_event.tiers.get().id),
            "quantity": 1,
        },
        format="json",
        **_bearer(world.token),
    )


def test_the_genuine_admission_token_claims(world):
    """The control for the test above: the same request with the real token works."""
    response = claim_on_other_event(world, world.admission_token)
    assert response.status_code == 201, response.content
    assert Claim.objects.filter(event=world.other_event, customer=world.customer).count() == 1


def _signed(body: bytes) -> dict[str, str]:
    signature = hmac.new(settings.PAYSTACK_SECRET_KEY.encode(), body, hashlib.sha512).hexdigest()
    return {"HTTP_X_PAYSTACK_SIGNATURE": signature}


@pytest.mark.parametrize("template", [*WITH_BODY, WEBHOOK])
def test_oversized_body_is_refused_without_a_500(world, template):
    size = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024
    raw = json.dumps({"email": "a" * size, "admission_token": "x" * size}).encode()
    before = snapshot()
    response = APIClient().generic(
        "POST",
        world.path(template),
        raw,
        content_type="application/json",
        **_bearer(world.token),
        **(_signed(raw) if template == WEBHOOK else {}),
    )
    assert_envelope(response, (400, 413))
    if template != WEBHOOK:  # not in the schema
        assert_documented("post", template, response)
    assert snapshot() == before


@pytest.mark.parametrize("template", WITH_BODY)
@pytest.mark.parametrize(
    ("content_type", "raw"),
    [
        ("text/plain", b'{"quantity": 1}'),
        ("application/x-www-form-urlencoded", b"quantity=1&tier_id=x"),
        ("multipart/form-data; boundary=xyz", b"--xyz--\r\n"),
        ("application/xml", b"<quantity>1</quantity>"),
    ],
)
def test_wrong_content_type_is_415(world, template, content_type, raw):
    before = snapshot()
    response = APIClient().generic(
        "POST", world.path(template), raw, content_type=content_type, **_bearer(world.token)
    )
    assert assert_envelope(response, (415,)) == "unsupported_media_type"
    assert_documented("post", template, response)
    assert snapshot() == before


@pytest.mark.parametrize("template", WITH_BODY)
@pytest.mark.parametrize(
    ("raw", "statuses"),
    [
        (b'{"quantity": ', (400,)),  # truncated
        (b"{'quantity': 1}", (400,)),  # not JSON
        (b"\xff\xfe\x00garbage", (400,)),  # not UTF-8
        # JSON, but not an object: refused on every endpoint, the payment's
        # optional body too (its empty values are not "no body").
        (b"[1, 2, 3]", (422,)),
        (b'"a string"', (422,)),
        (b"null", (422,)),
        (b"[]", (422,)),
        (b"0", (422,)),
        (b"false", (422,)),
        (b'""', (422,)),
        (b'{"quantity": 1e999, "tier_id": {"$gt": ""}, "admission_token": [null]}', (400, 422)),
    ],
)
def test_malformed_json_is_4xx_and_changes_nothing(world, template, raw, statuses):
    before = snapshot()
    response = APIClient().generic(
        "POST", world.path(template), raw, content_type="application/json", **_bearer(world.token)
    )
    assert_envelope(response, statuses)
    assert_documented("post", template, response)
    assert snapshot() == before


@pytest.mark.parametrize(("raw", "content_type"), [(b"", None), (b"{}", "application/json")])
def test_the_payment_body_is_optional_and_empty(world, raw, content_type):
    """The control for the non-object bodies above: no body, or an empty
    object, gives the claim's live payment back unchanged."""
    before = snapshot()
    extra = {"content_type": content_type} if content_type else {}
    response = APIClient().generic(
        "POST",
        world.path("/api/v1/claims/{claim_id}/payments/"),
        raw,
        **extra,
        **_bearer(world.token),
    )
    assert response.status_code == 200, response.content
    assert response.json()["payment_id"] == str(world.payment.pk)
    assert snapshot() == before


@pytest.mark.parametrize(
    "template", ["/api/v1/events/{event_id}/claims/", "/api/v1/claims/{claim_id}/payments/"]
)
def test_nul_characters_with_an_idempotency_key_are_422_not_500(world, template):
    """The 422 answer echoes the unknown field names; storing it for the
    Idempotency-Key must not fail on U+0000 (Postgres jsonb refuses it)."""
    raw = json.dumps({"\u0000x": 1, "quantity": 1}).encode()
    before = snapshot()
    for _ in range(2):  # the second answer is the stored one
        response = APIClient().generic(
            "POST",
            world.path(template),
            raw,
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY="nul-test",
            **_bearer(world.token),
        )
        assert assert_envelope(response, (422,)) == "validation_error"
        assert_documented("post", template, response)
    assert snapshot() == before


@pytest.mark.parametrize(
    "raw", [b'{"event": ', b"[]", b"null", b'{"event": "charge.success", "data": "x"}']
)
def test_malformed_webhook_with_a_valid_signature_is_4xx(world, raw):
    before = snapshot()
    response = APIClient().generic(
        "POST", WEBHOOK, raw, content_type="application/json", **_signed(raw)
    )
    assert response.status_code < 500, response.content
    assert snapshot() == before


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/v1/events/not-a-uuid/queue/"),
        ("get", "/api/v1/claims/00000000-0000-0000-0000-00000000000g/"),
        ("get", f"/api/v1/payments/{uuid.uuid4()}/"),
        ("post", f"/api/v1/claims/{uuid.uuid4()}/payments/"),
        ("post", f"/api/v1/events/{uuid.uuid4()}/queue/"),
        ("get", "/api/v1/nowhere/"),
        ("post", "/api/v1/nowhere/"),
        ("delete", "/api/v1/events/null,null/queue/"),
    ],
)
def test_unknown_resources_are_404_envelopes(world, method, path):
    before = snapshot()
    # CSRF checks on, as for a real client (the test client skips them by default).
    client = APIClient(enforce_csrf_checks=True)
    response = getattr(client, method)(path, {}, format="json", **_bearer(world.token))
    assert_envelope(response, (404,))
    assert snapshot() == before


@pytest.mark.parametrize(
    "template", ["/api/v1/events/{event_id}/claims/", "/api/v1/claims/{claim_id}/payments/"]
)
@pytest.mark.parametrize("key", [" ", "x" * 256, "caf\u00e9".encode().decode("latin-1")])
def test_a_bad_idempotency_key_is_422_as_documented(world, template, key):
    before = snapshot()
    response = APIClient().generic(
        "POST",
        world.path(template),
        b"{}",
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY=key,
        **_bearer(world.token),
    )
    assert assert_envelope(response, (422,)) == "invalid_idempotency_key"
    assert_documented("post", template, response)
    assert snapshot() == before


def test_every_operation_with_an_id_is_a_documented_404_for_an_unknown_one(world):
    """Each operation of the schema with a path parameter, with an unknown id."""
    unknown = uuid.uuid4()
    probed = 0
    for (method, template), _ in sorted(documented_statuses().items()):
        if "{" not in template or template.endswith("/check-in/"):
            continue  # check-in: an organizer session, tested in tests/claims/test_check_in.py
        before = snapshot()
        path = template.format(
            event_id=unknown,
            claim_id=unknown,
            payment_id=unknown,
            tier_id=unknown,
            shard="00",
            code="ABCD-2345-EFGH-6789",
            transfer_id=unknown,
        )
        body: dict[str, object] = {}  # a valid one, so only the id is wrong
        if template.endswith("/transfer/"):
            body = {"email": "friend@example.test"}
        if template.endswith("/claims/"):
            body = {
                "admission_token": world.admission_token,
                "tier_id": world.tier_id,
                "quantity": 1,
            }
        response = getattr(APIClient(), method)(path, body, format="json", **_bearer(world.token))
        assert assert_envelope(response, (404,)).endswith("not_found"), (method, template)
        assert_documented(method, template, response)
        assert snapshot() == before
        probed += 1
    assert probed == 24  # the line state (GET queue/state/) and a draw document among them
