"""Which rows of the operational models (queue entries, claims, payments,
webhook receipts) an admin user sees. One rule, failing closed:

- **platform staff** see every event's rows: superusers, and staff users in
  the group named ``PLATFORM_STAFF_GROUP`` ("Platform staff": support and
  finance, the people who resolve stuck payments). Membership is granted
  explicitly by a superuser, never implied;
- **organizer members** (``Organizer.members``) see their own events' rows;
- **anyone else** sees nothing: a staff user removed from their organizer,
  or created without one, is not silently promoted to seeing everything.

Model permissions (``view_*``, ``change_*``) still decide whether a user sees
a model at all.
"""

from django.db.models import QuerySet
from django.http import HttpRequest

PLATFORM_STAFF_GROUP = "Platform staff"


def is_platform_staff(user: object) -> bool:
    if getattr(user, "is_superuser", False):
        return True
    if not getattr(user, "is_staff", False):
        return False
    return user.groups.filter(name=PLATFORM_STAFF_GROUP).exists()  # type: ignore[attr-defined]  # any user model with groups


def organizer_scope(request: HttpRequest, qs: QuerySet, organizer_path: str) -> QuerySet:
    """``qs`` narrowed to what ``request.user`` may see; ``organizer_path``
    leads from the model to the organizer's id (e.g. ``"event__organizer_id"``)."""
    user = request.user
    if is_platform_staff(user):
        return qs
    if not user.is_authenticated:
        return qs.none()
    organizer_ids = list(user.organizers.values_list("id", flat=True))
    return qs.filter(**{f"{organizer_path}__in": organizer_ids})
