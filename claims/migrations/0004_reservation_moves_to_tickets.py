# The reservation id now lives on the ticket rows (inventory/migrations/0002,
# which copied it there first).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('claims', '0003_claim_reservation'),
        ('inventory', '0002_ticket_reservation'),
    ]

    operations = [
        migrations.RemoveIndex(model_name='claim', name='claim_reservation'),
        migrations.RemoveField(model_name='claim', name='reservation_id'),
    ]
