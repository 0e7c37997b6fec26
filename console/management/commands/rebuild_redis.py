import json

from django.core.management.base import BaseCommand

from console.services import redis_rebuild


class Command(BaseCommand):
    help = "Rebuild Redis (inventory counters, waiting and admitted sets) from Postgres."

    def add_arguments(self, parser):
        parser.add_argument("--event", dest="event_id", help="Only this event id.")

    def handle(self, *args, event_id=None, **options):
        report = redis_rebuild(event_id=event_id)
        self.stdout.write(json.dumps(report, default=str))
