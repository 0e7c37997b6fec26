"""A Redis outage must not burn anyone's place. Redis is
only a performance layer: with it stopped (a real redis-server, killed and
started again empty), claims go through the Postgres guard alone, the beat
tasks run (single flight on Postgres advisory locks), and admission time the
outage took from a customer is given back to their window."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from claims import tasks as claims_tasks
from claims.models import Claim
from claims.services import claim_create
from events import tasks as events_tasks
from events.models import Event
from fairqueue.errors import AppError
from inventory.models import Ticket
from queueing import services
from queueing import tasks as queueing_tasks
from queueing.models import QueueEntry
from tests.support.races import race
from tests.support.sales import (
    admit_directly,
    claim_one,
    counter,
    expire,
    join,
    make_customers,
    make_event,
    on_sale,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def claim_answer(tier, buyer, *, retries: int = 100):
    """A well-behaved client: 503 busy (tickets held by claims still in
    flight) means "retry shortly"."""
    for _ in range(retries):
        try:
            return claim_one(tier, buyer)
        except AppError as exc:
            if exc.code != "busy":
                return exc.code
            time.sleep(0.02)
    return "still_busy"


def outcome(results) -> Counter:
    return Counter(r if isinstance(r, str) else type(r).__name__ for r in results)


def test_claims_go_through_postgres_alone_while_redis_is_stopped(own_redis):
    tier = on_sale(tickets=5)
    buyers = admit_directly(tier.event, make_customers(12))
    own_redis.stop()
    results = race(lambda b: claim_answer(tier, b), buyers)
    # Slower, still exact: five claims, everyone else a final "sold out".
    assert outcome(results) == {"Claim": 5, "sold_out": 7}
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 0
    assert Claim.objects.filter(tier=tier).values("customer").distinct().count() == 5
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"
    # Redis comes back empty: the counters come back to Postgres truth.
    own_redis.start()
    events_tasks.inventory_reconcile()
    assert counter(tier) == 0


def test_beat_tasks_run_while_redis_is_stopped(own_redis):
    tier = on_sale(tickets=3)
    lapsed, *others = admit_directly(tier.event, make_customers(3))
    claim = claim_one(tier, lapsed)
    expire(claim)
    drifted = on_sale(tickets=1)
    Event.objects.filter(pk=drifted.event_id).update(status="SOLD_OUT")  # with a free ticket
    event = make_event(tickets=2)
    customer, _ = join(event)
    own_redis.stop()
    assert claims_tasks.claims_expire() == {"released": 1}
    assert Claim.objects.get(pk=claim.pk).status == "RELEASED"
    report = events_tasks.inventory_reconcile()
    # The counters wait for Redis; the sale status follows Postgres meanwhile.
    assert report["back_on_sale"] == [str(drifted.event_id)]
    assert Event.objects.get(pk=drifted.event_id).status == "ACTIVE"
    assert queueing_tasks.admission_tick() == 1
    assert QueueEntry.objects.get(event=event, customer=customer).status == "ADMITTED"
    assert queueing_tasks.queue_reconcile() == 0  # nothing it can repair without Redis
    # The released ticket is back on sale, through Postgres alone.
    assert claim_one(tier, others[0]).status == "CLAIMED"


def test_admission_time_lost_to_a_redis_outage_is_given_back(own_redis):
    event = make_event(tickets=5, admission_window_seconds=3)
    tier = event.tiers.get()
    (first, _), (second, _) = join(event), join(event)
    assert services.admission_tick_event(event_id=event.id).admitted == 2
    tokens = {
        c.id: services.queue_position(event_id=event.id, customer_id=c.id).admission_token
        for c in (first, second)
    }
    own_redis.stop()
    # During the outage: the first customer claims, through Postgres.
    claim = claim_create(
        event_id=event.id,
        customer_id=first.id,
        admission_token=tokens[first.id],
        tier_id=tier.id,
        quantity=1,
    )
    assert claim.status == "CLAIMED"
    services.admission_tick_event(event_id=event.id)  # the tick notices Redis is gone
    time.sleep(3.5)  # the second customer's window would have lapsed meanwhile
    # Their place is kept while the outage lasts ...
    during = services.queue_position(event_id=event.id, customer_id=second.id)
    assert during.status == "ADMITTED" and during.admission_token
    own_redis.start()
    services.admission_tick_event(event_id=event.id)
    # ... and after it they still have the time the outage took.
    entry = QueueEntry.objects.get(event=event, customer=second)
    assert entry.status == "ADMITTED"
    second_claim = claim_create(
        event_id=event.id,
        customer_id=second.id,
        admission_token=tokens[second.id],
        tier_id=tier.id,
        quantity=1,
    )
    assert second_claim.status == "CLAIMED"


def test_admission_time_is_given_back_when_no_tick_could_run_during_the_outage(
    own_redis, settings
):
    """Celery's broker is often the same Redis: then no tick runs while it is
    down, and the first one after the outage finds the clock stood still."""
    settings.ADMISSION_INTERVAL_SECONDS = 1
    event = make_event(tickets=5, admission_window_seconds=2)
    tier = event.tiers.get()
    customer, _ = join(event)
    assert services.admission_tick_event(event_id=event.id).admitted == 1
    token = services.queue_position(event_id=event.id, customer_id=customer.id).admission_token
    own_redis.stop()
    time.sleep(4)  # no tick: the beat's broker is down too
    own_redis.start()
    services.admission_tick_event(event_id=event.id)
    assert QueueEntry.objects.get(event=event, customer=customer).status == "ADMITTED"
    claim = claim_create(
        event_id=event.id,
        customer_id=customer.id,
        admission_token=token,
        tier_id=tier.id,
        quantity=1,
    )
    assert claim.status == "CLAIMED"


def test_an_admission_that_lapsed_with_redis_up_still_expires(own_redis):
    event = make_event(tickets=5, admission_window_seconds=1)
    customer, _ = join(event)
    services.admission_tick_event(event_id=event.id)
    time.sleep(1.5)
    services.admission_tick_event(event_id=event.id)
    entry = QueueEntry.objects.get(event=event, customer=customer)
    assert entry.status == "EXPIRED"
