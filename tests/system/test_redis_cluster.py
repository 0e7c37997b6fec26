"""The hot data on a real 3-master Redis Cluster (REDIS_CLUSTER_URL), the
channel layer on REDIS_URL; a cluster that does not answer is a Redis failure
like any other; a master lost mid-sale and started again empty is healed from
Postgres. (The queue, admission, claim, rebuild and reconcile test modules
run on the cluster too: tests/support/plugin.py, ON_CLUSTER_TOO.)"""

from __future__ import annotations

import uuid

import pytest
import redis
from django.utils import timezone
from redis.cluster import RedisCluster

from claims.services import claim_create
from claims.services.claiming import claim_lock_key
from console.health import dependency_checks
from console.invariants import Options
from console.invariants.agreement import redis_agrees
from events.models import Event
from events.tasks import inventory_reconcile
from fairqueue import redis as app_redis
from fairqueue.locks import redis_lock
from fairqueue.redis import RedisUnavailable, get_layer_redis, get_redis
from inventory.store import InventoryStore, inventory_store
from queueing import services
from queueing.models import QueueEntry
from queueing.store import QueueStore, queue_store
from queueing.tasks import admission_tick, queue_reconcile
from queueing.ws_tickets import ws_ticket_store
from tests.support.redis_cluster import RedisClusterServer
from tests.support.sales import admit_directly, join, make_customers, make_event

pytestmark = pytest.mark.django_db


def event_keys(event_id: object, tier_id: object) -> list[str]:
    return [
        QueueStore.waiting_key(event_id),
        QueueStore.admitted_key(event_id),
        QueueStore.served_key(event_id),
        QueueStore.lock_key(event_id),
        InventoryStore.counter_key(event_id, tier_id),
        InventoryStore.inflight_key(event_id, tier_id),
        InventoryStore.returned_key(event_id),
        claim_lock_key(event_id, uuid.uuid4()),
    ]


def test_the_hot_data_is_on_the_cluster_and_the_layer_is_not(on_cluster, settings):
    cluster = get_redis()
    assert isinstance(cluster, RedisCluster)
    for node in cluster.get_primaries():  # a busy process waits for a connection (make_client)
        assert isinstance(node.redis_connection.connection_pool, redis.BlockingConnectionPool)
    assert len(cluster.get_primaries()) == 3
    layer = get_layer_redis()
    assert isinstance(layer, redis.Redis)
    assert layer.connection_pool.connection_kwargs["port"] == int(
        settings.REDIS_URL.rsplit(":", 1)[1].split("/")[0]
    )
    assert dependency_checks() == {"postgres": "ok", "redis": "ok", "redis_cluster": "ok"}


def test_one_event_is_one_slot_and_events_spread_over_the_masters(on_cluster):
    nodes = set()
    for _ in range(12):
        event_id, tier_id = uuid.uuid4(), uuid.uuid4()
        [node] = {on_cluster.node_of(key).port for key in event_keys(event_id, tier_id)}
        nodes.add(node)
    assert len(nodes) >= 2  # 12 events on one master of three: (1/3)^11


def test_a_sale_writes_to_the_master_of_its_slot(on_cluster):
    event = make_event(tickets=3)
    for _ in range(3):
        join(event)
    services.admission_tick_event(event_id=event.id)
    owner = on_cluster.node_of(queue_store().waiting_key(event.id))
    with owner.client() as client:
        assert client.zcard(queue_store().admitted_key(event.id)) == 3
    for other in on_cluster.nodes:
        if other is not owner:
            with other.client() as client:
                assert client.dbsize() == 0


@pytest.fixture
def unreachable_cluster(settings, closed_port):
    settings.REDIS_CLUSTER_URL = f"redis://127.0.0.1:{closed_port}"
    app_redis.reset_clients()
    yield
    app_redis.reset_clients()


def test_a_cluster_nobody_answers_is_a_redis_failure(unreachable_cluster):
    failures = app_redis.redis_failures()
    assert queue_store().join(event_id="e", customer_id="c", score=1) is None  # best effort
    assert inventory_store().available(event_id="e", tier_ids=["t"]) is None
    with pytest.raises(RedisUnavailable):  # required
        ws_ticket_store().put(event_id="e", ticket="t", customer_id="c", ttl_s=10)
    with redis_lock("fq:{e}:queue:lock", ttl_s=5) as held:
        assert held is not None and not held.in_redis  # no Redis lock: Postgres guards
    assert app_redis.redis_failures() >= failures + 4
    assert dependency_checks()["redis_cluster"].startswith("error: ")


def agrees(event_id: object) -> None:
    found = redis_agrees(Event.objects.get(pk=event_id), Options(timezone.now()))
    assert found.ok, found.detail


def test_a_master_restarted_empty_mid_sale_is_healed_from_postgres(
    on_cluster: RedisClusterServer, eager_tasks
):
    event = make_event(tickets=5, admission_batch_size=3)
    tier = event.tiers.get()
    for _ in range(8):
        join(event)
    admission_tick()
    inventory_reconcile()
    buyers = admit_directly(event, make_customers(2))
    claim_create(
        event_id=event.id,
        customer_id=buyers[0].customer.id,
        admission_token=buyers[0].token,
        tier_id=tier.id,
        quantity=1,
    )
    agrees(event.id)
    owner = on_cluster.node_of(queue_store().waiting_key(event.id))

    owner.kill()  # the sale goes on while the event's master is gone
    _, answer = join(event)
    assert answer.status == "WAITING"
    second = claim_create(
        event_id=event.id,
        customer_id=buyers[1].customer.id,
        admission_token=buyers[1].token,
        tier_id=tier.id,
        quantity=1,
    )
    assert second.quantity == 1  # Postgres decided alone
    admission_tick()  # admits from Postgres

    owner.start()  # back on its port with its slots, and no keys
    on_cluster.wait_ok()
    assert queue_store().sizes(event_id=event.id) == (0, 0)
    queue_reconcile()
    inventory_reconcile()
    agrees(event.id)
    waiting = QueueEntry.objects.filter(event=event, status="WAITING").count()
    assert queue_store().sizes(event_id=event.id)[0] == waiting
    assert inventory_store().available(event_id=event.id, tier_ids=[tier.id])[str(tier.id)] == 3


def test_a_connection_torn_inside_redis_py_is_a_redis_failure_and_nothing_else_is():
    """redis-py's cluster client can tear down a pooled connection under a
    thread reading from it (a node failed, another thread refreshed the slot
    map): the AttributeError it raises inside redis-py is a Redis failure."""
    torn = redis.Redis(decode_responses=True)

    @app_redis.best_effort("default")
    def read_on_torn() -> object:
        return torn.parse_response(None, "PING")  # None: a connection torn down

    @app_redis.required
    def required_on_torn() -> object:
        return torn.parse_response(None, "PING")

    @app_redis.best_effort("default")
    def our_own_bug() -> object:
        return None.missing  # type: ignore[attr-defined]

    assert read_on_torn() == "default"
    with pytest.raises(RedisUnavailable):
        required_on_torn()
    with pytest.raises(AttributeError):
        our_own_bug()
