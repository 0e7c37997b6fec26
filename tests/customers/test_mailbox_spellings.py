"""One mailbox, one customer, however it is spelt: quoted local parts,
address literals and dotless domains are refused at sign-in, an
international domain is one customer in either spelling, and rows made
before these rules meet their twin through the migration."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from customers.emails import email_canonical, email_normalize
from customers.models import Customer, OneTimeCode
from tests.support.sales import admit_directly, claim_one, on_sale
from tests.support.signin import REQUEST_URL, sign_in

pytestmark = pytest.mark.django_db

REFUSED = [
    '"bob"@x.test',  # the same mailbox as bob@x.test at every real server
    '"e\\rin"@x.test',  # a quoted-pair: erin@x.test
    '"b o b"@x.test',
    "root@localhost",  # dotless: nobody's public mailbox
    "ops@intranet",
    "x@[127.0.0.1]",  # address literals: a mail server picked by the sender
    "x@[::1]",
]


@pytest.mark.parametrize("address", REFUSED)
def test_quoted_literal_and_dotless_addresses_are_refused_and_nothing_is_sent(
    api, mailoutbox, address
):
    answer = api.post(REQUEST_URL, {"email": address}, format="json")

    assert answer.status_code == 422, answer.content
    assert answer.json()["error"]["code"] == "validation_error"
    assert list(answer.json()["error"]["details"]["fields"]) == ["email"]
    assert len(mailoutbox) == 0
    assert OneTimeCode.objects.count() == 0


def test_quoting_a_mailbox_buys_no_second_ticket(api, mailoutbox):
    """The review's way round "one per customer": bob@ buys, then "bob"@
    signed in as a new customer and bought again."""
    tier = on_sale(tickets=5)
    bob = sign_in(api, mailoutbox, "bob@x.test")
    claim_one(tier, admit_directly(tier.event, [Customer.objects.get(pk=bob)])[0])

    quoted = api.post(REQUEST_URL, {"email": '"bob"@x.test'}, format="json")

    assert quoted.status_code == 422
    assert len(mailoutbox) == 1  # bob's own code only
    assert Customer.objects.count() == 1


def test_quoted_spellings_never_multiply_one_mailboxs_codes(api, mailoutbox, settings):
    """5 codes an hour per mailbox: the quoted spellings of erin@ used to
    count as other mailboxes (15 codes in one inbox)."""
    settings.OTP_EMAIL_LIMITS = "5/hour"
    spellings = ["erin@x.test", '"erin"@x.test', '"e\\rin"@x.test', "ERIN@x.test"]

    answers = Counter(
        api.post(REQUEST_URL, {"email": spellings[i % 4]}, format="json").status_code
        for i in range(12)
    )

    assert answers == Counter({422: 6, 202: 5, 429: 1})
    assert len(mailoutbox) == 5
    assert {m.to[0] for m in mailoutbox} == {"erin@x.test"}


def test_an_international_domain_is_one_customer_in_either_spelling(api, mailoutbox):
    unicode_first = sign_in(api, mailoutbox, "ada@exämple.com")
    ascii_again = sign_in(api, mailoutbox, "ada@xn--exmple-cua.com")

    assert ascii_again == unicode_first
    [customer] = Customer.objects.all()
    assert customer.email == "ada@xn--exmple-cua.com"  # stored and mailed in ASCII
    assert {m.to[0] for m in mailoutbox} == {"ada@xn--exmple-cua.com"}


def test_normalize_puts_the_domain_in_ascii_and_leaves_the_rest():
    assert email_normalize("  Ada@EXÄMPLE.com ") == "ada@xn--exmple-cua.com"
    assert email_normalize("ada@example.com") == "ada@example.com"
    assert email_canonical(email_normalize('"Ada"@ExÄmple.com')) == "ada@xn--exmple-cua.com"


# --- the migration: rows made before the rules ---------------------------------------

BEFORE = ("core", "0004_customer_one_per_mailbox")


@pytest.mark.django_db(transaction=True)
def test_the_migration_joins_quoted_and_international_spellings_to_their_mailbox(api, mailoutbox):
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    OldCustomer = executor.loader.project_state([BEFORE]).apps.get_model("core", "Customer")
    now = timezone.now()
    rows = [
        ("bob@x.test", now - timedelta(days=3)),  # the oldest: bob's mailbox
        ('"bob"@x.test', now - timedelta(days=2)),
        ('"b\\ob"@x.test', now - timedelta(days=1)),
        ("ada@exämple.com", now - timedelta(days=2)),  # no ASCII twin: spelt in ASCII
        ("eve@müller.de", now - timedelta(days=2)),
        ("eve@xn--mller-kva.de", now - timedelta(days=5)),  # the twin is older: kept
    ]
    ids = {}
    for email, created in rows:
        row = OldCustomer.objects.create(id=uuid.uuid4(), email=email)
        OldCustomer.objects.filter(pk=row.pk).update(created_at=created)
        ids[email] = row.pk
    before = dict(OldCustomer.objects.values_list("email", "email_canonical"))

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    after = {
        ids[email]: row
        for email in ids
        for row in Customer.objects.filter(pk=ids[email]).values_list(
            "email", "email_canonical", "superseded_by_id"
        )
    }
    assert before['"bob"@x.test'] == '"bob"@x.test'  # two customers for one mailbox before
    assert after == {
        ids["bob@x.test"]: ("bob@x.test", "bob@x.test", None),
        ids['"bob"@x.test']: ('"bob"@x.test', "bob@x.test", ids["bob@x.test"]),
        ids['"b\\ob"@x.test']: ('"b\\ob"@x.test', "bob@x.test", ids["bob@x.test"]),
        ids["ada@exämple.com"]: ("ada@xn--exmple-cua.com", "ada@xn--exmple-cua.com", None),
        # Its ASCII spelling is taken (email is unique): kept as typed, and
        # superseded by the customer that spelling signs in as.
        ids["eve@müller.de"]: ("eve@müller.de", "eve@müller.de", ids["eve@xn--mller-kva.de"]),
        ids["eve@xn--mller-kva.de"]: ("eve@xn--mller-kva.de", "eve@xn--mller-kva.de", None),
    }
    assert sign_in(api, mailoutbox, "bob@x.test") == str(ids["bob@x.test"])
    assert sign_in(api, mailoutbox, "eve@MÜLLER.de") == str(ids["eve@xn--mller-kva.de"])
    assert Customer.objects.count() == 6
