"""The admin site: Django's, with every page scoped by the tenant rule and an
audit line for every admin action.

Every ModelAdmin registered here, whichever app registered it (Django's and
the libraries' own too), is wrapped in ``fairqueue.adminscope.TenantScoped``:
its rows, object permissions and actions follow the one tenant rule, and a
page that names no ``organizer_paths`` holds platform-wide rows (platform
staff only). Registered on the site rather than in each ModelAdmin, so a page
added later fails closed without anyone remembering to scope it.

Django logs the admin's own add / change / delete in ``LogEntry`` (the
"Recent actions" box, the object's history). Bulk actions (pause a sale,
re-verify a payment with the gateway, fail and release, mark refunded) are
not logged by Django: here every action run on the site, whichever app
registered it, leaves one ``LogEntry`` per object it was run on (CHANGE,
"Ran action ...") and one log line naming the user, the action and the
count. Registered on the site rather than in each ModelAdmin, so an action
added later is logged without anyone remembering to.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.options import BaseModelAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from fairqueue.adminscope import TenantScoped

logger = logging.getLogger("fairqueue.admin")

# Django logs each deletion itself when the confirmation is posted.
NOT_LOGGED = frozenset({"delete_selected"})
# Objects logged one by one; a larger selection is logged up to here and counted.
MAX_LOGGED_OBJECTS = 1000


def _logged(func: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(func)
    def run(modeladmin: BaseModelAdmin, request: HttpRequest, queryset: QuerySet) -> Any:
        # Read before the action runs: it may move rows out of the queryset's filter.
        objects = list(queryset[:MAX_LOGGED_OBJECTS])
        total = queryset.count() if len(objects) == MAX_LOGGED_OBJECTS else len(objects)
        result = func(modeladmin, request, queryset)
        if objects and request.user.pk is not None:  # only a signed-in user reaches an action
            LogEntry.objects.log_actions(
                user_id=request.user.pk,
                queryset=objects,
                action_flag=CHANGE,
                change_message=f"Ran action “{name}”.",
            )
        logger.info(
            "admin action %s by %s on %d %s",
            name,
            request.user.get_username(),
            total,
            queryset.model._meta.label,
        )
        return result

    return run


class LoggedActionsMixin:
    def get_action(self, action: Any) -> tuple[Callable[..., Any], str, str] | None:
        found = super().get_action(action)  # type: ignore[misc]  # a mixin: ModelAdmin comes after it
        if found is None or found[1] in NOT_LOGGED:
            return found
        func, name, description = found
        return _logged(func, name), name, description


class AdminSite(admin.AdminSite):
    site_header = "FairQueue"
    site_title = "FairQueue"
    index_title = "Events, orders and payments"

    def register(self, model_or_iterable: Any, admin_class: Any = None, **options: Any) -> None:
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, LoggedActionsMixin):
            # TenantScoped outermost: an action's rows are narrowed before
            # they are logged and acted on.
            admin_class = type(
                admin_class.__name__, (TenantScoped, LoggedActionsMixin, admin_class), {}
            )
        super().register(model_or_iterable, admin_class, **options)
