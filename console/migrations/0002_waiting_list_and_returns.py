from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0001_initial"),
        ("claims", "0011_retire_the_confirmation_sweep_entry"),
        ("queueing", "0006_waitlist_offer_emailed"),
    ]

    operations = [
        migrations.CreateModel(
            name="Return",
            fields=[],
            options={
                "verbose_name": "return",
                "proxy": True,
                "indexes": [],
                "constraints": [],
            },
            bases=("claims.ticketreturn",),
        ),
        migrations.CreateModel(
            name="WaitingListEntry",
            fields=[],
            options={
                "verbose_name": "waiting list entry",
                "verbose_name_plural": "waiting list",
                "proxy": True,
                "indexes": [],
                "constraints": [],
            },
            bases=("queueing.waitlistentry",),
        ),
    ]
