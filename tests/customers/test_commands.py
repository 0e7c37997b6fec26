"""``manage.py mint_customer_tokens``: verified customers and their tokens,
one line each, for load tests."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from customers.models import Customer
from customers.revocation import auth_state_store
from customers.tokens import customer_token_verify

pytestmark = pytest.mark.django_db


def test_mint_customer_tokens_writes_one_verified_line_per_customer(tmp_path):
    output = tmp_path / "tokens.txt"
    out = StringIO()

    call_command(
        "mint_customer_tokens",
        "--count",
        "25",
        "--output",
        str(output),
        "--email-prefix",
        "lt",
        stdout=out,
    )

    lines = output.read_text().splitlines()
    assert len(lines) == 25
    customers = {str(c.id): c.email for c in Customer.objects.all()}
    assert len(customers) == 25
    seen = set()
    for line in lines:
        customer_id, token = line.split(" ")
        principal = customer_token_verify(token)
        assert str(principal.id) == customer_id
        assert principal.email == customers[customer_id]
        # Distinct mailboxes (not lt+1@, lt+2@: those are one customer).
        assert principal.email.startswith("lt-")
        seen.add(customer_id)
        # Cached as signing in leaves it: the first request reads no Postgres.
        assert auth_state_store().read(customer_id=customer_id, jti=principal.jti) == (0, False)
    assert seen == set(customers)


def test_mint_customer_tokens_again_reuses_the_same_customers(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    call_command("mint_customer_tokens", "--count", "3", "--output", str(first), stdout=StringIO())
    call_command("mint_customer_tokens", "--count", "5", "--output", str(second), stdout=StringIO())

    ids_first = {line.split()[0] for line in first.read_text().splitlines()}
    ids_second = {line.split()[0] for line in second.read_text().splitlines()}
    assert ids_first < ids_second
    assert Customer.objects.count() == 5


def test_mint_customer_tokens_needs_a_positive_count(tmp_path):
    with pytest.raises(CommandError):
        call_command(
            "mint_customer_tokens",
            "--count",
            "0",
            "--output",
            str(tmp_path / "x"),
            stdout=StringIO(),
        )
    assert Customer.objects.count() == 0
    assert get_user_model().objects.count() == 0
