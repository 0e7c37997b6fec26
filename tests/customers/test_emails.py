"""One mailbox, one customer: canonical emails, the Postgres column that
computes the same thing, sign-in through plus-tags and dots, and the
migration's rule for customers that already share a mailbox."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from customers.emails import email_canonical
from customers.models import Customer
from tests.support.sales import admit_directly, claim_one, on_sale
from tests.support.signin import REQUEST_URL, VERIFY_URL, sign_in

pytestmark = pytest.mark.django_db

CASES = [
    ("Ada@Example.com", "ada@example.com"),
    ("  ada@example.com ", "ada@example.com"),
    ("ada+tickets@example.com", "ada@example.com"),
    ("ada+a+b@example.com", "ada@example.com"),
    ("a.da@example.com", "a.da@example.com"),  # dots only matter at Gmail
    ("A.Da+x@Gmail.com", "ada@gmail.com"),
    ("a.d.a@googlemail.com", "ada@gmail.com"),
    ("ada@GOOGLEMAIL.COM", "ada@gmail.com"),
    ("ada@mail.gmail.com", "ada@mail.gmail.com"),  # not gmail.com itself
    ("+tag@example.com", "+tag@example.com"),  # nothing left but the tag: kept
    ("...@gmail.com", "...@gmail.com"),
    ('"a@b"@example.com', "a@b@example.com"),  # quoted local part: the last @ splits
    ('"bob"@x.test', "bob@x.test"),  # a quoted local part is its unquoted mailbox
    ('"e\\rin"@x.test', "erin@x.test"),  # quoted-pair: \r is r
    ('"B.o.b+x"@Gmail.com', "bob@gmail.com"),
    ('""@x.test', '""@x.test'),  # nothing inside the quotes: kept
    ('"a"b@x.test', '"a"b@x.test'),  # not a quoted string, only quotes in it
    ("o'brien+x@example.ie", "o'brien@example.ie"),
]


@pytest.mark.parametrize(("raw", "canonical"), CASES)
def test_canonical_form(raw, canonical):
    assert email_canonical(raw) == canonical


def test_postgres_computes_the_same_canonical_form_for_every_row():
    """The generated column, however the row was inserted (here: bulk)."""
    seen = {}
    for raw, _ in CASES:
        email = raw.strip().lower()
        [row] = Customer.objects.bulk_create([Customer(email=email)])
        seen[email] = Customer.objects.values_list("email_canonical", flat=True).get(pk=row.pk)
        row.delete()  # one row at a time: several cases are one mailbox
    assert seen == {email: email_canonical(email) for email in seen}
    assert len(seen) == len(CASES) - 1  # two cases differ only in case and blanks


def test_plus_tags_and_gmail_dots_sign_in_as_the_same_customer(api, mailoutbox):
    first = sign_in(api, mailoutbox, "Ada.Lovelace@gmail.com")
    again = [
        sign_in(api, mailoutbox, address)
        for address in ("adalovelace+2@gmail.com", "ada.love.lace@googlemail.com")
    ]

    assert again == [first, first]
    [customer] = Customer.objects.all()
    assert customer.email == "ada.lovelace@gmail.com"  # as first typed
    assert customer.email_canonical == "adalovelace@gmail.com"


def test_the_one_per_customer_limit_holds_across_plus_addresses(api, mailoutbox):
    tier = on_sale(tickets=5)
    customer_id = sign_in(api, mailoutbox, "ada@example.com")
    claim_one(tier, admit_directly(tier.event, [Customer.objects.get(pk=customer_id)])[0])

    plus = sign_in(api, mailoutbox, "ada+2@example.com")
    joined = api.post(
        f"/api/v1/events/{tier.event_id}/queue/",
        HTTP_AUTHORIZATION="Bearer " + _token_of(api, mailoutbox, "ada+3@example.com"),
    )

    assert plus == customer_id
    assert joined.status_code == 409
    assert joined.json()["error"]["code"] == "already_claimed"
    assert Customer.objects.count() == 1


def _token_of(api, mailoutbox, address: str) -> str:
    requested = api.post(REQUEST_URL, {"email": address}, format="json")
    code = mailoutbox[-1].body.split("code is ")[1][:6]
    return api.post(
        VERIFY_URL,
        {"email": address, "code": code, "nonce": requested.json()["nonce"]},
        format="json",
    ).json()["token"]


# --- the migration: customers that already shared a mailbox ------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_every_row_and_resolves_a_mailbox_to_its_oldest(api, mailoutbox):
    executor = MigrationExecutor(connection)
    executor.migrate([("core", "0002_signin_hardening_fields")])
    old_apps = executor.loader.project_state([("core", "0002_signin_hardening_fields")]).apps
    OldCustomer = old_apps.get_model("core", "Customer")
    now = timezone.now()
    rows = [
        ("ada+2@example.com", now - timedelta(days=1)),
        ("ada@example.com", now - timedelta(days=3)),  # the oldest: the one kept
        ("ADA+x@example.com", now - timedelta(days=2)),
        ("bob@example.com", now - timedelta(days=1)),
    ]
    ids = {}
    for email, created in rows:
        row = OldCustomer.objects.create(id=uuid.uuid4(), email=email)
        OldCustomer.objects.filter(pk=row.pk).update(created_at=created)
        ids[email] = row.pk

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    kept = ids["ada@example.com"]
    superseded = dict(Customer.objects.values_list("email", "superseded_by_id"))
    assert superseded == {
        "ada+2@example.com": kept,
        "ada@example.com": None,
        "ADA+x@example.com": kept,
        "bob@example.com": None,
    }
    assert Customer.objects.count() == 4  # nobody merged away
    assert sign_in(api, mailoutbox, "ada+99@example.com") == str(kept)
    assert sign_in(api, mailoutbox, "Ada@Example.com") == str(kept)
    assert Customer.objects.count() == 4
