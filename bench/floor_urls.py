"""The framework's floor, for bench/queue_bench.py: plain Django views (no DRF,
no sign-in, no checks) doing only the I/O of a join and of a position read,
mounted beside the real API and served by the same web server, middleware and
lanes. What the real join and read cost above these is ours to cut; what these
cost is the stack's. The customer is the bearer "token" itself (a customer id):
nothing here is authenticated, so this urlconf exists only in the benchmark's
server (bench/floor_settings.py), never in the product's.
"""

from __future__ import annotations

import time
import uuid

from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from queueing.models import QueueEntry
from queueing.store import QueueStore, queue_store

# The bare-client baseline's statement (bench/queue_bench.py), one row per join.
_INSERT = (
    f"INSERT INTO {QueueEntry._meta.db_table} "  # noqa: S608 - a model's table name
    "(id, event_id, customer_id, status, score, prequeue, joined_at) "
    "VALUES (%s, %s, %s, 'WAITING', %s, false, now())"
)


def _customer(request: HttpRequest) -> str:
    return request.headers.get("Authorization", "").removeprefix("Bearer ")


def _json(body: bytes, status: int = 200) -> HttpResponse:
    return HttpResponse(body, status=status, content_type="application/json")


def empty(request: HttpRequest, event_id: uuid.UUID) -> HttpResponse:
    """Django, our middleware and the lanes, no I/O."""
    return _json(b'{"ok":true}')


def join(request: HttpRequest, event_id: uuid.UUID) -> HttpResponse:
    """A join's writes and nothing else: the baseline's INSERT + ZADD."""
    customer, score = _customer(request), time.time_ns() // 1000
    with connection.cursor() as cursor:
        cursor.execute(_INSERT, [uuid.uuid4(), event_id, customer, score])
    queue_store().r.zadd(QueueStore.waiting_key(event_id), {customer: score})
    return _json(b'{"status":"WAITING"}', status=201)


def position(request: HttpRequest, event_id: uuid.UUID) -> HttpResponse:
    """A position read's one Redis round trip (ZRANK) and nothing else."""
    rank = queue_store().r.zrank(QueueStore.waiting_key(event_id), _customer(request))
    if rank is None:
        return _json(b'{"error":"not_in_queue"}', status=404)
    return _json(b'{"position":%d}' % (rank + 1))


urlpatterns = [
    path("api/v1/floor/<uuid:event_id>/empty/", empty),
    path("api/v1/floor/<uuid:event_id>/join/", join),
    path("api/v1/floor/<uuid:event_id>/position/", position),
    path("", include("config.urls")),
]
