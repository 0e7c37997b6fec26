"""``manage.py check_invariants``: the invariants (docs/DESIGN.md), checked now.

Prints a table (check, status, detail) per event, or ``--json``; exits 1 when
any check fails, 2 when an event id is unknown."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.invariants import Report, Result, check_invariants
from fairqueue.errors import NotFound


class Command(BaseCommand):
    help = (
        "Check the invariants from Postgres (and Redis' agreement with it): a table, or "
        "--json; exit status 1 when any is violated."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--event",
            dest="event_ids",
            action="append",
            type=uuid.UUID,
            metavar="ID",
            help="Only this event (repeat for several). Default: every event.",
        )
        parser.add_argument(
            "--settled",
            action="store_true",
            help="Also the checks that hold once a sale is quiet and beat has caught up: "
            "nothing in flight, no deadline missed, Redis equal to Postgres.",
        )
        parser.add_argument(
            "--sold-out",
            action="store_true",
            help="Also check that every ticket is sold (confirmed claims = inventory).",
        )
        parser.add_argument(
            "--no-redis",
            dest="redis",
            action="store_false",
            help="Leave out the comparison of Redis with Postgres (with --settled).",
        )
        parser.add_argument(
            "--grace",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="With --settled: a deadline counts as missed only this long after it passed.",
        )
        parser.add_argument("--json", action="store_true", help="One JSON document on stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = check_invariants(
                event_ids=options["event_ids"],
                settled=options["settled"],
                sold_out=options["sold_out"],
                redis=options["redis"],
                grace_seconds=options["grace"],
            )
        except NotFound as exc:
            raise CommandError(exc.message, returncode=2) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), default=str))
        else:
            self.stdout.write(render(report))
        failures = report.failures()
        if failures:
            names = sorted({result.check for _, result in failures})
            raise CommandError(
                f"{len(failures)} invariant check(s) failed: {', '.join(names)}", returncode=1
            )


def render(report: Report) -> str:
    sections: list[tuple[str, list[Result]]] = []
    if report.database:
        sections.append(("Database", report.database))
    for event in report.events:
        counts = "; ".join(
            f"{kind} " + (", ".join(f"{n} {status}" for status, n in by.items()) or "none")
            for kind, by in event.counts.items()
        )
        title = f"Event {event.name} ({event.event_id}, {event.status})\n{counts}"
        sections.append((title, event.results))
    everything = [r for _, results in sections for r in results]
    width = max((len(r.check) for r in everything), default=5)
    lines = []
    for title, results in sections:
        lines += ["", title, f"  {'check':<{width}}  inv  status  detail"]
        for r in results:
            status = "PASS" if r.ok else "FAIL"
            lines.append(f"  {r.check:<{width}}  {r.invariant:>3}  {status:<6}  {r.detail}")
    failed = len(report.failures())
    lines += ["", f"{len(everything)} checks, {failed} failed" if everything else "no event"]
    return "\n".join(lines).lstrip("\n")
