"""The Celery app and, in one place, every periodic task (beat).

django-celery-beat's DatabaseScheduler stores this schedule in Postgres, so
organizers can see it in the admin; this module stays its single definition.
"""

import logging.config
import os

from celery import Celery
from celery.signals import setup_logging
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("fairqueue")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def _use_the_settings_logging(**kwargs: object) -> None:
    """Worker and beat log like the web processes (settings.LOGGING: format,
    request/event ids, Celery's per-task chatter at DEBUG) instead of
    Celery's own setup; ``LOG_LEVEL`` sets the level, not ``--loglevel``."""
    logging.config.dictConfig(settings.LOGGING)


def _beat_schedule() -> dict:
    every = {
        "admission": settings.ADMISSION_INTERVAL_SECONDS,
        "expiry": settings.EXPIRY_INTERVAL_SECONDS,
        "reconcile": settings.RECONCILE_INTERVAL_SECONDS,
    }
    return {
        "admission-tick": {"task": "queueing.tasks.admission_tick", "schedule": every["admission"]},
        "queue-reconcile": {
            "task": "queueing.tasks.queue_reconcile",
            "schedule": every["reconcile"],
        },
        "claims-expire": {"task": "claims.tasks.claims_expire", "schedule": every["expiry"]},
        "returns-close": {"task": "claims.tasks.returns_close", "schedule": every["expiry"]},
        "paying-claims-expire": {
            "task": "payments.tasks.paying_claims_expire",
            "schedule": every["expiry"],
        },
        "sales-end": {"task": "events.tasks.sales_end", "schedule": every["admission"]},
        "inventory-reconcile": {
            "task": "events.tasks.inventory_reconcile",
            "schedule": every["reconcile"],
        },
        "payments-reconcile": {
            "task": "payments.tasks.payments_reconcile",
            "schedule": every["reconcile"],
        },
        "records-purge": {"task": "customers.tasks.records_purge", "schedule": 3600.0},
        "emails-sweep": {"task": "storefront.tasks.emails_sweep", "schedule": 60.0},
    }


@app.on_after_finalize.connect
def _setup_schedule(sender: Celery, **kwargs: object) -> None:
    sender.conf.beat_schedule = _beat_schedule()
