"""What every app shares: customers, their one-time sign-in codes, and the
stored answers behind ``Idempotency-Key``."""

import uuid

from django.db import models


class Customer(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["email"]

    def __str__(self) -> str:
        return self.email


class OneTimeCode(models.Model):
    """An emailed sign-in code. Only its hash is stored."""

    email = models.EmailField(db_index=True)
    code_hash = models.CharField(max_length=128)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    attempts = models.PositiveSmallIntegerField(default=0)
    consumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["email", "-created_at"])]

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
