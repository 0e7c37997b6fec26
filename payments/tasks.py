"""Celery interface of payments (beat schedule in fairqueue/celery.py)."""

from celery import shared_task

from payments.services import payments_reconcile as payments_reconcile_service


@shared_task(name="payments.tasks.payments_reconcile", ignore_result=True)
def payments_reconcile() -> dict[str, int]:
    return payments_reconcile_service()
