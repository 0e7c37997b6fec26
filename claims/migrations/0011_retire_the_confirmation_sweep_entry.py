"""Deletes the beat entry ``confirmation-emails-sweep``, which ``emails-sweep``
(one sweep for every email whose task can be lost) replaces.
django-celery-beat's database scheduler adds the entries config/celery.py
names but never deletes one: left, beat would send a task that no longer
exists every few minutes."""

from django.db import migrations

OLD_ENTRY = "confirmation-emails-sweep"


def delete_old_entry(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=OLD_ENTRY).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0010_return_end_reason_and_emails_sent"),
        ("django_celery_beat", "__latest__"),
    ]

    operations = [migrations.RunPython(delete_old_entry, migrations.RunPython.noop)]
