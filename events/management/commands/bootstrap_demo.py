import os

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand
from django.db import transaction

from events.models import Event, Organizer
from events.services import TierSpec, default_sale_window, event_activate, event_create

DEMO_SLUG = "burna-boy-live-in-lagos"
ORGANIZER_GROUP = "Organizers"
ORGANIZER_PERMISSIONS = [
    ("events", "event", ("add", "change", "view")),
    ("events", "tickettier", ("add", "change", "view", "delete")),
    # The console's orders and buyers lists ("change" = release unpaid orders).
    ("console", "order", ("view", "change")),
    ("console", "buyer", ("view",)),
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
    help = "Create (once) the demo admin, organizer login and event; print how to reach them."

    def add_arguments(self, parser):
        parser.add_argument(
            "--quiet",
            action="store_true",
            help="Print only the demo event's id (`make run` prints its own banner once "
            "every process listens).",
        )

    @transaction.atomic
    def handle(self, *args, **options):
        users = get_user_model().objects
        admin_password = os.environ.get("DEMO_ADMIN_PASSWORD", "admin")
        organizer_password = os.environ.get("DEMO_ORGANIZER_PASSWORD", "organizer")
        if not users.filter(username="admin").exists():
            users.create_superuser("admin", "admin@fairqueue.local", admin_password)
        organizer_user = users.filter(username="organizer").first()
        if organizer_user is None:
            organizer_user = users.create_user(
                "organizer", "organizer@fairqueue.local", organizer_password, is_staff=True
            )
        organizer_user.groups.add(ensure_organizer_group())
        organizer, _ = Organizer.objects.get_or_create(name="Demo Promotions")
        organizer.members.add(organizer_user)

        event = Event.objects.filter(slug=DEMO_SLUG).first()
        if event is None:
            start, end = default_sale_window()
            event = event_create(
                organizer=organizer,
                name="Burna Boy Live in Lagos",
                description="Demo flash sale: 5,000 tickets in three tiers.",
                venue="Eko Convention Centre, Lagos",
                sale_start=start,
                sale_end=end,
                tiers=[
                    TierSpec("Regular", 5_000_000, 4_000),
                    TierSpec("VIP", 25_000_000, 800),
                    TierSpec("VVIP", 100_000_000, 200),
                ],
                admission_batch_size=200,
            )
            transaction.on_commit(lambda: event_activate(event_id=event.pk))

        if options["quiet"]:
            self.stdout.write(str(event.pk))
            return
        port = os.environ.get("PORT", "8000")
        ws_port = os.environ.get("WS_PORT", "8001")
        # Passwords given through the environment are not echoed.
        shown_admin = (
            "$DEMO_ADMIN_PASSWORD" if "DEMO_ADMIN_PASSWORD" in os.environ else admin_password
        )
        shown_org = (
            "$DEMO_ORGANIZER_PASSWORD"
            if "DEMO_ORGANIZER_PASSWORD" in os.environ
            else organizer_password
        )
        lines = [
            "",
            "FairQueue is starting:",
            f"  site        http://localhost:{port}/",
            f"  admin       http://localhost:{port}/admin/",
            f"              superuser: admin / {shown_admin}",
            f"              organizer: organizer / {shown_org}",
            f"  API docs    http://localhost:{port}/api/docs/",
            f"  health      http://localhost:{port}/healthz",
            f"  WebSocket   ws://localhost:{ws_port}/ws/events/<event_id>/queue/?ticket=<ticket>"
            "  (POST /api/v1/events/<event_id>/queue/ws-ticket/)",
            f"  demo event  {event.pk}",
            "",
        ]
        self.stdout.write("\n".join(lines))
