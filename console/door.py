"""The door (``/events/{id}/check-in/``): an organizer's page, signed in to
the admin, that checks tickets in by the phone's camera or a typed code
(through the check-in API, with this session), and keeps a running count of
who is in. For members of the event's organizer (the tenant rule, as the
API); anyone else finds no such event."""

from __future__ import annotations

from csp.decorators import csp_update
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache

from console.selectors import door_counts
from events.authentication import runs_event
from events.models import Event

# How often the page reads the count again (other doors check people in too).
COUNT_REFRESH_SECONDS = 10


def _event(request: HttpRequest, event_id: str) -> Event:
    event = Event.objects.filter(pk=event_id).first()
    if event is None or not runs_event(request, event.pk):
        raise Http404("There is no such event among the events you run.")
    return event


# The camera scanner (qr-scanner) decodes in a worker it makes from a blob:
# URL where the browser has no BarcodeDetector: this page only.
@never_cache
@csp_update({"worker-src": ["'self'", "blob:"]})  # type: ignore[arg-type]  # django-csp types views as taking the request alone
def door_page(request: HttpRequest, event_id: str) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), login_url=reverse("admin:login"))
    event = _event(request, event_id)
    config = {
        "api": "/api/v1/",
        "event_id": str(event.pk),
        "csrf_token": get_token(request),
        "count_url": reverse("check-in-count", args=[event.pk]),
        "count_refresh": COUNT_REFRESH_SECONDS,
    }
    context = {
        "event": event,
        "config": config,
        "counts": door_counts(event_id=event.pk),
        "dashboard_url": reverse("admin:events_event_dashboard", args=[event.pk]),
    }
    return render(request, "console/door.html", context)


@never_cache
def door_count(request: HttpRequest, event_id: str) -> JsonResponse:
    if not request.user.is_authenticated:
        raise Http404("There is no such event among the events you run.")
    return JsonResponse(door_counts(event_id=_event(request, event_id).pk))
