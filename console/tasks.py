"""Celery side of the console: Redis rebuilt from Postgres when a worker starts
(Redis may have been wiped while no worker ran)."""

from __future__ import annotations

from celery.signals import worker_ready

from console.services import redis_rebuild


@worker_ready.connect
def rebuild_redis_on_worker_start(**kwargs: object) -> None:
    redis_rebuild()
