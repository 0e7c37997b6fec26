"""Customers that turn out to share a mailbox.

Before this, ``ada@gmail.com``, ``Ada+2@gmail.com`` and ``a.da@gmail.com``
could each be a customer of their own (and each buy "one ticket per
customer"). From now on sign-in looks customers up by the canonical address
(``email_canonical``, which Postgres computed for every row in 0002), so
those rows all mean one mailbox. We do NOT merge or delete any of them:
their claims, payments and tickets are history that staff may need, and
tokens already handed out keep naming their own row until they expire.
Instead, within each mailbox the OLDEST row (``created_at``, then ``id``: a
total order, so the choice is the same on every run and every replica) stays
the mailbox's customer, and every younger row gets ``superseded_by``
pointing at it. Sign-in then always resolves to the oldest row, and the
unique constraint of 0004 (one row per mailbox among those not superseded)
keeps it that way. Staff find the superseded rows in the admin. One UPDATE,
no rows read into Python.
"""

from django.db import migrations


def supersede(apps, schema_editor):
    Customer = apps.get_model("core", "Customer")
    table = schema_editor.quote_name(Customer._meta.db_table)
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {table} AS c SET superseded_by_id = k.keeper
            FROM (
                SELECT id, first_value(id) OVER (
                    PARTITION BY email_canonical ORDER BY created_at, id
                ) AS keeper
                FROM {table}
            ) AS k
            WHERE c.id = k.id AND k.keeper <> c.id
            """  # noqa: S608 - the table name comes from the model
        )


def unsupersede(apps, schema_editor):
    apps.get_model("core", "Customer").objects.update(superseded_by=None)


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0002_signin_hardening_fields"),
    ]

    operations = [migrations.RunPython(supersede, unsupersede)]
