"""The admin login's failure limits: django-axes' database handler with a
limit per parameter set.

``AXES_LOCKOUT_PARAMETERS`` counts failures per (username, client address)
and per client address. Stock axes compares the larger of the two counts
with one limit, and a client address's count is never below any of its
pairs', so the pair's limit would never decide anything. Here each set has
its own: ``AXES_FAILURE_LIMIT`` per pair, ``ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT``
(wider: an office behind one address) per address. Nothing counts per
username alone, so failures from elsewhere never lock a user out.
"""

from __future__ import annotations

from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest


class AdminLoginHandler(AxesDatabaseHandler):
    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        """The failures axes compares with ``AXES_FAILURE_LIMIT``: the pair's
        count, or the address's scaled to that limit (it reaches it exactly
        when the address reaches its own)."""
        pair, address = (
            attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0
            for attempts in self.get_user_attempts(request, credentials)
        )
        limit = settings.AXES_FAILURE_LIMIT
        return max(pair, address * limit // settings.ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT)
