"""Signing customer tokens out before they expire.

Postgres is the truth: ``Customer.token_version`` (every token carries the
version it was minted with; "sign out everywhere" bumps it) and
``RevokedToken`` (one row per signed-out token, by ``jti``). Redis caches
both per customer in one hash (``fq:auth:{<customer_id>}``: ``v`` and
``r:<jti>``), so the hot path costs one ``HMGET`` round trip and no database
read. The hash lives AUTH_STATE_TTL seconds and is then read again from
Postgres, so a Redis write lost in an outage leaves a signed-out token
working for at most that long; a wiped Redis costs one Postgres read per
customer on their next request; with Redis down every request reads Postgres
(one indexed query) and sign-out still holds.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from customers.models import Customer, RevokedToken
from customers.tokens import CustomerPrincipal, customer_token_verify
from fairqueue.db import prepared_cursor
from fairqueue.errors import ErrorCode, Unauthenticated
from fairqueue.redis import RedisStore, best_effort

logger = logging.getLogger(__name__)

AUTH_STATE_TTL = 300  # seconds a cached sign-out state is trusted


class AuthStateStore(RedisStore):
    scripts_dir = Path(__file__).parent / "lua"
    script_names = ("auth_load", "auth_version")

    @staticmethod
    def key(customer_id: object) -> str:
        return f"fq:auth:{{{customer_id}}}"

    @best_effort(None)
    def read(self, *, customer_id: object, jti: str) -> tuple[int, bool] | None:
        """(version, this jti revoked), or None when Redis does not know."""
        return self.parse(self.r.hmget(self.key(customer_id), self.fields(jti)))

    @staticmethod
    def fields(jti: str) -> list[str]:
        """What ``read`` reads of the hash (``key``): a caller may read them
        in its own round trip and hand the values to ``parse``."""
        return ["v", f"r:{jti}"]

    @staticmethod
    def parse(reply: list) -> tuple[int, bool] | None:
        version, revoked = reply
        if version is None:
            return None
        return int(version), revoked is not None

    @best_effort(None)
    def load(self, *, customer_id: object, version: int, revoked: list[str]) -> None:
        self.scripts["auth_load"](
            keys=[self.key(customer_id)], args=self.fill_args(version, revoked)
        )

    @staticmethod
    def fill_args(version: int, revoked: list[str]) -> list[Any]:
        """What ``load`` caches (``lua/auth_fill.lua``): a caller may cache
        the state in a script of its own round trip (the queue join)."""
        return [version, AUTH_STATE_TTL, *revoked]

    @best_effort(None)
    def revoke(self, *, customer_id: object, jti: str) -> None:
        key = self.key(customer_id)
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(key, f"r:{jti}", "1")
        pipe.expire(key, AUTH_STATE_TTL)
        pipe.execute()

    @best_effort(None)
    def version_raise(self, *, customer_id: object, version: int) -> None:
        self.scripts["auth_version"](
            keys=[self.key(customer_id)], args=[version, AUTH_STATE_TTL]
        )


_store: AuthStateStore | None = None


def auth_state_store() -> AuthStateStore:
    global _store
    if _store is None:
        _store = AuthStateStore()
    return _store


def _revoked_sql(customer: str) -> str:
    """The revoked jtis not yet expired of the customer whose id is ``customer``."""
    return (
        f"ARRAY(SELECT r.jti FROM {RevokedToken._meta.db_table} r "  # noqa: S608
        f"WHERE r.customer_id = {customer} AND r.expires_at > now())"
    )


def _state_sql() -> str:
    return (
        f"SELECT c.token_version, {_revoked_sql('c.id')} "  # noqa: S608
        f"FROM {Customer._meta.db_table} c WHERE c.id = %s"
    )


def _state_from_postgres(customer_id: uuid.UUID) -> tuple[int, list[str]] | None:
    """(token version, revoked jtis not yet expired), in one statement: the
    first request of a customer whose state Redis does not hold pays it."""
    with prepared_cursor() as cursor:
        cursor.execute(_state_sql(), [customer_id])
        row = cursor.fetchone()
    return None if row is None else (row[0], list(row[1]))


def auth_state_warm(*, customer_id: uuid.UUID) -> None:
    """Cache the customer's sign-out state now (signing in calls it), so the
    first requests after it do not each read Postgres."""
    state = _state_from_postgres(customer_id)
    if state is not None:
        auth_state_store().load(customer_id=customer_id, version=state[0], revoked=state[1])


def customer_token_authenticate(token: str) -> CustomerPrincipal:
    """``customer_token_verify`` plus sign-out: 401 ``token_revoked`` for a
    token signed out, or older than the customer's last "sign out everywhere"."""
    return customer_signed_in(customer_token_verify(token))


def customer_signed_in(principal: CustomerPrincipal) -> CustomerPrincipal:
    """The sign-out check of a verified token, from the state Redis caches
    (Postgres when it does not know): 401 ``token_revoked`` when signed out."""
    cached = auth_state_store().read(customer_id=principal.id, jti=principal.jti)
    return customer_token_settle(principal, cached)


def signed_in_sql() -> str:
    """The sign-out check as a boolean SQL expression, true while the token is
    not signed out and its customer exists, over the parameters
    ``%(customer_id)s``, ``%(token_version)s`` and ``%(jti)s``
    (``signed_in_params``): a write that must not happen for a signed-out
    token checks it in its own statement, against Postgres, the truth (the
    queue join). A write it refused says why with
    ``customer_token_settle(principal, None)``."""
    customers, revoked = Customer._meta.db_table, RevokedToken._meta.db_table
    return (
        f"EXISTS (SELECT 1 FROM {customers} c "  # noqa: S608
        "WHERE c.id = %(customer_id)s AND c.token_version <= %(token_version)s "
        f"AND NOT EXISTS (SELECT 1 FROM {revoked} r "
        "WHERE r.jti = %(jti)s AND r.customer_id = c.id))"
    )


def signed_in_state_sql() -> str:
    """The customer's sign-out state (token version, revoked jtis), as two
    SQL expressions over ``%(customer_id)s``: a statement that checked
    ``signed_in_sql`` returns them for the cache (``AuthStateStore.fill_args``)."""
    return (
        f"(SELECT c.token_version FROM {Customer._meta.db_table} c "  # noqa: S608
        f"WHERE c.id = %(customer_id)s), {_revoked_sql('%(customer_id)s')}"
    )


def signed_in_params(principal: CustomerPrincipal) -> dict[str, object]:
    return {"customer_id": principal.id, "token_version": principal.version, "jti": principal.jti}


def customer_token_settle(
    principal: CustomerPrincipal, cached: tuple[int, bool] | None
) -> CustomerPrincipal:
    """The sign-out decision for a verified token, from its state as Redis
    answered it (``AuthStateStore.read``, or a caller's own read of its
    ``key`` and ``fields``); None: Redis did not know, Postgres decides (and the state is
    cached again)."""
    store = auth_state_store()
    if cached is None:
        state = _state_from_postgres(principal.id)
        if state is None:
            raise Unauthenticated("Unknown customer.", code=ErrorCode.INVALID_TOKEN)
        version, revoked_jtis = state
        store.load(customer_id=principal.id, version=version, revoked=revoked_jtis)
        revoked = principal.jti in revoked_jtis
    else:
        version, revoked = cached
    if revoked or principal.version < version:
        raise Unauthenticated("This token was signed out.", code=ErrorCode.TOKEN_REVOKED)
    return principal


def customer_token_revoke(*, principal: CustomerPrincipal) -> None:
    """Sign out the token ``principal`` came with. A token without a ``jti``
    (minted before tokens had one) cannot be told apart from the customer's
    others: all of them are signed out. Idempotent."""
    if not principal.jti:
        customer_tokens_revoke_all(customer_id=principal.id)
        return
    expires_at: datetime = principal.expires_at or timezone.now()
    with transaction.atomic():
        RevokedToken.objects.get_or_create(
            jti=principal.jti, defaults={"customer_id": principal.id, "expires_at": expires_at}
        )
        transaction.on_commit(
            lambda: auth_state_store().revoke(customer_id=principal.id, jti=principal.jti)
        )


def customer_tokens_revoke_all(*, customer_id: uuid.UUID) -> int:
    """Sign out every token of the customer ("sign out everywhere"): the
    token version goes up by one; returns the new version."""
    with transaction.atomic():
        updated = Customer.objects.filter(pk=customer_id).update(
            token_version=F("token_version") + 1
        )
        if not updated:
            raise Unauthenticated("Unknown customer.", code=ErrorCode.INVALID_TOKEN)
        version = Customer.objects.values_list("token_version", flat=True).get(pk=customer_id)
        transaction.on_commit(
            lambda: auth_state_store().version_raise(customer_id=customer_id, version=version)
        )
    logger.info("customer %s signed out everywhere (token version %d)", customer_id, version)
    return version
