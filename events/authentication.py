"""How an organizer authenticates to the API: the Django session of a user
who signed in to the admin (``/admin/``), with Django's CSRF check.

Door staff sign in once on their phone or scanner and use the check-in page
(``/events/<id>/check-in/``), which calls the API with the session cookie and
the ``X-CSRFToken`` header. The cookie middleware skips ``/api/`` (customer
calls carry bearer tokens only; see fairqueue/middleware.py), so this class
loads the session itself, and only on the views that name it. Who may act
for an event is the tenant rule's to say (fairqueue/adminscope.py): a member
of its organizer or a superuser; anyone else is refused, whatever their staff
flag (platform staff see an event's rows but do not work its door).
"""

from __future__ import annotations

import uuid
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib import auth
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest
from rest_framework import permissions
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request

from events.models import Event
from fairqueue.adminscope import may


class OrganizerSessionAuthentication(SessionAuthentication):
    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, None] | None:
        django_request = request._request
        if not hasattr(django_request, "session"):
            engine = import_module(settings.SESSION_ENGINE)
            cookie = django_request.COOKIES.get(settings.SESSION_COOKIE_NAME)
            django_request.session = engine.SessionStore(cookie)
        if not hasattr(django_request, "user") or isinstance(django_request.user, AnonymousUser):
            django_request.user = auth.get_user(django_request)
        # DRF's SessionAuthentication: an active user, and the CSRF check.
        return super().authenticate(request)

    def authenticate_header(self, request: Request) -> str:
        # A 401 (not 403) for "not signed in": DRF answers 403 without this.
        return 'Session realm="admin"'


def runs_event(request: Request | HttpRequest, event_id: uuid.UUID | str) -> bool:
    """The signed-in user may change the event's rows (the tenant rule)."""
    organizer_id = Event.objects.filter(pk=event_id).values_list("organizer_id", flat=True).first()
    return organizer_id is not None and may(request, organizer_id, change=True)


class RunsThisEvent(permissions.BasePermission):
    """For views under ``events/<event_id>/``: the signed-in user runs it."""

    message = "You do not run this event."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if user is None or not getattr(user, "is_authenticated", False):
            return False
        return runs_event(request, view.kwargs.get("event_id"))
