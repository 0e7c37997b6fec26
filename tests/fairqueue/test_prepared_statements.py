"""The statements every sale request runs are prepared once per connection
(fairqueue/db.py): Postgres plans the claim's CTE, the join's INSERT and the
sign-out state's SELECT once, not per request. Off, nothing is prepared.

(Services called directly: a test request closes its connection when it ends,
and prepared statements live as long as the connection.)"""

from __future__ import annotations

import pytest
from django.db import connection

from claims.services import claim_create
from customers.revocation import customer_token_authenticate
from customers.tokens import customer_token_issue
from queueing.models import QueueEntry
from tests.support.sales import admit, join, make_event

pytestmark = pytest.mark.django_db(transaction=True)


def prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def sale_statements() -> None:
    connection.close()
    event = make_event(tickets=10)
    for _ in range(3):  # three of each: planned once
        customer, _ = join(event)
        token, _ = customer_token_issue(customer_id=customer.id, email=customer.email)
        customer_token_authenticate(token)  # the state is not cached: read from Postgres
    other = make_event(tickets=10)
    customer, _, admission = admit(other)
    claim_create(
        event_id=other.id,
        customer_id=customer.id,
        admission_token=admission,
        tier_id=other.tiers.get().id,
        quantity=1,
    )


def test_the_hot_statements_are_prepared_once_per_connection():
    sale_statements()
    statements = prepared()
    table = QueueEntry._meta.db_table
    assert sum(f"INSERT INTO {table}" in s for s in statements) == 1  # the join
    assert sum("token_version" in s for s in statements) == 1  # the sign-out state
    assert sum("WITH" in s and "reservation_id" in s for s in statements) == 1  # the claim


def test_nothing_is_prepared_when_switched_off(settings):
    settings.DB_PREPARED_STATEMENTS = False
    sale_statements()
    assert prepared() == []
