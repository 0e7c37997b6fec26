"""The lock module (fairqueue/locks.py) against real Postgres and Redis:
bounded row-lock waits answered as busy, the advisory fallback of the task
lock while Redis is unreachable, renewal, and every beat task stopped by
Celery before its lock could run out."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from claims.models import Claim
from config.celery import _beat_schedule, app
from fairqueue import redis as app_redis
from fairqueue.errors import Busy
from fairqueue.locks import SKIPPED, pg_lock_timeout, redis_lock, single_flight, task_lock
from fairqueue.redis import get_redis, make_client
from payments.models import Payment
from tests.support.factories import bearer
from tests.support.payments import make_claim
from tests.support.races import Aside, wait_until_blocked

pytestmark = pytest.mark.django_db(transaction=True)


class RowHeld:
    """Another connection (a thread) holds ``model`` row ``pk`` locked until
    ``release()``."""

    def __init__(self, model, pk) -> None:
        self.locked, self.go = threading.Event(), threading.Event()

        def hold() -> None:
            with transaction.atomic():
                model.objects.select_for_update().get(pk=pk)
                self.locked.set()
                self.go.wait(30)

        self.aside = Aside(hold)
        assert self.locked.wait(10)

    def release(self) -> None:
        self.go.set()
        self.aside.finish()


def lock_timeout_setting() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        return cursor.fetchone()[0]


# --- pg_lock_timeout ----------------------------------------------------------------


def test_a_row_held_by_another_connection_is_busy_not_a_hang():
    claim = make_claim()
    held = RowHeld(Claim, claim.pk)
    try:
        with pytest.raises(Busy) as busy, transaction.atomic(), pg_lock_timeout(200):
            Claim.objects.select_for_update().get(pk=claim.pk)
    finally:
        held.release()
    assert (busy.value.status, busy.value.code, busy.value.retry_after) == (503, "busy", 1)


def test_the_api_answers_503_with_retry_after_and_writes_nothing(api, settings):
    settings.DB_LOCK_TIMEOUT_MS = 200
    claim = make_claim()
    held = RowHeld(Claim, claim.pk)
    try:
        response = api.post(
            f"/api/v1/claims/{claim.pk}/payments/", format="json", **bearer(claim.customer)
        )
    finally:
        held.release()
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert response.json()["error"]["code"] == "busy"
    assert Payment.objects.filter(claim=claim).count() == 0
    assert Claim.objects.get(pk=claim.pk).payment_in_flight is False


def test_a_lock_released_in_time_is_simply_waited_for():
    claim = make_claim()
    held = RowHeld(Claim, claim.pk)
    result = {}

    def wait_for_it() -> None:
        with transaction.atomic(), pg_lock_timeout(10_000):
            result["status"] = Claim.objects.select_for_update().get(pk=claim.pk).status

    waiter = Aside(wait_for_it)
    wait_until_blocked(1)
    held.release()
    waiter.finish()
    assert result == {"status": "CLAIMED"}


def test_the_limit_is_local_to_the_block():
    with transaction.atomic():
        before = lock_timeout_setting()
        with pg_lock_timeout(1234):
            assert lock_timeout_setting() == "1234ms"
        assert lock_timeout_setting() == before


def test_pg_lock_timeout_refuses_to_run_outside_a_transaction():
    with pytest.raises(RuntimeError), pg_lock_timeout():
        pass


# --- task_lock: Redis, and the advisory fallback ------------------------------------


@pytest.fixture
def redis_unreachable(monkeypatch, closed_port):
    """The app's Redis client points at a port where nothing listens."""
    monkeypatch.setattr(app_redis, "_client", make_client(f"redis://127.0.0.1:{closed_port}/0"))


def hold_task_lock(name: str) -> tuple[Aside, threading.Event, dict]:
    """Another worker (a thread, its own connection) holds task_lock(name)."""
    inside, leave, seen = threading.Event(), threading.Event(), {}

    def run() -> None:
        with task_lock(name, ttl_s=30) as held:
            seen["held"] = held
            inside.set()
            leave.wait(30)

    aside = Aside(run)
    assert inside.wait(10)
    return aside, leave, seen


def test_with_redis_unreachable_the_advisory_lock_still_excludes_a_second_run(
    redis_unreachable,
):
    first, leave, seen = hold_task_lock("nightly")
    assert seen["held"] is not None and not seen["held"].in_redis
    try:
        with task_lock("nightly", ttl_s=30) as second:
            assert second is None
    finally:
        leave.set()
        first.finish()
    with task_lock("nightly", ttl_s=30) as third:
        assert third is not None and not third.in_redis
    with task_lock("other", ttl_s=30) as unrelated:
        assert unrelated is not None


def test_single_flight_skips_while_another_worker_runs_on_the_fallback(redis_unreachable):
    runs = []

    @single_flight("report", ttl_s=30)
    def report() -> str:
        runs.append(1)
        return "ran"

    first, leave, _ = hold_task_lock("report")
    try:
        assert report() == SKIPPED
    finally:
        leave.set()
        first.finish()
    assert report() == "ran"
    assert runs == [1]


@pytest.mark.slow
def test_a_run_on_the_fallback_and_one_after_redis_came_back_do_not_overlap(own_redis):
    own_redis.stop()
    first, leave, seen = hold_task_lock("sweep")
    assert not seen["held"].in_redis
    own_redis.start()
    try:
        with task_lock("sweep", ttl_s=30) as second:
            assert second is None  # it got the Redis lock, not the advisory one
    finally:
        leave.set()
        first.finish()
    assert get_redis().exists("fq:task-lock:sweep") == 0  # and let the Redis lock go
    with task_lock("sweep", ttl_s=30) as third:
        assert third is not None and third.in_redis


def test_with_redis_up_the_redis_lock_excludes_a_second_run():
    first, leave, seen = hold_task_lock("tidy")
    assert seen["held"].in_redis
    try:
        with task_lock("tidy", ttl_s=30) as second:
            assert second is None
    finally:
        leave.set()
        first.finish()


# --- renewal ------------------------------------------------------------------------


def test_renew_gives_a_full_ttl_again_and_says_when_the_lock_was_lost():
    with redis_lock("fq:{t}:renew", ttl_s=30) as held:
        assert held is not None and held.in_redis
        get_redis().pexpire("fq:{t}:renew", 100)
        assert held.renew() is True
        assert get_redis().pttl("fq:{t}:renew") > 20_000
        # It expired and someone else took it: not ours to renew.
        get_redis().set("fq:{t}:renew", "someone else")
        assert held.renew() is False
    assert get_redis().get("fq:{t}:renew") == "someone else"  # and not ours to release


def test_a_lock_held_elsewhere_is_waited_for_then_given_up():
    other = get_redis().lock("fq:{t}:busy", timeout=30, thread_local=False)
    assert other.acquire(blocking=False)
    with redis_lock("fq:{t}:busy", ttl_s=30, wait_s=0.3) as held:
        assert held is None
    other.release()
    with redis_lock("fq:{t}:busy", ttl_s=30, wait_s=0.3) as held:
        assert held is not None and held.in_redis


def test_redis_lock_with_redis_unreachable_yields_a_lock_that_guards_nothing(redis_unreachable):
    with redis_lock("fq:{t}:x", ttl_s=30) as held:
        assert held is not None and not held.in_redis
        assert held.renew() is True


# --- Celery time limits below each lock's lifetime ---------------------------------


def test_every_beat_task_is_single_flight_and_stopped_before_its_lock_runs_out():
    app.loader.import_default_modules()
    schedule = _beat_schedule()
    assert "sales-end" in schedule
    for entry_name, entry in schedule.items():
        task = app.tasks[entry["task"]]
        ttl = getattr(task.run, "lock_ttl_s", None)
        assert ttl is not None, f"{entry_name} is not single-flight"
        assert task.soft_time_limit < task.time_limit < ttl, entry_name
