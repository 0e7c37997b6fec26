# The Ticket model moved to the inventory app (inventory/migrations/0001). Its
# table stays where it is: only Django's model state changes here.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('events', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name='ticket', name='ticket_free_by_tier'),
                migrations.DeleteModel(name='Ticket'),
            ],
            database_operations=[],
        ),
    ]
