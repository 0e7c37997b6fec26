"""The invariant check (console.invariants) as tests assert it."""

from __future__ import annotations

from typing import Any

from console.invariants import check_invariants


def failing(event: Any, **options: Any) -> dict[str, str]:
    """{check: detail} of the failed checks for this event (and the database)."""
    report = check_invariants(event_ids=[event.pk], **options)
    return {result.check: result.detail for _, result in report.failures()}
