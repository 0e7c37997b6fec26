from django.db import connection
from django.http import HttpRequest, JsonResponse

from fairqueue.redis import get_redis


def healthz(request: HttpRequest) -> JsonResponse:
    """Checks both stores; 503 when either is unreachable."""
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["postgres"] = "ok"
    except Exception as exc:  # any failure means degraded
        checks["postgres"] = f"error: {type(exc).__name__}"
    try:
        get_redis().ping()
        checks["redis"] = "ok"
    except Exception as exc:
        checks["redis"] = f"error: {type(exc).__name__}"
    healthy = all(v == "ok" for v in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "degraded", "checks": checks},
        status=200 if healthy else 503,
    )
