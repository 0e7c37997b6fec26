"""What every app shares: customers, their one-time sign-in codes, and the
stored answers behind ``Idempotency-Key``."""

import uuid

from django.db import models

from customers.emails import email_canonical_sql


class Customer(models.Model):
    """One per mailbox: sign-in looks customers up by ``email_canonical``
    (customers/emails.py), so ``ada+2@`` is ``ada@``. ``email`` is the address
    as first typed, where mail goes.

    Rows made before canonical lookup existed may share a mailbox; the
    migration kept them all and points the younger ones at the oldest
    (``superseded_by``): sign-in resolves to the one row without it, and only
    such rows are unique per mailbox."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(unique=True)
    email_canonical = models.GeneratedField(
        expression=email_canonical_sql("email"),
        output_field=models.CharField(max_length=254),
        db_persist=True,
    )
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Part of every customer token: "sign out everywhere" bumps it, and every
    # token minted before stops working (customers/revocation.py).
    token_version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["email"]
        constraints = [
            models.UniqueConstraint(
                fields=["email_canonical"],
                condition=models.Q(superseded_by__isnull=True),
                name="customer_one_per_mailbox",
            )
        ]

    def __str__(self) -> str:
        return self.email


class OneTimeCode(models.Model):
    """An emailed sign-in code, bound to the client that asked for it: only
    a verify carrying that request's nonce can use (or spend attempts on)
    it. Only hashes of the code and the nonce are stored; ``email`` is the
    canonical address."""

    email = models.EmailField(db_index=True)
    nonce_hash = models.CharField(max_length=64, default="")
    code_hash = models.CharField(max_length=128)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    attempts = models.PositiveSmallIntegerField(default=0)
    consumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["email", "-created_at"]),
            models.Index(fields=["email", "nonce_hash", "-created_at"], name="otp_email_nonce"),
        ]

    def __str__(self) -> str:
        return f"code for {self.email}"


class IdempotencyKey(models.Model):
    """One stored answer per (customer, scope, key): a retry with the same key
    and body gets the same answer; the same key with another body is refused."""

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    scope = models.CharField(max_length=64)
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(null=True)
    response_body = models.JSONField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["customer", "scope", "key"], name="idempotency_key_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.scope}:{self.key}"


class RevokedToken(models.Model):
    """A customer token signed out before its expiry (by its ``jti``). Kept
    until the token would have expired anyway, then purged."""

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    jti = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"revoked {self.jti}"
