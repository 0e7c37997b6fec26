"""The tenant rule: which rows a signed-in user may see and which they may
change. Every admin page, console view, the door's check-in page and the
organizer API ask it; it fails closed.

- **Superusers** see and change everything.
- **Platform staff** (staff users in the group named ``PLATFORM_STAFF_GROUP``,
  "Platform staff": support and finance, granted explicitly by a superuser,
  never implied) see every event's rows and the platform-wide ones. They
  change money only: the pages that say so (``money = True``: payments,
  where they resolve stuck payments and refund). An event, its tiers, seats,
  orders and door belong to its organizer, and platform settings (users,
  schedules, lockouts) to superusers.
- **Organizer members** (``Organizer.members``) see and change their own
  organizers' events and those events' rows, money included (a refund of
  their own order); nothing platform-wide.
- **Platform work** (``platform_work``: an admin action marked so, such as
  resolving a stuck payment with the gateway) is platform staff's alone:
  it is offered to superusers and platform staff, and to nobody else, on
  their own rows neither.
- **Anyone else** sees nothing and changes nothing, whatever their model
  permissions or staff flag: a staff user removed from their organizer, or
  created without one, is not promoted to seeing everything.

Model permissions (``view_*``, ``change_*``) still decide whether a user
reaches a model at all; this rule decides which of its rows.

A model's rows are tied to organizers by lookup paths to an organizer's id
(``"event__organizer_id"``); a row is in a user's reach when any path leads
to one of theirs. A model with no path holds platform-wide rows. Every
ModelAdmin registered on the site is wrapped in ``TenantScoped`` (see
console/site.py) and names its paths in ``organizer_paths``, so a page added
later is scoped, or shows nothing to anyone below platform staff, without
anyone remembering to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest

PLATFORM_STAFF_GROUP = "Platform staff"

# What a user reaches: every organizer, or these organizers' ids.
EVERY = None
Reach = frozenset[int] | None


def _active(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and getattr(user, "is_active", False))


def is_platform_staff(user: Any) -> bool:
    """Superusers, and active staff users in the "Platform staff" group."""
    if not _active(user):
        return False
    if user.is_superuser:
        return True
    if not user.is_staff:
        return False
    return bool(user.groups.filter(name=PLATFORM_STAFF_GROUP).exists())


def _cached(request: Any, name: str, compute: Callable[[], Any]) -> Any:
    """Read once per request (the admin asks many times per page)."""
    if not hasattr(request, name):
        setattr(request, name, compute())
    return getattr(request, name)


def _platform_staff(request: Any) -> bool:
    return bool(_cached(request, "_fq_platform_staff", lambda: is_platform_staff(request.user)))


def organizer_ids(request: HttpRequest | Any) -> frozenset[int]:
    """The organizers the user is a member of (an inactive user: none)."""

    def read() -> frozenset[int]:
        user: Any = request.user  # any user model with ``Organizer.members``
        return frozenset(user.organizers.values_list("id", flat=True) if _active(user) else ())

    ids: frozenset[int] = _cached(request, "_fq_organizer_ids", read)
    return ids


def reach(
    request: HttpRequest | Any,
    *,
    change: bool = False,
    money: bool = False,
    platform: bool = False,
) -> Reach:
    """The organizers whose rows the user may see (or change): ``EVERY`` or
    a set of ids (empty: none). ``money``: changing payments, which platform
    staff do for every organizer. ``platform``: a change that is platform
    work, which no organizer member does."""
    user = request.user
    if not _active(user):
        return frozenset()
    if user.is_superuser:
        return EVERY
    if _platform_staff(request) and (not change or money):
        return EVERY
    if change and platform:
        return frozenset()
    return organizer_ids(request)


def platform_wide(request: HttpRequest | Any, *, change: bool = False, money: bool = False) -> bool:
    """May the user see (change) rows that belong to no organizer."""
    if not _active(request.user):
        return False
    if request.user.is_superuser:
        return True
    return _platform_staff(request) and (not change or money)


def may(
    request: HttpRequest | Any,
    organizer_id: int | None = None,
    *,
    change: bool = False,
    money: bool = False,
    platform: bool = False,
) -> bool:
    """May the user see (change) the rows of this organizer; without one,
    the rows of some organizer (a list page, an "add" button)."""
    allowed = reach(request, change=change, money=money, platform=platform)
    if allowed is EVERY:
        return True
    return organizer_id in allowed if organizer_id is not None else bool(allowed)


def _many(model: type[Model], path: str) -> bool:
    """Does the lookup path cross a one-to-many or many-to-many relation
    (a plain filter would repeat rows)."""
    for name in path.split("__"):
        try:
            field = model._meta.get_field(name)
        except FieldDoesNotExist:
            return False  # a transform or the final "_id" column
        if field.one_to_many or field.many_to_many:
            return True
        if field.related_model is None:
            return False
        model = field.related_model
    return False


def in_reach(
    request: HttpRequest | Any,
    rows: QuerySet,
    *organizer_paths: str,
    change: bool = False,
    money: bool = False,
    platform: bool = False,
) -> QuerySet:
    """``rows`` narrowed to those the user may see (or change)."""
    if not organizer_paths:
        return rows if platform_wide(request, change=change, money=money) else rows.none()
    allowed = reach(request, change=change, money=money, platform=platform)
    if allowed is EVERY:
        return rows
    if not allowed:
        return rows.none()
    ids = sorted(allowed)
    tied = Q()
    for path in organizer_paths:
        lookup = Q(**{f"{path}__in": ids})
        if _many(rows.model, path):
            # A semi-join per path: each row once, whatever the number of
            # matches, and no join of one path's rows with another's.
            lookup = Q(pk__in=rows.model._default_manager.filter(lookup).values("pk"))
        tied |= lookup
    return rows.filter(tied)


def platform_work(action: Callable[..., Any]) -> Callable[..., Any]:
    """Marks an admin action as platform work (see above): ``TenantScoped``
    offers it only to whom the rule lets do it, and runs it on those rows."""
    action.platform_work = True  # type: ignore[attr-defined]  # read by TenantScoped
    return action


def _is_platform_work(action: Callable[..., Any]) -> bool:
    return bool(getattr(action, "platform_work", False))


class TenantScoped:
    """Mixed into every registered ModelAdmin (console/site.py): its rows,
    its object permissions and its actions follow the rule above.

    ``organizer_paths``: lookup paths from the model to an organizer's id
    (none: platform-wide rows). ``money``: changes are money work, which
    platform staff do for every organizer."""

    # Read from the ModelAdmin, which comes after this mixin: a default here
    # would hide it.
    @property
    def _paths(self) -> tuple[str, ...]:
        return tuple(getattr(self, "organizer_paths", ()))

    @property
    def _money(self) -> bool:
        return bool(getattr(self, "money", False))

    def _in_reach(
        self, request: HttpRequest, rows: QuerySet, *, change: bool, platform: bool = False
    ) -> QuerySet:
        return in_reach(
            request, rows, *self._paths, change=change, money=self._money, platform=platform
        )

    def _may(self, request: HttpRequest, obj: Model | None, *, change: bool) -> bool:
        if not self._paths:
            return platform_wide(request, change=change, money=self._money)
        if obj is None:
            return may(request, change=change, money=self._money)
        allowed = reach(request, change=change, money=self._money)
        if allowed is EVERY or not allowed:
            return allowed is EVERY
        return self._in_reach(
            request, type(obj)._default_manager.filter(pk=obj.pk), change=change
        ).exists()

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        rows = super().get_queryset(request)  # type: ignore[misc]  # a mixin: ModelAdmin comes after it
        return self._in_reach(request, rows, change=False)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        allowed = super().has_view_permission(request, obj)  # type: ignore[misc]  # ModelAdmin's, after the mixin
        return bool(allowed) and self._may(request, obj, change=False)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        allowed = super().has_add_permission(request, *args)  # type: ignore[misc]  # ModelAdmin's, after the mixin
        return bool(allowed) and self._may(request, None, change=True)

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        allowed = super().has_change_permission(request, obj)  # type: ignore[misc]  # ModelAdmin's, after the mixin
        return bool(allowed) and self._may(request, obj, change=True)

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        allowed = super().has_delete_permission(request, obj)  # type: ignore[misc]  # ModelAdmin's, after the mixin
        return bool(allowed) and self._may(request, obj, change=True)

    def get_actions(self, request: HttpRequest) -> dict[str, tuple[Callable[..., Any], str, str]]:
        """An action that changes anything (it needs more than the view
        permission: Django's bulk delete too) runs on the selected rows the
        user may change, and on no other; platform work is offered only to
        whom the rule lets do it."""
        actions = super().get_actions(request)  # type: ignore[misc]  # ModelAdmin's, after the mixin
        return {
            name: (self._narrowed(func), name, description)
            for name, (func, _, description) in actions.items()
            if not _is_platform_work(func)
            or may(request, change=True, money=self._money, platform=True)
        }

    def _narrowed(self, func: Callable[..., Any]) -> Callable[..., Any]:
        if set(getattr(func, "allowed_permissions", ())) <= {"view"}:
            return func
        platform = _is_platform_work(func)

        def run(modeladmin: Any, request: HttpRequest, queryset: QuerySet) -> Any:
            rows = self._in_reach(request, queryset, change=True, platform=platform)
            return func(modeladmin, request, rows)

        run.allowed_permissions = func.allowed_permissions  # type: ignore[attr-defined]  # as admin.action sets it
        return run
