"""Which events an admin user manages: the organizers they belong to, read
once per request. Superusers manage every event."""

from __future__ import annotations

from django.http import HttpRequest

from events.models import Event


def organizer_ids(request: HttpRequest) -> frozenset[int]:
    """The organizers the user belongs to (read once per request)."""
    cached: frozenset[int] | None = getattr(request, "_fq_organizer_ids", None)
    if cached is None:
        user = request.user
        cached = frozenset(
            user.organizers.values_list("id", flat=True) if user.is_authenticated else ()
        )
        request._fq_organizer_ids = cached  # type: ignore[attr-defined]  # a per-request cache
    return cached


def manages(request: HttpRequest, event: Event | None) -> bool:
    if event is None or request.user.is_superuser:
        return True
    return event.organizer_id in organizer_ids(request)
