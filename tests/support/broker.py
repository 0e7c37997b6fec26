"""What the Celery broker (the real Redis behind CELERY_BROKER_URL) holds:
the task messages published and not yet taken (tests run no worker)."""

from __future__ import annotations

import base64
import json

import redis
from django.conf import settings

QUEUE = "celery"  # Celery's default queue: every task of the project goes there


def published() -> list[tuple[str, list]]:
    """(task name, positional arguments) of every waiting message, oldest first."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        messages = [json.loads(raw) for raw in reversed(client.lrange(QUEUE, 0, -1))]
    finally:
        client.close()
    return [
        (m["headers"]["task"], json.loads(base64.b64decode(m["body"]))[0]) for m in messages
    ]
