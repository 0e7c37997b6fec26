"""A database that ran the older beat schedule loses its retired sweep entry
on migrate; the entries config/celery.py names are untouched."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django_celery_beat.models import IntervalSchedule, PeriodicTask

BEFORE = [("claims", "0010_return_end_reason_and_emails_sent")]


@pytest.mark.django_db(transaction=True)
def test_the_retired_sweep_entry_is_deleted_and_the_others_kept():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    every = IntervalSchedule.objects.create(every=300, period=IntervalSchedule.SECONDS)
    for name, task in [
        ("confirmation-emails-sweep", "claims.tasks.confirmation_emails_sweep"),
        ("emails-sweep", "storefront.tasks.emails_sweep"),
    ]:
        PeriodicTask.objects.create(name=name, task=task, interval=every)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert list(PeriodicTask.objects.values_list("name", flat=True)) == ["emails-sweep"]
