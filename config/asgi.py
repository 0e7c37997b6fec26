"""ASGI entry point for daphne: WebSockets (and HTTP, though granian serves
the HTTP API in production; see docs/DESIGN.md "Serving HTTP")."""

import gc
import os

from config.connections import pool_for_entry_point

# ASGI runs sync code in threads: use the psycopg pool, never persistent
# connections (they are never reused there and exhaust Postgres).
pool_for_entry_point()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

from fairqueue.metrics import CountWebSockets  # noqa: E402
from queueing.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # The consumer checks the Origin and the single-use ticket itself.
        "websocket": CountWebSockets(URLRouter(websocket_urlpatterns)),
    }
)

# Each WebSocket holds a few dozen long-lived objects, so at 10,000 sockets
# the cyclic garbage collector's full passes walked ~600k objects again and
# again during a tick's pushes (over half of daphne's CPU then, and the
# admission push p99 went from 1.9 s to 8 s; docs/BENCHMARKS.md). Collect
# the young generation less often, and leave what start-up built out of it.
gc.set_threshold(50_000, 20, 100)
gc.freeze()
