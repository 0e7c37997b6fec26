import os
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand
from django.db import transaction

from events.models import Event, Organizer
from events.services import TierSpec, default_sale_window, event_activate, event_create

DEMO_USERS = {"admin": "DEMO_ADMIN_PASSWORD", "organizer": "DEMO_ORGANIZER_PASSWORD"}

DEMO_SLUG = "burna-boy-live-in-lagos"
ORGANIZER_GROUP = "Organizers"
ORGANIZER_PERMISSIONS = [
    ("events", "event", ("add", "change", "view")),
    ("events", "tickettier", ("add", "change", "view", "delete")),
    # The console's orders and buyers lists ("change" = release unpaid orders).
    ("console", "order", ("view", "change")),
    ("console", "buyer", ("view",)),
    # Their payments and refunds: read, and refund ("change"); the
    # stuck-payment tools are platform staff's (fairqueue/adminscope.py).
    ("payments", "payment", ("view", "change")),
    ("payments", "refund", ("view",)),
    # The waiting list and the returns of their events, read-only.
    ("console", "waitinglistentry", ("view",)),
    ("console", "return", ("view",)),
]


def ensure_organizer_group() -> Group:
    group, _ = Group.objects.get_or_create(name=ORGANIZER_GROUP)
    for app_label, model, actions in ORGANIZER_PERMISSIONS:
        for action in actions:
            group.permissions.add(
                Permission.objects.get(
                    content_type__app_label=app_label, codename=f"{action}_{model}"
                )
            )
    return group


class Command(BaseCommand):
    help = (
        "Create (once) the demo admin, organizer login and event; give the two logins "
        "fresh random passwords (or DEMO_ADMIN_PASSWORD / DEMO_ORGANIZER_PASSWORD) and "
        "print how to reach them."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--quiet",
            action="store_true",
            help="Print only `event <id>` and `<login> <password>` lines (`make run` prints "
            "its own banner once every process listens).",
        )

    @transaction.atomic
    def handle(self, *args, **options):
        users = get_user_model().objects
        # A fresh random password on every run, unless one is given: a demo
        # reachable by others never has a password anyone can guess.
        passwords = {
            login: os.environ.get(var) or secrets.token_urlsafe(12)
            for login, var in DEMO_USERS.items()
        }
        admin_user = users.filter(username="admin").first()
        if admin_user is None:
            admin_user = users.create_superuser("admin", "admin@fairqueue.local", None)
        organizer_user = users.filter(username="organizer").first()
        if organizer_user is None:
            organizer_user = users.create_user(
                "organizer", "organizer@fairqueue.local", None, is_staff=True
            )
        for user in (admin_user, organizer_user):
            user.set_password(passwords[user.username])
            user.save(update_fields=["password"])
        organizer_user.groups.add(ensure_organizer_group())
        organizer, _ = Organizer.objects.get_or_create(name="Demo Promotions")
        organizer.members.add(organizer_user)

        event = Event.objects.filter(slug=DEMO_SLUG).first()
        if event is None:
            start, end = default_sale_window()
            event = event_create(
                organizer=organizer,
                name="Burna Boy Live in Lagos",
                description="Demo flash sale: 5,000 tickets in three tiers, the VVIP seats "
                "chosen on the seat map.",
                venue="Eko Convention Centre, Lagos",
                # The show: two days after the sale closes, 8 pm in Lagos.
                starts_at=(end + timedelta(days=2)).replace(
                    hour=19, minute=0, second=0, microsecond=0
                ),
                sale_start=start,
                sale_end=end,
                tiers=[
                    TierSpec("Regular", 5_000_000, 4_000),
                    TierSpec("VIP", 25_000_000, 800),
                    TierSpec.reserved(name="VVIP", price=100_000_000, rows=10, seats_per_row=20),
                ],
                admission_batch_size=200,
            )
            transaction.on_commit(lambda: event_activate(event_id=event.pk))

        if options["quiet"]:
            self.stdout.write(f"event {event.pk}")
            for login, var in DEMO_USERS.items():
                self.stdout.write(f"{login} {shown_password(login, var, passwords)}")
            return
        port = os.environ.get("PORT", "8000")
        ws_port = os.environ.get("WS_PORT", "8001")
        shown = {login: shown_password(login, var, passwords) for login, var in DEMO_USERS.items()}
        lines = [
            "",
            "FairQueue is starting:",
            f"  site        http://localhost:{port}/",
            f"  admin       http://localhost:{port}/admin/",
            f"              superuser: admin / {shown['admin']}",
            f"              organizer: organizer / {shown['organizer']}",
            f"  API docs    http://localhost:{port}/api/docs/",
            f"  health      http://localhost:{port}/healthz",
            f"  WebSocket   ws://localhost:{ws_port}/ws/events/<event_id>/queue/?ticket=<ticket>"
            "  (POST /api/v1/events/<event_id>/queue/ws-ticket/)",
            f"  demo event  {event.pk}",
            "",
        ]
        self.stdout.write("\n".join(lines))


def shown_password(login: str, var: str, passwords: dict[str, str]) -> str:
    """A password given through the environment is not echoed."""
    return f"${var}" if os.environ.get(var) else passwords[login]
