from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0005_one_mailbox_whatever_its_spelling"),
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
    ]
