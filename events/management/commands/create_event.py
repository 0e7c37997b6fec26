import json
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from events.domain import CHOOSE_SECONDS_DEFAULT
from events.models import Organizer
from events.services import TierSpec, default_sale_window, event_activate, event_create
from fairqueue.errors import AppError


def _tier(value: str) -> TierSpec:
    try:
        name, price, inventory = value.rsplit(":", 2)
        return TierSpec(name=name, price=int(price), inventory=int(inventory))
    except ValueError as exc:
        raise CommandError(f"--tier must be NAME:PRICE:INVENTORY, got {value!r}") from exc


def _reserved_tier(value: str) -> TierSpec:
    try:
        name, price, rows, per_row = value.rsplit(":", 3)
        return TierSpec.reserved(
            name=name, price=int(price), rows=int(rows), seats_per_row=int(per_row)
        )
    except ValueError as exc:
        raise CommandError(
            f"--reserved-tier must be NAME:PRICE:ROWS:SEATS_PER_ROW, got {value!r}"
        ) from exc


def _when(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise CommandError(f"not an ISO 8601 date-time: {value!r}") from exc
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed, UTC)


class Command(BaseCommand):
    help = "Create an event with tiers; prints one JSON line with the ids."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--tier", action="append", default=[], help="NAME:PRICE:INVENTORY")
        parser.add_argument(
            "--reserved-tier",
            action="append",
            default=[],
            help="NAME:PRICE:ROWS:SEATS_PER_ROW: reserved seating, seats A-1, A-2, ... B-1, ...",
        )
        parser.add_argument("--max-per-customer", type=int, default=1)
        parser.add_argument("--sale-start")
        parser.add_argument("--sale-end")
        parser.add_argument("--prequeue-opens-at")
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument(
            "--window-seconds",
            type=int,
            default=CHOOSE_SECONDS_DEFAULT,
            help="the time to choose of an admitted customer",
        )
        parser.add_argument("--max-active-admitted", type=int, default=5000)
        parser.add_argument(
            "--admit-ahead", action="store_true", help="admit ahead of no-shows near the end"
        )
        parser.add_argument("--activate", action="store_true")
        parser.add_argument("--organizer", default="demo@fairqueue.local", help="Organizer email")

    @transaction.atomic  # bad input leaves nothing behind, not even the organizer
    def handle(self, *args, **o):
        if not o["tier"] and not o["reserved_tier"]:
            raise CommandError("give at least one --tier or --reserved-tier")
        start, end = default_sale_window()
        user, _ = get_user_model().objects.get_or_create(
            username=o["organizer"], defaults={"email": o["organizer"], "is_staff": True}
        )
        organizer, _ = Organizer.objects.get_or_create(name=o["organizer"])
        organizer.members.add(user)
        try:
            event = event_create(
                organizer=organizer,
                name=o["name"],
                sale_start=_when(o["sale_start"]) or start,
                sale_end=_when(o["sale_end"]) or end,
                prequeue_opens_at=_when(o["prequeue_opens_at"]),
                tiers=[_tier(t) for t in o["tier"]]
                + [_reserved_tier(t) for t in o["reserved_tier"]],
                max_tickets_per_customer=o["max_per_customer"],
                admission_batch_size=o["batch_size"],
                admission_window_seconds=o["window_seconds"],
                max_active_admitted=o["max_active_admitted"],
                admit_ahead=o["admit_ahead"],
            )
            if o["activate"]:
                event = event_activate(event_id=event.pk)
        except AppError as exc:
            raise CommandError(f"{exc.message} {json.dumps(exc.details)}") from exc
        tiers = [
            {
                "id": str(t.id),
                "name": t.name,
                "price": t.price,
                "inventory": t.inventory,
                "kind": t.kind,
            }
            for t in event.tiers.all()
        ]
        self.stdout.write(json.dumps({"event_id": str(event.pk), "tiers": tiers}))
