"""Customer tokens can be signed out: logout ends the current token (later
use: 401), "everywhere" ends every token the customer holds, and the check
costs no database read per request while Redis has the state."""

from __future__ import annotations

import pytest
import redis

from customers import revocation
from customers.models import Customer, RevokedToken
from customers.revocation import AuthStateStore, auth_state_store
from customers.tokens import customer_token_issue
from fairqueue.redis import get_redis
from tests.support.factories import CustomerFactory

pytestmark = pytest.mark.django_db

ME = "/api/v1/auth/me/"
LOGOUT = "/api/v1/auth/logout/"


def token_for(customer: Customer) -> str:
    customer.refresh_from_db()
    return customer_token_issue(
        customer_id=customer.id, email=customer.email, version=customer.token_version
    )[0]


def auth(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_logout_revokes_the_current_token_only(api, django_capture_on_commit_callbacks):
    customer = CustomerFactory()
    phone, laptop = token_for(customer), token_for(customer)
    assert api.get(ME, **auth(phone)).status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        out = api.post(LOGOUT, **auth(phone))

    assert out.status_code == 204
    refused = api.get(ME, **auth(phone))
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "token_revoked"
    assert api.get(ME, **auth(laptop)).status_code == 200
    assert RevokedToken.objects.filter(customer=customer).count() == 1


def test_a_revoked_token_stays_revoked_after_redis_is_wiped(api):
    customer = CustomerFactory()
    token = token_for(customer)
    assert api.post(LOGOUT, **auth(token)).status_code == 204
    get_redis().flushdb()

    refused = api.get(ME, **auth(token))

    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "token_revoked"


def test_sign_out_everywhere_ends_every_older_token(api, django_capture_on_commit_callbacks):
    customer = CustomerFactory()
    tokens = [token_for(customer) for _ in range(3)]
    assert all(api.get(ME, **auth(t)).status_code == 200 for t in tokens)  # cached as valid

    with django_capture_on_commit_callbacks(execute=True):
        out = api.post(LOGOUT, {"everywhere": True}, format="json", **auth(tokens[0]))

    assert out.status_code == 204
    assert [api.get(ME, **auth(t)).status_code for t in tokens] == [401, 401, 401]
    customer.refresh_from_db()
    assert customer.token_version == 1
    fresh = token_for(customer)  # a new sign-in carries the new version
    assert api.get(ME, **auth(fresh)).status_code == 200


def test_a_slow_cache_fill_cannot_undo_a_sign_out_everywhere(api):
    """The cache is filled from a Postgres read; a fill that read the old
    version and lands after the bump must not bring the old version back."""
    customer = CustomerFactory()
    old = token_for(customer)
    store = auth_state_store()
    revocation.customer_tokens_revoke_all(customer_id=customer.id)
    store.version_raise(customer_id=customer.id, version=1)  # the bump's own write

    store.load(customer_id=customer.id, version=0, revoked=[])  # the late, stale fill

    assert api.get(ME, **auth(old)).status_code == 401


def test_the_hot_path_reads_no_database_while_redis_has_the_state(api, django_assert_num_queries):
    customer = CustomerFactory()
    token = token_for(customer)
    with django_assert_num_queries(1):  # first request: version + revoked tokens, cached
        assert api.get(ME, **auth(token)).status_code == 200
    with django_assert_num_queries(0):
        assert api.get(ME, **auth(token)).status_code == 200


def test_with_redis_down_sign_out_still_holds_from_postgres(api, monkeypatch, closed_port):
    customer = CustomerFactory()
    kept, signed_out = token_for(customer), token_for(customer)
    assert api.post(LOGOUT, **auth(signed_out)).status_code == 204
    dead = redis.Redis.from_url(f"redis://127.0.0.1:{closed_port}/0", socket_connect_timeout=0.2)
    monkeypatch.setattr(revocation, "_store", AuthStateStore(client=dead))

    assert api.get(ME, **auth(kept)).status_code == 200
    assert api.get(ME, **auth(signed_out)).status_code == 401


def test_logout_needs_a_valid_token_and_refuses_unknown_fields(api):
    customer = CustomerFactory()
    token = token_for(customer)

    anonymous = api.post(LOGOUT)
    unknown = api.post(LOGOUT, {"everywhere": True, "now": 1}, format="json", **auth(token))

    assert anonymous.status_code == 401
    assert unknown.status_code == 422
    assert RevokedToken.objects.count() == 0
    customer.refresh_from_db()
    assert customer.token_version == 0


def test_a_token_of_a_customer_that_no_longer_exists_is_refused(api):
    customer = CustomerFactory()
    token = token_for(customer)
    customer.delete()

    refused = api.get(ME, **auth(token))

    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_token"
