# The reservation that took a ticket is recorded on the ticket row itself
# (it was on the claim), so inventory reconciliation needs no claims table.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('inventory', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='ticket',
            name='reservation_id',
            field=models.CharField(blank=True, default='', max_length=32),
        ),
        migrations.RunSQL(
            sql="""
                UPDATE events_ticket AS t SET reservation_id = c.reservation_id
                FROM claims_claim AS c
                WHERE t.claim_id = c.id AND c.reservation_id <> ''
            """,
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AddIndex(
            model_name='ticket',
            index=models.Index(condition=models.Q(('reservation_id', ''), _negated=True), fields=['reservation_id'], name='ticket_reservation'),
        ),
    ]
