"""Data setup for the waiting-room benchmarks: Django, a live event, customers
and WAITING entries filled in bulk, their tokens, and the cleanup after.

Importing it sets the environment those need (settings module, the shared
secret key), before Django loads.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.production_env import production_env  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The bench mints customer tokens and the server checks them: one key for both
# (and what else production mode asks for: bench/production_env.py).
production_env(os.environ)
os.environ.setdefault("LOG_LEVEL", "WARNING")
EMAIL_DOMAIN = "bench.invalid"


def django_setup() -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def make_event(name: str, *, tickets: int, batch: int) -> uuid.UUID:
    from django.utils import timezone

    from events.models import Organizer
    from events.services import TierSpec, event_activate, event_create

    organizer, _ = Organizer.objects.get_or_create(name="Benchmark organizer")
    now = timezone.now()
    event = event_create(
        organizer=organizer,
        name=f"{name} {uuid.uuid4().hex[:8]}",
        sale_start=now - timedelta(minutes=1),
        sale_end=now + timedelta(days=1),
        tiers=[TierSpec("General", 1_000_00, tickets)],
        admission_batch_size=batch,
        max_active_admitted=1_000_000,
    )
    event_activate(event_id=event.id)
    return event.id


def make_customers(tag: str, n: int) -> list[tuple[str, str]]:
    """n customers in one statement; returns (id, email)."""
    from django.db import connection

    from customers.models import Customer

    table = Customer._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (id, email, token_version, created_at) "  # noqa: S608
            "SELECT gen_random_uuid(), %s || i || %s, 0, now() FROM generate_series(1, %s) i "
            "RETURNING id::text, email",
            [f"bench-{tag}-", f"@{EMAIL_DOMAIN}", n],
        )
        return cursor.fetchall()


def seed_waiting(event_id: uuid.UUID, tag: str, n: int) -> None:
    """n WAITING entries (and their customers) straight in Postgres, ahead of
    any later joiner, in batches."""
    from django.db import connection

    from customers.models import Customer
    from queueing.models import QueueEntry

    customers, entries = Customer._meta.db_table, QueueEntry._meta.db_table
    base = time.time_ns() // 1000 - 10**10
    step = 250_000
    with connection.cursor() as cursor:
        for start in range(0, n, step):
            count = min(step, n - start)
            cursor.execute(
                f"WITH c AS (INSERT INTO {customers} (id, email, token_version, created_at) "  # noqa: S608
                "SELECT gen_random_uuid(), %s || i || %s, 0, now() "
                "FROM generate_series(%s, %s) i RETURNING id) "
                f"INSERT INTO {entries} (id, event_id, customer_id, status, score, prequeue, "
                "joined_at) SELECT gen_random_uuid(), %s, c.id, 'WAITING', "
                "%s + row_number() OVER (), false, now() FROM c",
                [
                    f"bench-{tag}-",
                    f"@{EMAIL_DOMAIN}",
                    start + 1,
                    start + count,
                    event_id,
                    base + start,
                ],
            )
        cursor.execute("ANALYZE " + entries)


def tokens_for(customers: list[tuple[str, str]]) -> list[str]:
    from customers.tokens import customer_token_issue

    return [customer_token_issue(customer_id=uuid.UUID(c), email=e)[0] for c, e in customers]


def cleanup(event_ids: list[uuid.UUID]) -> None:
    from django.db import connection

    from customers.models import Customer
    from events.models import Event, TicketTier
    from fairqueue.redis import get_redis
    from inventory.models import Ticket
    from queueing.models import AdmissionState, QueueEntry

    ids = [str(e) for e in event_ids]
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {QueueEntry._meta.db_table} WHERE event_id::text = ANY(%s)",  # noqa: S608
            [ids],
        )
        cursor.execute(
            f"DELETE FROM {Ticket._meta.db_table} WHERE tier_id IN "  # noqa: S608
            f"(SELECT id FROM {TicketTier._meta.db_table} WHERE event_id::text = ANY(%s))",
            [ids],
        )
        cursor.execute(
            f"DELETE FROM {TicketTier._meta.db_table} WHERE event_id::text = ANY(%s)",  # noqa: S608
            [ids],
        )
        cursor.execute(
            f"DELETE FROM {AdmissionState._meta.db_table} WHERE event_id::text = ANY(%s)",  # noqa: S608
            [ids],
        )
        cursor.execute(
            f"DELETE FROM {Event._meta.db_table} WHERE id::text = ANY(%s)",  # noqa: S608
            [ids],
        )
        cursor.execute(
            f"DELETE FROM {QueueEntry._meta.db_table} WHERE customer_id IN "  # noqa: S608
            f"(SELECT id FROM {Customer._meta.db_table} WHERE email LIKE %s)",
            [f"bench-%@{EMAIL_DOMAIN}"],
        )
        cursor.execute(
            f"DELETE FROM {Customer._meta.db_table} WHERE email LIKE %s",  # noqa: S608
            [f"bench-%@{EMAIL_DOMAIN}"],
        )
    r = get_redis()
    for event_id in ids:
        keys = list(r.scan_iter(match=f"fq:{{{event_id}}}:*", count=1000))
        if keys:
            r.delete(*keys)


def seed_admitted(event, *, count: int, prefix: str) -> list[tuple]:
    """``count`` new customers admitted to ``event`` (ADMITTED entries in
    Postgres, the admitted set in Redis, windows an hour long), each as
    (customer, admission token), for the claim benchmarks."""
    from django.utils import timezone

    from customers.models import Customer
    from queueing.domain import QueueStatus
    from queueing.models import QueueEntry
    from queueing.store import queue_store
    from queueing.tokens import admission_token_issue

    now = timezone.now()
    tag = uuid.uuid4().hex[:8]
    people = Customer.objects.bulk_create(
        [Customer(email=f"{prefix}{i}-{tag}@example.test") for i in range(count)],
        batch_size=2000,
    )
    expires_at = now + timedelta(hours=1)
    entries = QueueEntry.objects.bulk_create(
        [
            QueueEntry(
                event=event,
                customer=c,
                status=QueueStatus.ADMITTED,
                score=n,
                admitted_at=now,
                admission_expires_at=expires_at,
            )
            for n, c in enumerate(people)
        ],
        batch_size=2000,
    )
    store = queue_store()
    expires_ms = int(expires_at.timestamp() * 1000)
    store.add_many(
        key=store.admitted_key(event.pk), members=[(str(c.id), expires_ms) for c in people]
    )
    return [
        (
            customer,
            admission_token_issue(
                event_id=event.pk,
                customer_id=customer.id,
                queue_entry_id=entry.id,
                expires_at=expires_at,
            ),
        )
        for customer, entry in zip(people, entries, strict=True)
    ]
