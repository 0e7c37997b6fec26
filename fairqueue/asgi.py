"""ASGI entry point for daphne: WebSockets (and HTTP, though gunicorn serves
the HTTP API in production; see SPEC.md "Serving")."""

import os

# ASGI runs sync code in threads: use the psycopg pool, never persistent
# connections (they are never reused there and exhaust Postgres).
os.environ.setdefault("DB_POOL", "true")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairqueue.settings")

from channels.routing import ProtocolTypeRouter, URLRouter
from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

from fairqueue.core.authentication import TokenAuthMiddleware  # noqa: E402
from queueing.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": TokenAuthMiddleware(URLRouter(websocket_urlpatterns)),
    }
)
