"""WSGI entry point for the HTTP server (granian: fairqueue/webserver.py).

Every request a worker accepts gets a thread, and WEB_THREADS of them run
Django at once, purchases first (fairqueue/lanes.py). Any waiting thread may
run next, so Django's database connections come from a pool of WEB_THREADS
per worker, always (config/connections.py): one persistent connection per
thread would be hundreds. The lanes resolve a request's URL and Django
takes that match (``RoutedHandler``): one resolve per request.
A request's body is read before it waits for a slot, up to the most Django
holds in memory for a request (the larger of DATA_UPLOAD_MAX_MEMORY_SIZE and
FILE_UPLOAD_MAX_MEMORY_SIZE). The public line state, the same bytes for
everyone, is answered before Django and the lanes (queueing/wsgi.py).
"""

import os

from config.connections import pool_for_entry_point
from fairqueue.webserver import DEFAULT_THREADS

SLOTS = int(os.environ.get("WEB_THREADS", DEFAULT_THREADS))
pool_for_entry_point(always=True, size=SLOTS)  # all opened at the first request
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402
from django.conf import settings  # noqa: E402

django.setup(set_prefix=False)  # as get_wsgi_application(), with the lanes' handler

from fairqueue.lanes import LanedApp, RoutedHandler  # noqa: E402

django_application = RoutedHandler()

from queueing.wsgi import LineStateFirst  # noqa: E402  (after Django is set up)

application = LineStateFirst(
    LanedApp(
        django_application,
        slots=SLOTS,
        read_ahead=max(
            settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0, settings.FILE_UPLOAD_MAX_MEMORY_SIZE
        ),
    )
)
