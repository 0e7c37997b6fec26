"""Fields for bound sign-in codes, revocable tokens and one customer per
mailbox. Schema only; 0003 marks customers that share a mailbox, 0004 adds the
constraint (separate migrations: Postgres refuses an ALTER TABLE in the
transaction that just updated rows with a deferred foreign key)."""

import django.db.models.deletion
import django.db.models.functions.comparison
import django.db.models.functions.text
import django.db.models.lookups
from django.db import migrations, models

EMAIL_CANONICAL = models.GeneratedField(
    db_persist=True,
    expression=models.Case(
        models.When(
            django.db.models.lookups.Exact(
                django.db.models.functions.text.StrIndex(
                    django.db.models.functions.text.Lower(
                        django.db.models.functions.text.Trim(models.F("email")),
                        output_field=models.CharField(),
                    ),
                    models.Value("@"),
                ),
                0,
            ),
            then=django.db.models.functions.text.Lower(
                django.db.models.functions.text.Trim(models.F("email")),
                output_field=models.CharField(),
            ),
        ),
        models.When(
            django.db.models.lookups.Exact(
                models.Func(
                    django.db.models.functions.text.Lower(
                        django.db.models.functions.text.Trim(models.F("email")),
                        output_field=models.CharField(),
                    ),
                    models.Value("@[^@]*$"),
                    models.Value(""),
                    function="REGEXP_REPLACE",
                    output_field=models.CharField(),
                ),
                models.Value(""),
            ),
            then=django.db.models.functions.text.Lower(
                django.db.models.functions.text.Trim(models.F("email")),
                output_field=models.CharField(),
            ),
        ),
        models.When(
            django.db.models.lookups.In(
                models.Func(
                    django.db.models.functions.text.Lower(
                        django.db.models.functions.text.Trim(models.F("email")),
                        output_field=models.CharField(),
                    ),
                    models.Value("^.*@"),
                    models.Value(""),
                    function="REGEXP_REPLACE",
                    output_field=models.CharField(),
                ),
                ["gmail.com", "googlemail.com"],
            ),
            then=django.db.models.functions.text.Concat(
                django.db.models.functions.comparison.Coalesce(
                    django.db.models.functions.comparison.NullIf(
                        django.db.models.functions.text.Replace(
                            django.db.models.functions.comparison.Coalesce(
                                django.db.models.functions.comparison.NullIf(
                                    models.Func(
                                        models.Func(
                                            django.db.models.functions.text.Lower(
                                                django.db.models.functions.text.Trim(
                                                    models.F("email")
                                                ),
                                                output_field=models.CharField(),
                                            ),
                                            models.Value("@[^@]*$"),
                                            models.Value(""),
                                            function="REGEXP_REPLACE",
                                            output_field=models.CharField(),
                                        ),
                                        models.Value("+"),
                                        models.Value(1),
                                        function="SPLIT_PART",
                                        output_field=models.CharField(),
                                    ),
                                    models.Value(""),
                                ),
                                models.Func(
                                    django.db.models.functions.text.Lower(
                                        django.db.models.functions.text.Trim(models.F("email")),
                                        output_field=models.CharField(),
                                    ),
                                    models.Value("@[^@]*$"),
                                    models.Value(""),
                                    function="REGEXP_REPLACE",
                                    output_field=models.CharField(),
                                ),
                            ),
                            models.Value("."),
                            models.Value(""),
                        ),
                        models.Value(""),
                    ),
                    django.db.models.functions.comparison.Coalesce(
                        django.db.models.functions.comparison.NullIf(
                            models.Func(
                                models.Func(
                                    django.db.models.functions.text.Lower(
                                        django.db.models.functions.text.Trim(models.F("email")),
                                        output_field=models.CharField(),
                                    ),
                                    models.Value("@[^@]*$"),
                                    models.Value(""),
                                    function="REGEXP_REPLACE",
                                    output_field=models.CharField(),
                                ),
                                models.Value("+"),
                                models.Value(1),
                                function="SPLIT_PART",
                                output_field=models.CharField(),
                            ),
                            models.Value(""),
                        ),
                        models.Func(
                            django.db.models.functions.text.Lower(
                                django.db.models.functions.text.Trim(models.F("email")),
                                output_field=models.CharField(),
                            ),
                            models.Value("@[^@]*$"),
                            models.Value(""),
                            function="REGEXP_REPLACE",
                            output_field=models.CharField(),
                        ),
                    ),
                ),
                models.Value("@gmail.com"),
            ),
        ),
        default=django.db.models.functions.text.Concat(
            django.db.models.functions.comparison.Coalesce(
                django.db.models.functions.comparison.NullIf(
                    models.Func(
                        models.Func(
                            django.db.models.functions.text.Lower(
                                django.db.models.functions.text.Trim(models.F("email")),
                                output_field=models.CharField(),
                            ),
                            models.Value("@[^@]*$"),
                            models.Value(""),
                            function="REGEXP_REPLACE",
                            output_field=models.CharField(),
                        ),
                        models.Value("+"),
                        models.Value(1),
                        function="SPLIT_PART",
                        output_field=models.CharField(),
                    ),
                    models.Value(""),
                ),
                models.Func(
                    django.db.models.functions.text.Lower(
                        django.db.models.functions.text.Trim(models.F("email")),
                        output_field=models.CharField(),
                    ),
                    models.Value("@[^@]*$"),
                    models.Value(""),
                    function="REGEXP_REPLACE",
                    output_field=models.CharField(),
                ),
            ),
            models.Value("@"),
            models.Func(
                django.db.models.functions.text.Lower(
                    django.db.models.functions.text.Trim(models.F("email")),
                    output_field=models.CharField(),
                ),
                models.Value("^.*@"),
                models.Value(""),
                function="REGEXP_REPLACE",
                output_field=models.CharField(),
            ),
        ),
        output_field=models.CharField(max_length=254),
    ),
    output_field=models.CharField(max_length=254),
)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_initial"),
    ]

    operations = [
        # Computed by Postgres from ``email`` for every row, existing ones
        # included (customers/emails.py: email_canonical_sql; frozen here).
        migrations.AddField(
            model_name="customer",
            name="email_canonical",
            field=EMAIL_CANONICAL,
        ),
        migrations.AddField(
            model_name="customer",
            name="superseded_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="core.customer",
            ),
        ),
        migrations.AddField(
            model_name="customer",
            name="token_version",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="onetimecode",
            name="nonce_hash",
            field=models.CharField(default="", max_length=64),
        ),
        migrations.CreateModel(
            name="RevokedToken",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("jti", models.CharField(max_length=64, unique=True)),
                ("expires_at", models.DateTimeField(db_index=True)),
                (
                    "customer",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, to="core.customer"
                    ),
                ),
            ],
        ),
    ]
