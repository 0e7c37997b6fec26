"""The invariants (1 to 8, docs/DESIGN.md), checked from Postgres, and Redis'
agreement with Postgres (invariant 2): what ``manage.py check_invariants`` prints, the
test suite asserts and the benchmarks report.

Checks come in three kinds (``When``): the ones that hold at every moment,
even mid-sale under load; the ones that hold once a sale is quiet and beat
has caught up (nothing in flight, Redis rebuilt: ``settled=True``); and
"every ticket sold" (``sold_out=True``). Each check is a function in
``tickets``, ``payments``, ``accounts``, ``resale``, ``waitlist`` or ``agreement`` registered with
``@check``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count
from django.utils import timezone

from claims.models import Claim
from console.invariants import accounts, agreement, payments, resale, tickets, waitlist
from console.invariants.base import CHECKS, Check, Options, Result, Scope, When
from events.models import Event
from fairqueue.errors import ErrorCode, NotFound
from payments.models import Payment
from queueing.models import QueueEntry

# The modules above register their checks on import.
_REGISTERED_BY = (accounts, agreement, payments, resale, tickets, waitlist)


@dataclass
class EventReport:
    event_id: str
    name: str
    status: str
    counts: dict[str, dict[str, int]]
    results: list[Result] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "name": self.name,
            "status": self.status,
            "counts": self.counts,
            "checks": [r.as_dict() for r in self.results],
        }


@dataclass
class Report:
    events: list[EventReport]
    database: list[Result]

    @property
    def ok(self) -> bool:
        return all(result.ok for _, result in self.results())

    def results(self) -> list[tuple[str | None, Result]]:
        """(event id, or None for a database check; result) of every check."""
        found: list[tuple[str | None, Result]] = [(None, r) for r in self.database]
        for event in self.events:
            found += [(event.event_id, r) for r in event.results]
        return found

    def failures(self) -> list[tuple[str | None, Result]]:
        return [(event, result) for event, result in self.results() if not result.ok]

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failed": len(self.failures()),
            "database": [r.as_dict() for r in self.database],
            "events": [e.as_dict() for e in self.events],
        }


def checks_to_run(
    *, settled: bool = False, sold_out: bool = False, redis: bool = True
) -> list[Check]:
    wanted = {When.ALWAYS} | ({When.SETTLED} if settled else set())
    wanted |= {When.SOLD_OUT} if sold_out else set()
    chosen = [c for c in CHECKS if c.when in wanted and (redis or not c.uses_redis)]
    return sorted(chosen, key=lambda c: c.invariant)  # stable: in each, as registered


def check_invariants(
    *,
    event_ids: Iterable[uuid.UUID | str] | None = None,
    settled: bool = False,
    sold_out: bool = False,
    redis: bool = True,
    grace_seconds: float = 0.0,
) -> Report:
    """Every invariant for the given events (all events by default). Checks
    that hold only once a sale has settled or sold out run when asked for;
    ``redis=False`` leaves out the comparison with Redis. Unknown event ids:
    NotFound, nothing checked."""
    options = Options(now=timezone.now(), grace_seconds=grace_seconds)
    events = Event.objects.order_by("sale_start", "name")
    if event_ids is not None:
        ids = {str(e) for e in event_ids}
        events = events.filter(pk__in=ids)
        missing = ids - {str(pk) for pk in events.values_list("pk", flat=True)}
        if missing:
            raise NotFound(
                f"No such event: {', '.join(sorted(missing))}.", code=ErrorCode.EVENT_NOT_FOUND
            )
    chosen = checks_to_run(settled=settled, sold_out=sold_out, redis=redis)
    report = Report(
        events=[],
        database=[c(None, options) for c in chosen if c.scope == Scope.DATABASE],
    )
    for event in events:
        report.events.append(
            EventReport(
                event_id=str(event.pk),
                name=event.name,
                status=event.status,
                counts=status_counts(event_id=event.pk),
                results=[c(event, options) for c in chosen if c.scope == Scope.EVENT],
            )
        )
    return report


def status_counts(*, event_id: uuid.UUID | str) -> dict[str, dict[str, int]]:
    """Claims, payments and queue entries of an event, by status."""

    def by_status(queryset: Any) -> dict[str, int]:
        return dict(queryset.values_list("status").annotate(n=Count("pk")).order_by("status"))

    return {
        "claims": by_status(Claim.objects.filter(event_id=event_id)),
        "payments": by_status(Payment.objects.filter(claim__event_id=event_id)),
        "queue": by_status(QueueEntry.objects.filter(event_id=event_id)),
    }


__all__ = [
    "CHECKS",
    "Check",
    "EventReport",
    "Options",
    "Report",
    "Result",
    "When",
    "check_invariants",
    "checks_to_run",
    "status_counts",
]
