# Ticket, moved here from the events app: the table (events_ticket) and its
# index already exist, so this only creates Django's model state.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('claims', '0003_claim_reservation'),
        ('events', '0002_ticket_moves_to_inventory'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Ticket',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('claim', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='tickets', to='claims.claim')),
                        ('tier', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tickets', to='events.tickettier')),
                    ],
                    options={
                        'db_table': 'events_ticket',
                        'indexes': [models.Index(condition=models.Q(('claim__isnull', True)), fields=['tier'], name='ticket_free_by_tier')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
