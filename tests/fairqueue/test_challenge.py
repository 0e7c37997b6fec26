"""The optional bot challenge on sign-in requests and queue joins: off by
default; when on, checked server-side over HTTP (the real client) against
the sandbox gateway's Turnstile-shaped test verifier; the pages render the
widget."""

from __future__ import annotations

import io
import uuid

import pytest
import requests

from customers.models import OneTimeCode
from devtools.sandbox.challenge import ALWAYS_FAILS_SECRET, DUMMY_TOKEN, SANDBOX_TOKEN_PREFIX
from queueing.models import QueueEntry
from tests.support.factories import CustomerFactory, bearer
from tests.support.sales import make_event
from tests.support.signin import REQUEST_URL

pytestmark = pytest.mark.django_db

HEADER = "HTTP_X_CHALLENGE_TOKEN"


def solved(action: str, hostname: str = "testserver") -> str:
    """A token of the sandbox's stand-in widget, solved on ``hostname`` for
    ``action`` (what the real verifier reports back for a real token)."""
    return f"{SANDBOX_TOKEN_PREFIX}{uuid.uuid4().hex}.{action}.{hostname}"


@pytest.fixture
def challenge_on(settings, sandbox_server):
    settings.CHALLENGE_PROVIDER = "turnstile"
    settings.CHALLENGE_SITE_KEY = "1x00000000000000000000AA"
    settings.CHALLENGE_SECRET_KEY = "1x0000000000000000000000000000000AA"
    settings.CHALLENGE_VERIFY_URL = f"{sandbox_server.url}/challenge/siteverify"
    settings.CHALLENGE_SCRIPT_URL = f"{sandbox_server.url}/challenge/api.js"
    return settings


def test_off_by_default_nothing_is_asked(api, mailoutbox, settings):
    assert settings.CHALLENGE_PROVIDER == ""
    response = api.post(REQUEST_URL, {"email": "a@example.com"}, format="json")
    assert response.status_code == 202
    page = api.get("/signin/").content.decode()
    assert "cf-turnstile" not in page


def test_sign_in_without_a_token_is_refused_and_sends_nothing(api, mailoutbox, challenge_on):
    response = api.post(REQUEST_URL, {"email": "a@example.com"}, format="json")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "challenge_failed"
    assert mailoutbox == []
    assert OneTimeCode.objects.count() == 0


def test_sign_in_with_a_passed_challenge_goes_through_once(api, mailoutbox, challenge_on):
    token = solved("signin")
    first = api.post(REQUEST_URL, {"email": "a@example.com"}, format="json", **{HEADER: token})
    replay = api.post(REQUEST_URL, {"email": "b@example.com"}, format="json", **{HEADER: token})

    assert first.status_code == 202
    assert replay.status_code == 403
    assert replay.json()["error"]["details"] == {"error_codes": ["timeout-or-duplicate"]}
    assert [m.to for m in mailoutbox] == [["a@example.com"]]


def test_a_forged_token_is_refused(api, mailoutbox, challenge_on):
    response = api.post(
        REQUEST_URL, {"email": "a@example.com"}, format="json", **{HEADER: "i-am-human"}
    )
    assert response.status_code == 403
    assert response.json()["error"]["details"] == {"error_codes": ["invalid-input-response"]}
    assert mailoutbox == []


def test_queue_join_is_challenged_too(api, challenge_on):
    event = make_event()
    customer = CustomerFactory()

    refused = api.post(f"/api/v1/events/{event.id}/queue/", **bearer(customer))
    joined = api.post(
        f"/api/v1/events/{event.id}/queue/", **bearer(customer), **{HEADER: solved("queue_join")}
    )

    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "challenge_failed"
    assert joined.status_code == 201
    assert QueueEntry.objects.filter(event=event).count() == 1


def test_the_verifier_gets_the_client_address(api, challenge_on, sandbox_server, settings):
    """What the server sends is what siteverify expects: secret, response, remoteip."""
    seen = []
    token = solved("signin")
    original = sandbox_server.app.route

    def spy(environ):
        if environ.get("PATH_INFO") == "/challenge/siteverify":
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            seen.append(body.decode())
            environ["wsgi.input"] = io.BytesIO(body)
        return original(environ)

    sandbox_server.app.route = spy
    try:
        api.post(
            REQUEST_URL,
            {"email": "a@example.com"},
            format="json",
            REMOTE_ADDR="203.0.113.9",
            **{HEADER: token},
        )
    finally:
        sandbox_server.app.route = original

    assert len(seen) == 1
    fields = dict(part.split("=", 1) for part in seen[0].split("&"))
    assert fields == {
        "secret": settings.CHALLENGE_SECRET_KEY,
        "response": token,
        "remoteip": "203.0.113.9",
    }


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        (lambda: solved("signin", hostname="phish.example.net"), "hostname-mismatch"),
        (lambda: solved("queue_join"), "action-mismatch"),  # solved to join, spent to sign in
        (lambda: solved(""), "action-mismatch"),
        (lambda: DUMMY_TOKEN, "hostname-mismatch"),  # Cloudflare's test token: example.com
    ],
    ids=["another site", "another action", "no action", "a test key's token"],
)
def test_a_token_solved_elsewhere_or_for_something_else_is_refused(
    api, mailoutbox, challenge_on, token, problem
):
    """A passed challenge is only worth something on our site and for what
    it was solved for: a farm of pages elsewhere with our site key, or a join
    widget's token, opens no sign-in."""
    response = api.post(REQUEST_URL, {"email": "a@example.com"}, format="json", **{HEADER: token()})

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "challenge_failed"
    assert response.json()["error"]["details"] == {"error_codes": [problem]}
    assert mailoutbox == []
    assert OneTimeCode.objects.count() == 0


def test_the_sites_public_host_is_the_one_expected_behind_a_proxy(api, mailoutbox, challenge_on):
    """Behind a proxy the request's Host may be an inner name; the widget ran
    on the public one (PUBLIC_BASE_URL), or on CHALLENGE_HOSTNAMES when set."""
    challenge_on.PUBLIC_BASE_URL = "https://tickets.example.com"
    public = solved("signin", hostname="tickets.example.com")
    inner = solved("signin", hostname="testserver")

    answers = [
        api.post(REQUEST_URL, {"email": f"{n}@example.com"}, format="json", **{HEADER: t})
        for n, t in (("a", public), ("b", inner))
    ]
    challenge_on.CHALLENGE_HOSTNAMES = ["shop.example.org"]
    listed = api.post(
        REQUEST_URL,
        {"email": "c@example.com"},
        format="json",
        **{HEADER: solved("signin", hostname="shop.example.org")},
    )

    assert [a.status_code for a in answers] == [202, 403]
    assert listed.status_code == 202
    assert [m.to for m in mailoutbox] == [["a@example.com"], ["c@example.com"]]


def test_a_verifier_that_cannot_be_reached_fails_closed(api, mailoutbox, settings, closed_port):
    settings.CHALLENGE_PROVIDER = "turnstile"
    settings.CHALLENGE_SECRET_KEY = "secret"
    settings.CHALLENGE_VERIFY_URL = f"http://127.0.0.1:{closed_port}/siteverify"

    response = api.post(REQUEST_URL, {"email": "a@example.com"}, format="json", **{HEADER: "t"})

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "challenge_unavailable"
    assert response["Retry-After"] == "1"
    assert mailoutbox == []


def test_a_secret_the_verifier_refuses_is_our_outage_not_the_customers(
    api, mailoutbox, challenge_on
):
    challenge_on.CHALLENGE_SECRET_KEY = ""
    response = api.post(REQUEST_URL, {"email": "a@example.com"}, format="json", **{HEADER: "t"})
    assert response.status_code == 503
    assert mailoutbox == []


def test_the_sandbox_verifier_speaks_siteverify(sandbox_server):
    url = f"{sandbox_server.url}/challenge/siteverify"
    token = solved("signin", hostname="localhost")
    ok = requests.post(url, data={"secret": "s", "response": token}, timeout=5).json()
    again = requests.post(url, json={"secret": "s", "response": token}, timeout=5).json()
    dummy = [
        requests.post(url, data={"secret": "s", "response": DUMMY_TOKEN}, timeout=5).json()
        for _ in range(2)
    ]
    failing = requests.post(
        url, data={"secret": ALWAYS_FAILS_SECRET, "response": "sandbox-pass.z"}, timeout=5
    ).json()
    empty = requests.post(url, data={}, timeout=5).json()

    assert ok == {
        "success": True,
        "error-codes": [],
        "hostname": "localhost",
        "action": "signin",
    }
    assert again == {"success": False, "error-codes": ["timeout-or-duplicate"]}
    assert [d["success"] for d in dummy] == [True, True]
    assert (dummy[0]["hostname"], dummy[0]["action"]) == ("example.com", "")  # as Cloudflare's
    assert failing == {"success": False, "error-codes": ["invalid-input-response"]}
    assert empty == {
        "success": False,
        "error-codes": ["missing-input-secret", "missing-input-response"],
    }


def test_the_pages_render_the_widget_when_on(client, challenge_on):
    event = make_event()
    pages = {
        "signin": client.get("/signin/"),
        "queue_join": client.get(f"/events/{event.id}/queue/"),
    }
    for action, page in pages.items():
        html = page.content.decode()
        assert page.status_code == 200
        assert (
            'class="cf-turnstile field" data-sitekey="1x00000000000000000000AA" '
            f'data-action="{action}"'
        ) in html
        assert f'src="{challenge_on.CHALLENGE_SCRIPT_URL}"' in html
    script = requests.get(challenge_on.CHALLENGE_SCRIPT_URL, timeout=5)
    assert script.status_code == 200
    assert "cf-turnstile-response" in script.text
    assert "data-action" in script.text and "location.hostname" in script.text
