"""Which rows of the operational models (queue entries, claims, payments) an
admin user sees. Two kinds of staff use the admin:

- organizer members (``Organizer.members``) see their own events' rows only;
- platform staff, who belong to no organizer (support, finance: the people
  who resolve stuck payments), see every event's rows.

Model permissions (``view_*``, ``change_*``) still decide whether a user sees
a model at all; superusers see everything.
"""

from django.db.models import QuerySet
from django.http import HttpRequest


def organizer_scope(request: HttpRequest, qs: QuerySet, organizer_path: str) -> QuerySet:
    """``qs`` narrowed to the user's organizers; ``organizer_path`` leads from
    the model to the organizer's id (e.g. ``"event__organizer_id"``)."""
    if request.user.is_superuser:
        return qs
    if not request.user.is_authenticated:
        return qs.none()
    organizer_ids = list(request.user.organizers.values_list("id", flat=True))
    if organizer_ids:
        return qs.filter(**{f"{organizer_path}__in": organizer_ids})
    return qs
