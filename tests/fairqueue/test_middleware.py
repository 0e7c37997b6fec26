"""The cookie middleware runs for pages and the admin and is skipped for /api/."""

import pytest
from asgiref.sync import async_to_sync
from django.http import HttpResponse
from django.test import AsyncClient, Client

from fairqueue.middleware import (
    PagesAuthenticationMiddleware,
    PagesMessageMiddleware,
    PagesSessionMiddleware,
)
from tests.support.factories import CustomerFactory, EventFactory, UserFactory, bearer

pytestmark = pytest.mark.django_db


def test_the_admin_still_refuses_a_post_without_its_csrf_token():
    client = Client(enforce_csrf_checks=True)
    response = client.post("/admin/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403


def test_the_admin_signs_in_with_session_and_csrf():
    UserFactory(username="staff", is_superuser=True)
    client = Client(enforce_csrf_checks=True)
    page = client.get("/admin/login/")
    token = page.cookies["csrftoken"].value
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": "staff", "password": "pw", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert "sessionid" in response.cookies
    assert client.get("/admin/").status_code == 200


def test_an_api_call_gets_no_cookie_and_no_cookie_vary(api):
    event = EventFactory()
    response = api.get(f"/api/v1/events/{event.id}/")
    assert response.status_code == 200
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")


def test_a_session_cookie_does_not_authenticate_an_api_call():
    """A signed-in admin user's browser session is not a customer: the API
    only knows bearer tokens."""
    staff = UserFactory(username="staff", is_superuser=True)
    client = Client()
    client.force_login(staff)  # (django-axes wants a request for a password login)
    event = EventFactory()
    response = client.post(f"/api/v1/events/{event.id}/queue/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_an_api_post_needs_no_csrf_token():
    event = EventFactory()
    client = Client(enforce_csrf_checks=True)
    response = client.post(f"/api/v1/events/{event.id}/queue/", **bearer(CustomerFactory()))
    assert response.status_code == 201


def test_the_api_docs_page_renders():
    response = Client().get("/api/docs/")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("path", "runs"), [("/api/v1/events/", False), ("/admin/", True), ("/events/", True)]
)
def test_the_cookie_middleware_runs_for_pages_only(rf, path, runs):
    seen = []
    view = PagesMessageMiddleware(lambda request: seen.append(request) or HttpResponse())
    chain = PagesSessionMiddleware(PagesAuthenticationMiddleware(view))
    chain(rf.get(path))
    (request,) = seen
    assert hasattr(request, "session") is runs
    assert hasattr(request, "user") is runs
    assert hasattr(request, "_messages") is runs


@pytest.mark.django_db(transaction=True)
def test_pages_and_api_answer_under_asgi_too():
    """daphne runs the same middleware in async mode."""
    event = EventFactory()
    client = AsyncClient()
    api = async_to_sync(client.get)(f"/api/v1/events/{event.id}/")
    login = async_to_sync(client.get)("/admin/login/")
    assert api.status_code == 200
    assert not api.cookies
    assert login.status_code == 200
    assert "csrftoken" in login.cookies
