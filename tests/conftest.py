import pytest
from rest_framework.test import APIClient

from fairqueue.redis import get_redis


@pytest.fixture(autouse=True)
def redis_clean():
    """Every test starts with an empty Redis (the configured database only)."""
    client = get_redis()
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run the after-commit work (Redis give-back, event status) at once."""

    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run
