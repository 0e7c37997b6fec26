"""The OpenAPI schema tells the truth: it generates without warnings, every
operation documents the error answers it can give (and only those), every
error answer is the one envelope, and real answers fit their schemas."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator

from claims.domain import ClaimStatus, ReleaseReason
from events.domain import EventStatus
from fairqueue.errors import ErrorCode
from fairqueue.schema import (
    TEXT_PATTERN,
    document_error_answers,
    operation_errors,
    throttled_operations,
)
from payments.domain import PaymentStatus
from tests.support.factories import CustomerFactory, bearer
from tests.support.sales import admit_directly, on_sale

ENVELOPE_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}

# Every operation and the error statuses it documents: the plumbing's (401
# with a customer token, 404 with an id in the path, BODY with a request body,
# IDEMPOTENT with an Idempotency-Key, 429 with a throttle) and its services'.
BODY = {400, 413, 415, 422}
IDEMPOTENT = {409, 422}
DOCUMENTED_ERRORS = {
    ("get", "/api/v1/auth/me/"): {401, 429},
    ("post", "/api/v1/auth/otp/request/"): BODY | {403, 429, 503},
    ("post", "/api/v1/auth/otp/verify/"): BODY | {403, 429, 503},
    ("post", "/api/v1/auth/logout/"): BODY | {401},
    ("get", "/api/v1/events/"): {401, 429},
    ("get", "/api/v1/events/{event_id}/"): {401, 404, 429},
    ("get", "/api/v1/events/{event_id}/tiers/{tier_id}/seats/"): {401, 404, 429},
    ("post", "/api/v1/events/{event_id}/queue/"): {401, 403, 404, 409, 503},
    ("post", "/api/v1/events/{event_id}/queue/ws-ticket/"): {401, 404, 429, 503},
    ("delete", "/api/v1/events/{event_id}/queue/"): {401, 404, 409},
    ("get", "/api/v1/events/{event_id}/queue/position/"): {401, 404, 429},
    ("post", "/api/v1/events/{event_id}/queue/extend/"): {401, 403, 404, 409},
    ("get", "/api/v1/events/{event_id}/queue/state/"): {404},
    ("get", "/api/v1/events/{event_id}/queue/draw/{shard}/"): {404, 503},
    ("post", "/api/v1/events/{event_id}/waitlist/"): BODY | {401, 404, 409},
    ("get", "/api/v1/events/{event_id}/waitlist/"): {401, 404, 429},
    ("delete", "/api/v1/events/{event_id}/waitlist/"): {401, 404, 503},
    ("post", "/api/v1/events/{event_id}/claims/"): BODY | IDEMPOTENT | {401, 403, 404, 410, 503},
    ("get", "/api/v1/claims/{claim_id}/"): {401, 404, 429},
    ("delete", "/api/v1/claims/{claim_id}/"): {401, 404, 409},
    # No 502: a gateway refusal is ours to fix (503 payments_unavailable), never the buyer's.
    ("post", "/api/v1/claims/{claim_id}/payments/"): BODY | IDEMPOTENT | {401, 404, 410, 503},
    ("get", "/api/v1/payments/{payment_id}/"): {401, 404, 429},
    ("get", "/api/v1/events/{event_id}/me/"): {401, 404, 429},
    ("get", "/api/v1/me/tickets/"): {401, 429},
    ("get", "/api/v1/me/holds/"): {401, 429},
    ("get", "/api/v1/tickets/{code}/return/"): {401, 404, 409, 429},
    ("post", "/api/v1/tickets/{code}/return/"): {401, 404, 409, 503},
    ("delete", "/api/v1/tickets/{code}/return/"): {401, 404, 409, 503},
    # Limited per ticket, sender and mailbox (429); the purchase's row lock (503).
    ("post", "/api/v1/tickets/{code}/transfer/"): BODY | {401, 404, 409, 429, 503},
    ("post", "/api/v1/transfers/{transfer_id}/accept/"): {401, 404, 409, 503},
    ("delete", "/api/v1/transfers/{transfer_id}/"): {401, 404, 409, 503},
    # Organizer session, not a customer token: its own 401 and 403.
    ("post", "/api/v1/events/{event_id}/tickets/check-in/"): BODY | {401, 403, 404, 409},
}


# The request bodies parsed by a StrictSerializer, which refuses unknown
# fields (422): their schemas are closed. The waiting list's serializer
# ignores unknown fields, and its body says nothing of them.
CLOSED_BODIES = {
    ("post", "/api/v1/auth/otp/request/"),
    ("post", "/api/v1/auth/otp/verify/"),
    ("post", "/api/v1/auth/logout/"),
    ("post", "/api/v1/events/{event_id}/claims/"),
    ("post", "/api/v1/claims/{claim_id}/payments/"),
    ("post", "/api/v1/tickets/{code}/transfer/"),
    ("post", "/api/v1/events/{event_id}/tickets/check-in/"),
}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict[str, Any]):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield method, path, operation


def test_the_schema_generates_without_warnings(tmp_path):
    """``--fail-on-warn`` raises on any warning (enum name collisions,
    operationId collisions, unresolvable fields, ...)."""
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--file", str(out))
    assert out.read_text().startswith("openapi: 3.")


def test_each_status_field_has_its_own_named_enum(schema):
    components = schema["components"]["schemas"]
    assert components["EventStatusEnum"]["enum"] == [s.value for s in EventStatus]
    assert components["ClaimStatusEnum"]["enum"] == [s.value for s in ClaimStatus]
    assert components["PaymentStatusEnum"]["enum"] == [s.value for s in PaymentStatus]
    assert not [name for name in components if name.startswith("Status")]


def test_every_operation_documents_its_error_answers(schema):
    documented = {
        (method, path): {int(status) for status in operation["responses"] if int(status) >= 400}
        for method, path, operation in operations(schema)
    }
    assert documented == DOCUMENTED_ERRORS


def test_every_error_answer_is_the_envelope(schema):
    for method, path, operation in operations(schema):
        for status, response in operation["responses"].items():
            if int(status) >= 400:
                assert response["content"] == {"application/json": {"schema": ENVELOPE_REF}}, (
                    method,
                    path,
                    status,
                )
                assert response["description"], (method, path, status)
    envelope = schema["components"]["schemas"]["ErrorEnvelope"]
    assert envelope["required"] == ["error"]
    body = schema["components"]["schemas"]["ErrorBody"]
    assert sorted(body["properties"]) == sorted(body["required"]) == ["code", "details", "message"]


def test_the_error_code_is_the_enum_of_every_code(schema):
    """Clients can switch on ``error.code``: the schema lists every code
    (fairqueue.errors.ErrorCode), under one name."""
    components = schema["components"]["schemas"]
    assert components["ErrorBody"]["properties"]["code"] == {
        "$ref": "#/components/schemas/ErrorCodeEnum"
    }
    assert components["ErrorCodeEnum"]["type"] == "string"
    assert components["ErrorCodeEnum"]["enum"] == [code.value for code in ErrorCode]
    assert "sold_out" in components["ErrorCodeEnum"]["enum"]


def test_the_hook_adds_the_plumbings_answers_to_an_undocumented_operation():
    """An operation whose view documents no error at all still gets the
    answers of what it has; one with nothing of the kind gets none."""
    bare = {"responses": {"200": {"description": ""}}, "security": [{}]}
    full = {
        "parameters": [
            {"in": "path", "name": "claim_id", "schema": {"type": "string"}},
            {"in": "header", "name": "Idempotency-Key", "schema": {"type": "string"}},
        ],
        "requestBody": {"content": {}},
        "security": [{"customerToken": []}],
        "responses": {
            "201": {"description": ""},
            "409": {"description": "mine", "content": {}},
        },
    }
    result = {"paths": {"/a/": {"get": bare}, "/b/{claim_id}/": {"post": full}}}

    class Generator:
        endpoints: list = []

    document_error_answers(result=result, generator=Generator(), request=None, public=True)
    assert sorted(bare["responses"]) == ["200"]
    assert sorted(full["responses"]) == ["201", "400", "401", "404", "409", "413", "415", "422"]
    assert full["responses"]["409"] == {"description": "mine", "content": {}}  # kept
    assert full["responses"]["404"]["content"] == {"application/json": {"schema": ENVELOPE_REF}}
    assert "ErrorEnvelope" in result["components"]["schemas"]
    assert set(operation_errors(bare, throttled=True, security_scheme="customerToken")) == {"429"}


def test_the_throttled_operations_are_found_from_the_views():
    generator = SchemaGenerator()
    generator.get_schema(request=None, public=True)
    reads = {(path, method) for method, path in DOCUMENTED_ERRORS if method == "get"}
    public = {  # nobody's: not counted
        ("/api/v1/events/{event_id}/queue/state/", "get"),
        ("/api/v1/events/{event_id}/queue/draw/{shard}/", "get"),
    }
    assert throttled_operations(generator) == (reads - public) | {
        ("/api/v1/auth/otp/request/", "post"),
        ("/api/v1/auth/otp/verify/", "post"),
        ("/api/v1/events/{event_id}/queue/ws-ticket/", "post"),  # a customer's bucket
        # The schema and the docs pages (not in the schema): reads like any other.
        ("/api/schema/", "get"),
        ("/api/docs/", "get"),
        ("/api/redoc/", "get"),
    }


def _body_schema(schema: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any]:
    (media,) = operation["requestBody"]["content"].values()
    return _resolve(schema, media["schema"])


def test_bodies_that_refuse_unknown_fields_say_so(schema):
    closed = {
        (method, path)
        for method, path, operation in operations(schema)
        if "requestBody" in operation
        and _body_schema(schema, operation).get("additionalProperties") is False
    }
    assert closed == CLOSED_BODIES
    waitlist = schema["paths"]["/api/v1/events/{event_id}/waitlist/"]["post"]
    assert "additionalProperties" not in _body_schema(schema, waitlist)


def test_text_fields_say_they_are_trimmed_and_not_blank(schema):
    """A CharField strips its text and refuses a blank one or a U+0000: the
    pattern says so, where the field has no format or pattern of its own."""
    components = schema["components"]["schemas"]
    claim = components["ClaimCreateRequest"]["properties"]
    assert claim["admission_token"]["pattern"] == TEXT_PATTERN
    assert claim["seats"]["items"]["pattern"] == TEXT_PATTERN
    assert components["OtpRequestRequest"]["properties"]["nonce"]["pattern"] == TEXT_PATTERN
    assert components["OtpRequestRequest"]["properties"]["email"]["format"] == "email"
    assert "pattern" not in components["OtpRequestRequest"]["properties"]["email"]
    assert components["OtpVerifyRequest"]["properties"]["code"]["pattern"] == r"^\d{6}$"
    text = re.compile(TEXT_PATTERN)
    for value in ["A-1", " A-1 ", "\u00e9"]:
        assert text.match(value), value
    for value in ["", " ", "\t\n", "\u3000", "\x1c", "A\x00"]:
        assert not text.match(value), repr(value)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/events/{id}/claims/",
        "/api/v1/claims/{id}/payments/",
        "/api/v1/tickets/ABCD2345EFGH6789/transfer/",
        "/api/v1/auth/logout/",
        "/api/v1/auth/otp/request/",
        "/api/v1/auth/otp/verify/",
    ],
)
def test_a_closed_body_refuses_an_unknown_field_first(api, path):
    """Whatever else is wrong (an unknown id here), an unknown field is the
    422 the closed schema promises, naming the field."""
    response = api.post(
        path.format(id=uuid.uuid4()),
        {"surprise": 1},
        format="json",
        **bearer(CustomerFactory()),
    )
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert (error["code"], error["details"]) == (
        "validation_error",
        {"unknown_fields": ["surprise"]},
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/auth/logout/", {"everywhere": 0}, "everywhere"),
        ("/api/v1/auth/logout/", {"everywhere": "true"}, "everywhere"),
        ("/api/v1/auth/otp/request/", {"email": "ada@example.test", "nonce": 0}, "nonce"),
        ("/api/v1/events/{id}/claims/", {"admission_token": "t", "tier_id": 5}, "tier_id"),
        (
            "/api/v1/events/{id}/claims/",
            {"admission_token": "t", "tier_id": "x", "quantity": "1"},
            "quantity",
        ),
        (
            "/api/v1/events/{id}/claims/",
            {"admission_token": "t", "tier_id": "x", "seats": [1]},
            "seats",
        ),
    ],
)
def test_a_strict_body_takes_only_its_json_types(api, path, body, field):
    """0 for false, "1" for 1, 5 for a UUID: what the schema calls invalid is
    422, never read as something else (and nothing happens)."""
    customer = CustomerFactory()
    response = api.post(path.format(id=uuid.uuid4()), body, format="json", **bearer(customer))
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert list(error["details"]["fields"]) == [field]
    assert api.get("/api/v1/auth/me/", **bearer(customer)).status_code == 200  # not signed out


@pytest.mark.django_db
def test_the_waiting_list_body_ignores_unknown_fields(api):
    """Its schema is open because its serializer takes unknown fields and
    drops them: the answer is the one without them."""
    auth = bearer(CustomerFactory())
    path = f"/api/v1/events/{uuid.uuid4()}/waitlist/"
    plain = api.post(path, {}, format="json", **auth)
    extra = api.post(path, {"surprise": 1}, format="json", **auth)
    assert plain.status_code == extra.status_code == 404
    assert plain.json() == extra.json()


# --- real answers against their schemas --------------------------------------


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def assert_fits(schema: dict[str, Any], component: str, body: dict[str, Any]) -> None:
    """The checks a schema fuzzer makes that matter here: required fields
    present, null only where nullable, enum values among the enum's."""
    spec = schema["components"]["schemas"][component]
    assert set(spec["required"]) <= set(body), (component, body)
    for name, value in body.items():
        prop = spec["properties"][name]
        if value is None:
            assert prop.get("nullable"), (component, name)
            continue
        choices = [_resolve(schema, p) for p in prop.get("allOf", []) + prop.get("oneOf", [])]
        enums = [c["enum"] for c in [prop, *choices] if "enum" in c]
        if enums:
            assert any(value in enum for enum in enums), (component, name, value)


@pytest.mark.django_db
def test_a_claim_fits_its_schema_before_and_after_release(api, schema):
    """release_reason is null until the claim is released (the model keeps ""),
    then one of the documented reasons."""
    tier = on_sale(tickets=5)
    buyer = admit_directly(tier.event, [CustomerFactory()])[0]
    auth = bearer(buyer.customer)
    made = api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"admission_token": buyer.token, "tier_id": str(tier.id), "quantity": 1},
        format="json",
        **auth,
    )
    assert made.status_code == 201, made.content
    assert_fits(schema, "Claim", made.json())
    claim_id = made.json()["claim_id"]

    held = api.get(f"/api/v1/claims/{claim_id}/", **auth)
    assert held.status_code == 200
    assert held.json()["release_reason"] is None
    assert held.json()["released_at"] is None
    assert_fits(schema, "ClaimDetail", held.json())

    assert api.delete(f"/api/v1/claims/{claim_id}/", **auth).status_code == 204
    released = api.get(f"/api/v1/claims/{claim_id}/", **auth).json()
    assert (released["status"], released["release_reason"]) == ("RELEASED", "customer")
    reasons = schema["components"]["schemas"]["ReleaseReasonEnum"]["enum"]
    assert reasons == [r.value for r in ReleaseReason]
    assert_fits(schema, "ClaimDetail", released)


@pytest.mark.django_db
def test_an_event_fits_its_schema(api, schema):
    tier = on_sale(tickets=5)
    listed = api.get("/api/v1/events/")
    assert listed.status_code == 200
    for event in listed.json()["results"]:
        assert_fits(schema, "EventList", event)
    detail = api.get(f"/api/v1/events/{tier.event_id}/")
    assert detail.status_code == 200
    assert_fits(schema, "EventDetail", detail.json())
