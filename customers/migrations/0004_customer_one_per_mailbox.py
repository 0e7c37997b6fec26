from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0003_customers_sharing_a_mailbox"),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="customer",
            constraint=models.UniqueConstraint(
                condition=models.Q(("superseded_by__isnull", True)),
                fields=("email_canonical",),
                name="customer_one_per_mailbox",
            ),
        ),
        migrations.AddIndex(
            model_name="onetimecode",
            index=models.Index(fields=["email", "nonce_hash", "-created_at"], name="otp_email_nonce"),
        ),
    ]
