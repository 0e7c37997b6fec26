"""The one error envelope for bad input: never a 500, never an HTML page."""

import uuid

import pytest

from customers.models import OneTimeCode

pytestmark = pytest.mark.django_db

OTP_REQUEST = "/api/v1/auth/otp/request/"


def assert_envelope(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


@pytest.mark.parametrize("raw", [b"{", b'{"email": }', b"\xff\xfe", b"nul", b'{"email": "a@b.c"'])
def test_malformed_json_is_400(api, raw):
    response = api.post(OTP_REQUEST, raw, content_type="application/json")
    assert_envelope(response, 400, "malformed_request")
    assert OneTimeCode.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"email=a@example.com", "application/x-www-form-urlencoded"),
        (b"a@example.com", "text/plain"),
        (b"<email>a@example.com</email>", "application/xml"),
    ],
)
def test_a_body_that_is_not_json_is_415(api, body, content_type):
    response = api.post(OTP_REQUEST, body, content_type=content_type)
    error = assert_envelope(response, 415, "unsupported_media_type")
    assert content_type in error["message"]
    assert OneTimeCode.objects.count() == 0


def test_unknown_fields_are_422_and_named(api):
    response = api.post(
        OTP_REQUEST, {"email": "a@example.com", "admin": True, "role": "x"}, format="json"
    )
    error = assert_envelope(response, 422, "validation_error")
    assert error["details"] == {"unknown_fields": ["admin", "role"]}
    assert OneTimeCode.objects.count() == 0


@pytest.mark.parametrize("body", [[], ["a@example.com"], "a@example.com", 42, None])
def test_a_json_body_that_is_not_an_object_is_422(api, body):
    import json

    response = api.post(OTP_REQUEST, json.dumps(body), content_type="application/json")
    assert_envelope(response, 422, "validation_error")
    assert OneTimeCode.objects.count() == 0


def test_field_errors_are_listed_per_field(api):
    response = api.post(OTP_REQUEST, {"email": 12}, format="json")
    error = assert_envelope(response, 422, "validation_error")
    assert list(error["details"]["fields"]) == ["email"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/events/not-a-uuid/",
        "/api/v1/events/1234/",
        f"/api/v1/events/{uuid.uuid4().hex[:-1]}/",
        "/api/v1/events/%00/",
    ],
)
def test_a_bad_uuid_in_a_path_is_404(api, path):
    assert_envelope(api.get(path), 404, "not_found")


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path", ["/api/v1/nope/", "/api/v2/events/", "/api/", "/api/v1/"])
def test_an_unknown_api_url_is_a_404_envelope_in_debug_too(api, settings, path, debug):
    settings.DEBUG = debug
    assert_envelope(api.get(path), 404, "not_found")
    assert_envelope(api.post(path, {}, format="json"), 404, "not_found")


def test_a_missing_trailing_slash_is_a_404_that_says_so_not_a_redirect(api):
    response = api.post("/api/v1/auth/otp/request", {"email": "a@example.com"}, format="json")
    error = assert_envelope(response, 404, "not_found")
    assert error["message"].endswith("/api/v1/auth/otp/request/")
    assert OneTimeCode.objects.count() == 0


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", OTP_REQUEST),
        ("delete", OTP_REQUEST),
        ("put", "/api/v1/auth/otp/verify/"),
        ("post", "/api/v1/events/"),
        ("delete", "/api/v1/events/"),
    ],
)
def test_a_wrong_method_is_405(api, method, path):
    response = getattr(api, method)(path)
    error = assert_envelope(response, 405, "method_not_allowed")
    assert method.upper() in error["message"]


def test_an_unknown_event_has_its_own_code(api):
    assert_envelope(api.get(f"/api/v1/events/{uuid.uuid4()}/"), 404, "event_not_found")


def test_unknown_page_outside_the_api_is_the_html_404_page(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert b"Page not found" in response.content
