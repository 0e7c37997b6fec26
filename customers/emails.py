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
  googlemail.com is gmail.com (Google ignores dots there);
- a quoted local part is its unquoted mailbox (``"bob"@`` and ``"b\\ob"@``
  are ``bob@``, as RFC 5321 reads them).

Sign-in takes only the one spelling of a mailbox that leaves nothing to
canonicalise by guesswork (``mailbox_validator``): no quoted local part, no
address literal (``x@[127.0.0.1]``), no dotless domain (``root@localhost``);
an international domain is stored and mailed in its ASCII form (IDNA), so
``exämple.com`` and ``xn--exmple-cua.com`` are one mailbox. Unquoting in the
canonical form covers rows made before these rules (the migration joined
them to their mailbox).
"""

from __future__ import annotations

import re

from django.core.validators import EmailValidator
from django.db.models import Case, CharField, Expression, F, Func, Value, When
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

GMAIL_DOMAINS = frozenset({"gmail.com", "googlemail.com"})
_QUOTED = re.compile(r'^"(.*)"\Z', re.DOTALL)
_QUOTED_PAIR = re.compile(r"\\(.)", re.DOTALL)
_ATOM = r"[-!#$%&'*+/=?^_`{}|~0-9A-Z]+"  # RFC 5322's atext, as Django's validator has it


def _unquoted(local: str) -> str:
    quoted = _QUOTED.match(local)
    if quoted is None:
        return local
    return _QUOTED_PAIR.sub(r"\1", quoted[1]) or local


def email_canonical(email: str) -> str:
    """``" Ada.Lovelace+tickets@GoogleMail.com "`` -> ``adalovelace@gmail.com``."""
    address = email.strip().lower()
    local, at, domain = address.rpartition("@")
    if not at or not local:
        return address
    local = _unquoted(local)
    local = local.split("+", 1)[0] or local
    if domain in GMAIL_DOMAINS:
        local = local.replace(".", "") or local
        domain = "gmail.com"
    return f"{local}@{domain}"


def email_normalize(email: str) -> str:
    """Where mail is sent and what is stored: the address as typed, trimmed,
    lower-cased, its domain in ASCII (``exämple.com`` -> ``xn--exmple-cua.com``).
    The address has passed ``mailbox_validator``."""
    address = email.strip().lower()
    local, at, domain = address.rpartition("@")
    if not at or domain.isascii():
        return address
    return f"{local}@{domain.encode('idna').decode('ascii')}"


class MailboxValidator(EmailValidator):
    """Django's email check without the spellings that let one mailbox pass
    as several customers, or that name no public mailbox: quoted local parts
    (dot-atom only), address literals and dotless domains (``localhost``
    included)."""

    message = "Enter an address of the form name@example.com."
    user_regex = re.compile(rf"^{_ATOM}(\.{_ATOM})*\Z", re.IGNORECASE)  # dot-atom only
    domain_allowlist: list[str] = []

    def validate_domain_part(self, domain_part: str) -> bool:
        if not self.domain_regex.match(domain_part):
            return False
        try:  # the ASCII form it will be mailed to must exist
            domain_part.encode("idna")
        except UnicodeError:
            return False
        return True


mailbox_validator = MailboxValidator()


def email_canonical_sql(field: str = "email") -> Expression:
    """``email_canonical`` as a Postgres expression, for the generated
    column ``Customer.email_canonical``: every row gets it, however it was
    inserted (bulk loads and fixtures included). Same rules as
    ``email_canonical`` for any address that passed email validation;
    tests/customers/test_emails.py compares the two."""
    text = CharField()
    address = Lower(Trim(F(field)), output_field=text)
    # The local part as stored (quotes and all), then without them.
    quoted = Func(
        address, Value("@[^@]*$"), Value(""), function="REGEXP_REPLACE", output_field=text
    )
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
        When(In(domain, sorted(GMAIL_DOMAINS)), then=Concat(undotted, Value("@gmail.com"))),
        default=Concat(untagged, Value("@"), domain),
        output_field=CharField(max_length=254),
    )
