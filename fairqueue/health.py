from django.db import connection
from django.http import HttpRequest, JsonResponse

from fairqueue.redis import cluster_url, get_layer_redis, get_redis


def dependency_checks() -> dict[str, str]:
    """Postgres and Redis answer a trivial command: "ok" or the error's type."""
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["postgres"] = "ok"
    except Exception as exc:  # any failure means degraded
        checks["postgres"] = f"error: {type(exc).__name__}"
    try:
        get_layer_redis().ping()
        checks["redis"] = "ok"
    except Exception as exc:
        checks["redis"] = f"error: {type(exc).__name__}"
    if cluster_url():  # the hot data's cluster: every primary answers
        try:
            get_redis().ping()
            checks["redis_cluster"] = "ok"
        except Exception as exc:
            checks["redis_cluster"] = f"error: {type(exc).__name__}"
    return checks


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: this process answers and reaches both stores; 503 when
    either is unreachable. Whether the sale is moving is /readyz's question."""
    checks = dependency_checks()
    healthy = all(v == "ok" for v in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "degraded", "checks": checks},
        status=200 if healthy else 503,
    )
