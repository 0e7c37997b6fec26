"""The queue's REST interface: join, leave, position."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.request import Request

from bench.roundtrips import RoundTrips
from claims.models import Claim
from customers.revocation import (
    auth_state_store,
    customer_token_revoke,
    customer_tokens_revoke_all,
)
from customers.tokens import customer_token_issue, customer_token_verify
from events.models import Event
from queueing import selectors, services
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.store import queue_store
from queueing.tokens import admission_token_read
from tests.support.factories import CustomerFactory, EventFactory, bearer
from tests.support.sales import admit, join, make_event, past

pytestmark = pytest.mark.django_db


def url(event_id, suffix=""):
    return f"/api/v1/events/{event_id}/queue/{suffix}"


def post_join(api, event, customer):
    return api.post(url(event.id), **bearer(customer))


# --- join ---------------------------------------------------------------------


def test_join_answers_201_with_place_and_eta(api, event):
    customer = CustomerFactory()
    response = post_join(api, event, customer)
    assert response.status_code == 201
    body = response.json()
    entry = QueueEntry.objects.get(event=event, customer=customer)
    assert body["queue_entry_id"] == str(entry.id)
    assert body["status"] == "WAITING"
    assert body["position"] == 1
    # No tick measured yet: a full batch (500) per 5 s interval -> 1 s.
    assert body["eta_seconds"] == 1
    assert entry.status == QueueStatus.WAITING
    assert entry.prequeue is False
    r = queue_store()
    assert r.r.zscore(r.waiting_key(event.id), str(customer.id)) == entry.score


def test_join_positions_follow_join_order(api, event):
    positions = [post_join(api, event, CustomerFactory()).json()["position"] for _ in range(3)]
    assert positions == [1, 2, 3]


@pytest.mark.django_db(transaction=True)
def test_join_hot_path_is_one_statement(api, event, monkeypatch, django_assert_num_queries):
    """Autocommit, as under granian: no BEGIN/COMMIT, no event read while the
    event is cached, no customer read (the token says who), one INSERT."""
    from queueing import selectors
    from queueing.selectors import event_snapshot

    monkeypatch.setattr(selectors, "EVENT_CACHE_SECONDS", 60)
    headers = bearer(CustomerFactory())
    event_snapshot(event_id=event.id)  # a warm cache, as on a busy server
    services.admission_tick_event(event_id=event.id)  # which has ticked: Redis holds the line
    # The customer's sign-out state, cached in Redis by their first request
    # (read from Postgres at most every AUTH_STATE_TTL, customers/revocation.py).
    assert api.get("/api/v1/auth/me/", **headers).status_code == 200
    with django_assert_num_queries(1) as ctx:
        response = api.post(url(event.id), **headers)
    assert response.status_code == 201
    assert ctx.captured_queries[0]["sql"].lstrip().startswith("INSERT INTO")


def test_join_twice_is_409_already_in_queue_and_writes_nothing(api, event):
    customer = CustomerFactory()
    assert post_join(api, event, customer).status_code == 201
    response = post_join(api, event, customer)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "already_in_queue"
    assert QueueEntry.objects.filter(customer=customer).count() == 1
    assert queue_store().r.zcard(queue_store().waiting_key(event.id)) == 1


def test_join_with_a_claim_is_409_already_claimed(api, event):
    customer = CustomerFactory()
    tier = event.tiers.get()
    held = Claim.objects.create(
        event=event,
        tier=tier,
        customer=customer,
        quantity=1,
        amount=tier.price,
        currency="NGN",
        expires_at=timezone.now() + timedelta(minutes=10),
        status="CONFIRMED",
    )
    response = post_join(api, event, customer)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "already_claimed"
    assert error["details"] == {"claim_id": str(held.id), "claim_status": "CONFIRMED"}
    assert not QueueEntry.objects.filter(customer=customer).exists()
    assert queue_store().r.zcard(queue_store().waiting_key(event.id)) == 0


def test_join_after_a_released_claim_is_allowed(api, event):
    customer = CustomerFactory()
    tier = event.tiers.get()
    Claim.objects.create(
        event=event,
        tier=tier,
        customer=customer,
        quantity=1,
        amount=tier.price,
        currency="NGN",
        expires_at=timezone.now(),
        status="RELEASED",
    )
    assert post_join(api, event, customer).status_code == 201


def test_join_again_after_leaving_is_allowed(api, event):
    customer = CustomerFactory()
    assert post_join(api, event, customer).status_code == 201
    assert api.delete(url(event.id), **bearer(customer)).status_code == 204
    assert post_join(api, event, customer).status_code == 201
    assert QueueEntry.objects.filter(customer=customer, status="WAITING").count() == 1
    assert QueueEntry.objects.filter(customer=customer, status="ABANDONED").count() == 1


def test_join_unknown_event_is_404(api):
    response = post_join(api, type("E", (), {"id": uuid.uuid4()}), CustomerFactory())
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "event_not_found"
    assert QueueEntry.objects.count() == 0


def test_join_without_a_token_is_401(api, event):
    response = api.post(url(event.id))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    response = api.post(url(event.id), HTTP_AUTHORIZATION="Bearer nonsense")
    assert response.status_code == 401
    assert QueueEntry.objects.count() == 0


@pytest.mark.django_db(transaction=True)  # autocommit, as the API runs: no savepoint
def test_a_join_is_one_insert_and_one_redis_round_trip_and_caches_the_sign_out_state(
    api, redis_backend, monkeypatch
):
    """The join's INSERT checks the sign-out state itself (Postgres) and
    returns it; the join's one Redis script caches it with the add (a
    cluster holds the state on another node: not cached there)."""
    monkeypatch.setattr(selectors, "EVENT_CACHE_SECONDS", 60)  # as in production: from the cache
    event = make_event(tickets=1)
    join(event)
    services.admission_tick_event(event_id=event.id)  # the line marker, the counter
    customer = CustomerFactory()
    token = customer_token_issue(customer_id=customer.id, email=customer.email)[0]
    jti = customer_token_verify(token).jti

    with RoundTrips() as counted:
        response = api.post(url(event.id), HTTP_AUTHORIZATION=f"Bearer {token}")

    assert response.status_code == 201
    assert response.json()["position"] == 1
    assert (counted.redis, counted.postgres) == (1, 1)
    cached = auth_state_store().read(customer_id=customer.id, jti=jti)
    assert cached == ((0, False) if redis_backend == "redis" else None)


@pytest.mark.parametrize("sign_out", ["this token", "everywhere"])
def test_a_join_is_refused_for_a_token_signed_out_in_postgres_whatever_redis_says(api, sign_out):
    """Postgres is the truth: a sign-out whose Redis write was lost (its
    on-commit write never runs here) still refuses the join. And a
    signed-out token hears 401 before any other refusal (an event not on
    sale, one that does not exist)."""
    event = make_event()
    customer = CustomerFactory()
    token = customer_token_issue(customer_id=customer.id, email=customer.email)[0]
    principal = customer_token_verify(token)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert api.get("/api/v1/auth/me/", **headers).status_code == 200  # the state cached
    if sign_out == "everywhere":
        version = customer_tokens_revoke_all(customer_id=customer.id)
    else:
        customer_token_revoke(principal=principal)

    refused = api.post(url(event.id), **headers)

    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "token_revoked")
    assert not QueueEntry.objects.filter(customer=customer).exists()
    store = queue_store()
    assert store.r.zscore(store.waiting_key(event.id), str(customer.id)) is None
    if sign_out == "everywhere":  # what the on-commit writes would have cached
        auth_state_store().version_raise(customer_id=customer.id, version=version)
    else:
        auth_state_store().revoke(customer_id=customer.id, jti=principal.jti)
    for elsewhere in (make_event(status="DRAFT").id, uuid.uuid4()):
        refused = api.post(url(elsewhere), **headers)
        assert (refused.status_code, refused.json()["error"]["code"]) == (401, "token_revoked")


@pytest.mark.parametrize(
    "fields",
    [
        {"status": "DRAFT"},
        {"status": "ENDED"},
        {"sale_start": timezone.now() + timedelta(hours=1)},  # no pre-queue
        {
            "sale_start": timezone.now() + timedelta(hours=2),
            "prequeue_opens_at": timezone.now() + timedelta(hours=1),  # not open yet
        },
        {"sale_start": past(7200), "sale_end": past(60)},  # over
    ],
    ids=["draft", "ended", "before-sale", "before-prequeue", "after-sale"],
)
def test_join_outside_the_sale_is_409_event_not_on_sale(api, fields):
    event = make_event(**fields)
    response = post_join(api, event, CustomerFactory())
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "event_not_on_sale"
    assert QueueEntry.objects.count() == 0


def test_join_during_the_prequeue_is_marked_and_eta_counts_the_wait(api):
    event = make_event(
        sale_start=timezone.now() + timedelta(minutes=10),
        prequeue_opens_at=timezone.now() - timedelta(minutes=5),
    )
    customer = CustomerFactory()
    response = post_join(api, event, customer)
    assert response.status_code == 201
    assert QueueEntry.objects.get(customer=customer).prequeue is True
    assert 599 <= response.json()["eta_seconds"] <= 601
    # Not before the draw at the start, and at most a tick after it (first in line).
    assert 600 <= response.json()["poll_after_seconds"] <= 606


def test_join_of_a_paused_or_sold_out_event_is_allowed(api):
    for status in ("PAUSED", "SOLD_OUT"):
        event = make_event(status=status)
        assert post_join(api, event, CustomerFactory()).status_code == 201


def test_join_when_redis_is_down_still_answers_from_postgres(api, event, dead_redis):
    join(event)  # already someone ahead (in Postgres)
    response = post_join(api, event, CustomerFactory())
    assert response.status_code == 201
    assert response.json()["position"] == 2
    assert QueueEntry.objects.filter(event=event, status="WAITING").count() == 2


# --- leave --------------------------------------------------------------------


def test_leave_abandons_a_waiting_place(api, event):
    customer, _ = join(event)
    behind, _ = join(event)
    response = api.delete(url(event.id), **bearer(customer))
    assert response.status_code == 204
    assert QueueEntry.objects.get(customer=customer).status == QueueStatus.ABANDONED
    assert services.queue_position(event_id=event.id, customer_id=behind.id).position == 1


def test_leave_when_admitted_is_409_and_changes_nothing(api, event):
    customer, entry, _ = admit(event)
    response = api.delete(url(event.id), **bearer(customer))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_transition"
    entry.refresh_from_db()
    assert entry.status == QueueStatus.ADMITTED


def test_leave_when_not_in_queue_is_404(api, event):
    response = api.delete(url(event.id), **bearer(CustomerFactory()))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_in_queue"


# --- position -----------------------------------------------------------------


def test_position_of_a_waiting_customer(api, event):
    join(event)
    customer, _ = join(event)
    response = api.get(url(event.id, "position/"), **bearer(customer))
    assert response.status_code == 200
    entry = QueueEntry.objects.get(event=event, customer=customer)
    assert response.json() == {
        "status": "WAITING",
        "position": 2,
        "eta_seconds": 1,
        "served": 0,  # Postgres' count: no tick has set Redis' counter yet
        "poll_after_seconds": 5,  # the next tick may admit it
        "score": entry.score,  # its number for the public line state
        "epoch": 0,
        "draw_key": None,  # no pre-queue: no draw
    }


def test_a_position_read_checks_the_sign_out_in_the_same_round_trip(
    api, redis_backend, monkeypatch
):
    """The sign-out state, the customer's read bucket and the place in one
    Redis round trip (a cluster holds them on other nodes: one after the
    other), no Postgres."""
    monkeypatch.setattr(selectors, "EVENT_CACHE_SECONDS", 60)  # as in production: from the cache
    event = make_event(tickets=1)
    join(event)
    customer, _ = join(event)
    services.admission_tick_event(event_id=event.id)  # the line marker, the counter
    token = customer_token_issue(customer_id=customer.id, email=customer.email)[0]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert api.get(url(event.id, "position/"), **headers).status_code == 200  # state cached

    with RoundTrips() as counted:
        response = api.get(url(event.id, "position/"), **headers)

    assert response.status_code == 200
    assert response.json()["position"] == 1
    assert (counted.redis, counted.postgres) == ((1, 0) if redis_backend == "redis" else (3, 0))


def test_a_position_read_wraps_no_drf_request_and_refuses_in_the_one_envelope(
    api, event, monkeypatch
):
    """The read with a token is answered without DRF's request wrapping;
    what it refuses (not in line, a malformed header, a bad signature) is
    the envelope DRF's handler makes, with the headers DRF's way gives."""
    customer, _ = join(event)
    stranger = CustomerFactory()
    wrapped: list[str] = []
    init = Request.__init__

    def counted(self, request, *args, **kwargs):
        wrapped.append(request.method)
        init(self, request, *args, **kwargs)

    monkeypatch.setattr(Request, "__init__", counted)
    position = url(event.id, "position/")

    read = api.get(position, **bearer(customer))
    read_wrapped, wrapped[:] = list(wrapped), []
    refused = {
        "not_in_queue": api.get(position, **bearer(stranger)),
        "not_authenticated": api.get(position, HTTP_AUTHORIZATION="Bearer a b"),
        "invalid_token": api.get(position, HTTP_AUTHORIZATION="Bearer a.b.c"),
    }
    head = api.head(position, **bearer(customer))

    assert read.status_code == 200 and read.json()["position"] == 1
    assert read_wrapped == []
    assert read["Allow"] == "GET, HEAD, OPTIONS" and read["Cache-Control"] == "private, no-store"
    for code, answer in refused.items():
        assert answer.status_code in (401, 404), code
        assert answer.json()["error"]["code"] == code
        assert answer["Allow"] == "GET, HEAD, OPTIONS"
    assert head.status_code == 200 and head["Content-Length"] == read["Content-Length"]
    assert wrapped == ["GET"] * 3 + ["HEAD"]  # a refusal and HEAD: DRF's way


def test_a_signed_out_token_reads_no_place(api, event):
    customer, _ = join(event)
    token = customer_token_issue(customer_id=customer.id, email=customer.email)[0]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert api.get(url(event.id, "position/"), **headers).status_code == 200
    customer_token_revoke(principal=customer_token_verify(token))
    auth_state_store().revoke(customer_id=customer.id, jti=customer_token_verify(token).jti)

    refused = api.get(url(event.id, "position/"), **headers)

    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "token_revoked"
    assert "position" not in refused.json()
    # Redis wiped: Postgres still says signed out.
    queue_store().r.flushdb()
    again = api.get(url(event.id, "position/"), **headers)
    assert (again.status_code, again.json()["error"]["code"]) == (401, "token_revoked")


def test_position_of_an_admitted_customer_carries_a_fresh_token(api, event):
    customer, entry, _ = admit(event)
    response = api.get(url(event.id, "position/"), **bearer(customer))
    body = response.json()
    assert body["status"] == "ADMITTED"
    assert body["position"] is None
    admission = admission_token_read(
        token=body["admission_token"], event_id=event.id, customer_id=customer.id
    )
    assert admission.queue_entry_id == entry.id
    assert admission.expires_at == entry.admission_expires_at
    assert body["admission_expires_at"] == entry.admission_expires_at.isoformat()


def test_position_after_the_window_lapsed_says_expired_without_token(api, event):
    customer, entry, _ = admit(event)
    QueueEntry.objects.filter(pk=entry.pk).update(admission_expires_at=past())
    services.admissions_expire(event_id=event.id)
    body = api.get(url(event.id, "position/"), **bearer(customer)).json()
    assert body["status"] == "EXPIRED"
    assert "admission_token" not in body


def test_position_eta_uses_the_measured_rate(api):
    event = make_event(tickets=100, admission_batch_size=3)
    for _ in range(3):
        join(event)
    services.admission_tick_event(event_id=event.id)  # 3 admitted in one 5 s tick
    customer = CustomerFactory()
    for _ in range(5):
        join(event)
    join(event, customer)
    body = api.get(url(event.id, "position/"), **bearer(customer)).json()
    assert body["position"] == 6
    assert body["served"] == 3
    # measured: 3 per 5 s = 0.6/s -> 6 / 0.6 = 10 s
    assert body["eta_seconds"] == 10
    assert body["poll_after_seconds"] == 5  # near the head: every tick


def test_far_back_in_line_the_poll_hint_is_the_eta_and_an_admitted_customer_gets_none(api):
    event = make_event(tickets=100, admission_batch_size=2)
    for _ in range(3):
        join(event)
    services.admission_tick_event(event_id=event.id)  # 2 per 5 s: 0.4/s
    admitted = QueueEntry.objects.filter(event=event, status=QueueStatus.ADMITTED).first()
    customers = [CustomerFactory() for _ in range(60)]
    for customer in customers:
        join(event, customer)
    last = api.get(url(event.id, "position/"), **bearer(customers[-1])).json()
    assert last["position"] == 61
    assert last["eta_seconds"] == 153  # 61 / 0.4 per s
    assert last["poll_after_seconds"] == 120  # at the ETA, but at most two minutes apart
    head = api.get(url(event.id, "position/"), **bearer(customers[0])).json()
    assert head["poll_after_seconds"] == 5
    body = api.get(url(event.id, "position/"), **bearer(admitted.customer)).json()
    assert body["status"] == "ADMITTED"
    assert body["poll_after_seconds"] is None


def test_position_falls_back_to_postgres_when_redis_is_down(api, event, dead_redis):
    join(event)
    join(event)
    customer, _ = join(event)
    response = api.get(url(event.id, "position/"), **bearer(customer))
    assert response.status_code == 200
    assert response.json()["position"] == 3


def test_position_falls_back_to_postgres_when_the_key_is_missing(api, event, redis_clean):
    join(event)
    customer, _ = join(event)
    redis_clean.flushdb()
    assert api.get(url(event.id, "position/"), **bearer(customer)).json()["position"] == 2


def test_position_when_never_queued_is_404(api, event):
    response = api.get(url(event.id, "position/"), **bearer(CustomerFactory()))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_in_queue"


def test_position_of_an_unknown_event_is_404(api):
    response = api.get(url(uuid.uuid4(), "position/"), **bearer(CustomerFactory()))
    assert response.status_code == 404


def test_event_detail_shows_the_queue_length(api, event):
    for _ in range(4):
        join(event)
    assert api.get(f"/api/v1/events/{event.id}/").json()["queue_length"] == 4


def test_event_cache_keeps_the_hot_path_off_the_event_row(
    monkeypatch, event, django_assert_num_queries
):
    from queueing import selectors
    from queueing.selectors import event_snapshot, event_snapshot_forget

    monkeypatch.setattr(selectors, "EVENT_CACHE_SECONDS", 60)
    event_snapshot_forget()
    assert event_snapshot(event_id=event.id).status == "ACTIVE"
    Event.objects.filter(pk=event.pk).update(status="ENDED")
    with django_assert_num_queries(0):
        assert event_snapshot(event_id=event.id).status == "ACTIVE"
    event_snapshot_forget(event.id)
    assert event_snapshot(event_id=event.id).status == "ENDED"
    assert EventFactory  # the factory module stays imported for the parametrized cases


@pytest.mark.django_db(transaction=True)
def test_join_with_a_token_of_a_deleted_customer_is_401(api, event):
    """Autocommit, as in production: the (deferred) foreign key fails at the
    statement's commit and is answered as a bad token, not a 500."""
    customer = CustomerFactory()
    headers = bearer(customer)
    customer.delete()
    response = api.post(url(event.id), **headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_token"
    assert QueueEntry.objects.count() == 0
