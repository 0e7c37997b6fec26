"""One mailbox, one customer: the canonical form of an email address.

Written here rather than taken from a library: the one maintained package
for this (email-normalize) looks up the domain's MX records over the network
to guess the provider, which a sign-in request must not wait on. The rules
are few and written down by the providers themselves:

- the whole address is lower-cased (no mainstream provider has
  case-sensitive mailboxes, and RFC 5321's permission for it is not used);
- ``+tag`` is dropped from the local part (Gmail, Outlook, iCloud, Fastmail,
  Proton, Yahoo's ``-`` aside: every large provider delivers ``ada+x@`` to
  ``ada@``);
- dots are dropped from the local part at gmail.com / googlemail.com, and
  googlemail.com is gmail.com (Google ignores dots there).
"""

from __future__ import annotations

from django.db.models import Case, CharField, Expression, F, Func, Value, When
from django.db.models.functions import Coalesce, Concat, Lower, NullIf, Replace, StrIndex, Trim
from django.db.models.lookups import Exact, In

GMAIL_DOMAINS = frozenset({"gmail.com", "googlemail.com"})


def email_canonical(email: str) -> str:
    """``" Ada.Lovelace+tickets@GoogleMail.com "`` -> ``adalovelace@gmail.com``."""
    address = email.strip().lower()
    local, at, domain = address.rpartition("@")
    if not at or not local:
        return address
    local = local.split("+", 1)[0] or local
    if domain in GMAIL_DOMAINS:
        local = local.replace(".", "") or local
        domain = "gmail.com"
    return f"{local}@{domain}"


def email_normalize(email: str) -> str:
    """The address as typed, trimmed and lower-cased: where mail is sent."""
    return email.strip().lower()


def email_canonical_sql(field: str = "email") -> Expression:
    """``email_canonical`` as a Postgres expression, for the generated
    column ``Customer.email_canonical``: every row gets it, however it was
    inserted (bulk loads and fixtures included). Same rules as
    ``email_canonical`` for any address that passed email validation;
    tests/customers/test_emails.py compares the two."""
    text = CharField()
    address = Lower(Trim(F(field)), output_field=text)
    local = Func(address, Value("@[^@]*$"), Value(""), function="REGEXP_REPLACE", output_field=text)
    domain = Func(address, Value("^.*@"), Value(""), function="REGEXP_REPLACE", output_field=text)
    plain = Func(local, Value("+"), Value(1), function="SPLIT_PART", output_field=text)
    untagged = Coalesce(NullIf(plain, Value("")), local)
    undotted = Coalesce(NullIf(Replace(untagged, Value("."), Value("")), Value("")), untagged)
    return Case(
        When(Exact(StrIndex(address, Value("@")), 0), then=address),
        When(Exact(local, Value("")), then=address),
        When(In(domain, sorted(GMAIL_DOMAINS)), then=Concat(undotted, Value("@gmail.com"))),
        default=Concat(untagged, Value("@"), domain),
        output_field=CharField(max_length=254),
    )
