from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('claims', '0004_reservation_moves_to_tickets'),
        ('payments', '0003_webhook_duplicate_event'),
    ]

    operations = [
        migrations.AddField(
            model_name='claim',
            name='payment_in_flight',
            field=models.BooleanField(default=False),
        ),
        migrations.RunSQL(
            sql="""
                UPDATE claims_claim AS c SET payment_in_flight = true
                WHERE c.status = 'CLAIMED' AND EXISTS (
                    SELECT 1 FROM payments_payment AS p
                    WHERE p.claim_id = c.id AND p.status IN ('INITIALIZING', 'PENDING')
                )
            """,
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
