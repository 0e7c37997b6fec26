"""One mailbox, whatever its spelling.

Sign-in now refuses quoted local parts, address literals and dotless
domains, and stores an international domain in ASCII (IDNA,
customers/emails.py). Rows made before may spell one mailbox twice:
``"bob"@x.test`` beside ``bob@x.test``, ``ada@exämple.com`` beside
``ada@xn--exmple-cua.com``. As in 0003, no row is merged or deleted (claims,
payments and tickets are history); the younger spelling points at the
mailbox's customer (``superseded_by``), so sign-in finds one customer.

- ``email_canonical`` unquotes a quoted local part (Postgres cannot alter a
  generated column: dropped and added again, the constraint around it too);
- a non-ASCII domain is rewritten to ASCII where that spelling is free;
- every mailbox's oldest row stays its customer, younger rows point at it
  (0003's rule, again over the new canonical form);
- a row whose ASCII spelling was taken keeps its address (``email`` is
  unique) and points at the customer that spelling signs in as.

0006 adds the constraint back (Postgres refuses an ALTER TABLE in the
transaction that just updated rows with a deferred foreign key).
"""

from django.db import migrations, models
from django.db.models import Case, CharField, F, Func, Value, When
from django.db.models.functions import (
    Coalesce,
    Concat,
    Length,
    Lower,
    NullIf,
    Replace,
    StrIndex,
    Substr,
    Trim,
)
from django.db.models.lookups import Exact, In, Regex


def email_canonical_sql():
    """customers/emails.py's ``email_canonical_sql("email")``, frozen here."""
    text = CharField()
    address = Lower(Trim(F("email")), output_field=text)
    quoted = Func(address, Value("@[^@]*$"), Value(""), function="REGEXP_REPLACE", output_field=text)
    inside = Func(
        Substr(quoted, 2, Length(quoted) - 2),
        Value(r"\\(.)"),
        Value(r"\1"),
        Value("g"),
        function="REGEXP_REPLACE",
        output_field=text,
    )
    local = Case(
        When(Regex(quoted, r'^".*"$'), then=Coalesce(NullIf(inside, Value("")), quoted)),
        default=quoted,
        output_field=text,
    )
    domain = Func(address, Value("^.*@"), Value(""), function="REGEXP_REPLACE", output_field=text)
    plain = Func(local, Value("+"), Value(1), function="SPLIT_PART", output_field=text)
    untagged = Coalesce(NullIf(plain, Value("")), local)
    undotted = Coalesce(NullIf(Replace(untagged, Value("."), Value("")), Value("")), untagged)
    return Case(
        When(Exact(StrIndex(address, Value("@")), 0), then=address),
        When(Exact(quoted, Value("")), then=address),
        When(In(domain, ["gmail.com", "googlemail.com"]), then=Concat(undotted, Value("@gmail.com"))),
        default=Concat(untagged, Value("@"), domain),
        output_field=CharField(max_length=254),
    )


EMAIL_CANONICAL = models.GeneratedField(
    expression=email_canonical_sql(),
    output_field=models.CharField(max_length=254),
    db_persist=True,
)


def _ascii(email):
    local, _, domain = email.rpartition("@")
    return f"{local}@{domain.encode('idna').decode('ascii')}"


def _non_ascii(Customer):
    return [c for c in Customer.objects.only("id", "email") if not c.email.isascii()]


def ascii_domains(apps, schema_editor):
    Customer = apps.get_model("core", "Customer")
    for customer in _non_ascii(Customer):
        try:
            spelt = _ascii(customer.email)
        except UnicodeError:
            continue  # no ASCII form: nobody can sign in as it any more
        if not Customer.objects.filter(email=spelt).exists():
            Customer.objects.filter(pk=customer.pk).update(email=spelt)


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
              AND c.superseded_by_id IS DISTINCT FROM k.keeper
            """  # noqa: S608 - the table name comes from the model
        )


def ascii_twins(apps, schema_editor):
    Customer = apps.get_model("core", "Customer")
    for customer in _non_ascii(Customer):
        try:
            twin = Customer.objects.filter(email=_ascii(customer.email)).first()
        except UnicodeError:
            continue
        if twin is None:
            continue
        keeper = twin.superseded_by_id or twin.pk
        Customer.objects.filter(pk=customer.pk).update(superseded_by=keeper)
        Customer.objects.filter(superseded_by=customer.pk).update(superseded_by=keeper)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0004_customer_one_per_mailbox"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="customer", name="customer_one_per_mailbox"),
        migrations.RemoveField(model_name="customer", name="email_canonical"),
        migrations.AddField(model_name="customer", name="email_canonical", field=EMAIL_CANONICAL),
        migrations.RunPython(ascii_domains, migrations.RunPython.noop),
        migrations.RunPython(supersede, migrations.RunPython.noop),
        migrations.RunPython(ascii_twins, migrations.RunPython.noop),
    ]
