"""``Idempotency-Key`` for POSTs that create things (claims, payments).

The first request with a key inserts the key row in its own transaction and
becomes its owner; only the owner runs the handler, then stores the answer.
Later requests with the same key and the same body get that stored answer
(status and body); the same key with another body is 422
``idempotency_mismatch``; a request that arrives while the owner is still
working waits briefly for the answer, then gets 409 ``idempotency_in_progress``
with ``Retry-After``. So concurrent requests with one key have one effect.

Transient answers (5xx, or anything with ``Retry-After``: busy, rate limited,
in progress) are not stored: the key is freed so a retry runs again. A key
whose owner died mid-request is taken over once it is ``STALE_SECONDS`` old.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from datetime import timedelta
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from customers.authentication import customer_of
from customers.models import IdempotencyKey
from fairqueue.db import prepared_cursor
from fairqueue.errors import (
    AppError,
    Conflict,
    ErrorCode,
    InvalidInput,
    Unauthenticated,
    exception_handler,
)
from fairqueue.schema import IDEMPOTENCY_HEADER

HEADER = IDEMPOTENCY_HEADER
MAX_KEY_LENGTH = 255
WAIT_SECONDS = 2.0
POLL_SECONDS = 0.05
STALE_SECONDS = 60
_UNIQUE = "idempotency_key_unique"

# The header as OpenAPI documents it: what this module accepts: printable ASCII, blanks only inside.
IDEMPOTENCY_KEY = OpenApiParameter(
    HEADER,
    {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_KEY_LENGTH,
        "pattern": r"^[!-~]([ -~]*[!-~])?$",
    },
    OpenApiParameter.HEADER,
    required=False,
    description="Same key and body: the same answer; same key, other body: 422.",
)


def request_fingerprint(request: Request) -> str:
    """What must match for a stored answer to be replayed: method, path and
    the parsed body (key order does not matter)."""
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), cls=DjangoJSONEncoder)
    raw = f"{request.method}\n{request.path}\n{body}".encode()
    return hashlib.sha256(raw).hexdigest()


def idempotent(scope: str) -> Callable:
    """Decorator for an APIView handler method (``def post(self, request, ...)``).
    Without the header the handler runs as usual."""

    def decorator(handler: Callable[..., Response]) -> Callable[..., Response]:
        @functools.wraps(handler)
        def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
            key = request.headers.get(HEADER)
            if key is None:
                return handler(view, request, *args, **kwargs)
            return idempotent_response(
                scope=scope,
                key=key,
                customer_id=customer_of(request).pk,
                fingerprint=request_fingerprint(request),
                run=lambda: handler(view, request, *args, **kwargs),
                context={"view": view, "request": request},
            )

        return wrapper

    return decorator


def idempotent_response(
    *,
    scope: str,
    key: str,
    customer_id: uuid.UUID | str,
    fingerprint: str,
    run: Callable[[], Response],
    context: dict[str, Any],
) -> Response:
    key = key.strip()
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable() or not key.isascii():
        raise InvalidInput(
            f"The {HEADER} header must be 1 to {MAX_KEY_LENGTH} printable ASCII characters.",
            code=ErrorCode.INVALID_IDEMPOTENCY_KEY,
        )
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        row, owner = _claim_key(scope=scope, key=key, customer_id=customer_id, fp=fingerprint)
        if owner:
            return _run_as_owner(row, run, context)
        if row.request_hash != fingerprint:
            raise InvalidInput(
                f"This {HEADER} was used with another request.",
                code=ErrorCode.IDEMPOTENCY_MISMATCH,
            )
        if row.response_status is not None:
            return _replay(row)
        if _take_over_if_stale(row):
            return _run_as_owner(row, run, context)
        if time.monotonic() >= deadline:
            raise Conflict(
                "A request with this Idempotency-Key is still being processed.",
                code=ErrorCode.IDEMPOTENCY_IN_PROGRESS,
                retry_after=1,
            )
        time.sleep(POLL_SECONDS)


def _claim_key(
    *, scope: str, key: str, customer_id: uuid.UUID | str, fp: str
) -> tuple[IdempotencyKey, bool]:
    """Insert the key row, committed on its own (one statement, or a
    savepoint inside a caller's transaction): the winner owns the key.
    Returns (row, owner); the row may be gone again (a freed key)."""
    row = IdempotencyKey(
        customer_id=customer_id, scope=scope, key=key, request_hash=fp, created_at=timezone.now()
    )
    # Plain values psycopg adapts as they are (a UUID, text, NULLs, an aware
    # datetime): no field's preparation per request.
    values = [getattr(row, f.attname) for f in _KEY_FIELDS]
    savepoint = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with savepoint, prepared_cursor() as cursor:
            cursor.execute(_CLAIM_KEY_SQL, values)
            inserted = cursor.fetchone()
    except IntegrityError as exc:  # the customer's row is gone (the only other refusal)
        raise Unauthenticated("Unknown customer.", code=ErrorCode.INVALID_TOKEN) from exc
    if inserted is not None:
        row.pk = inserted[0]
        row._state.adding = False
        row._state.db = connection.alias
        return row, True
    existing = IdempotencyKey.objects.filter(customer_id=customer_id, scope=scope, key=key).first()
    if existing is None:  # freed by its owner in between: try to own it
        return _claim_key(scope=scope, key=key, customer_id=customer_id, fp=fp)
    return existing, False


_KEY_FIELDS = [f for f in IdempotencyKey._meta.concrete_fields if not f.primary_key]
# The key row in one statement, written once (names from the model, values
# always parameters); a key someone else holds inserts nothing.
_CLAIM_KEY_SQL = (
    f"INSERT INTO {IdempotencyKey._meta.db_table} "  # noqa: S608
    f"({', '.join(f'{chr(34)}{f.column}{chr(34)}' for f in _KEY_FIELDS)}) "
    f"VALUES ({', '.join(['%s'] * len(_KEY_FIELDS))}) "
    f"ON CONFLICT ON CONSTRAINT {_UNIQUE} DO NOTHING RETURNING id"
)


def _take_over_if_stale(row: IdempotencyKey) -> bool:
    cutoff = timezone.now() - timedelta(seconds=STALE_SECONDS)
    return bool(
        IdempotencyKey.objects.filter(
            pk=row.pk, response_status__isnull=True, created_at__lt=cutoff
        ).update(created_at=timezone.now())
    )


def _run_as_owner(
    row: IdempotencyKey, run: Callable[[], Response], context: dict[str, Any]
) -> Response:
    try:
        response = run()
    except AppError as exc:
        handled = exception_handler(exc, context)
        assert handled is not None  # an AppError always becomes its envelope
        response = handled
    except BaseException:
        IdempotencyKey.objects.filter(pk=row.pk, response_status__isnull=True).delete()
        raise
    if response.status_code >= 500 or response.has_header("Retry-After"):
        IdempotencyKey.objects.filter(pk=row.pk, response_status__isnull=True).delete()
        return response
    body = _stored_body(response.data)
    with prepared_cursor() as cursor:
        cursor.execute(_STORE_ANSWER_SQL, [response.status_code, body, row.pk])
    return response


# The answer stored on the key row (every claim and payment start sends it):
# written once, not compiled per request; the body is sent as JSON text.
_STORE_ANSWER_SQL = (
    f"UPDATE {IdempotencyKey._meta.db_table} "  # noqa: S608
    "SET response_status = %s, response_body = %s::jsonb WHERE id = %s AND response_status IS NULL"
)


def _stored_body(data: Any) -> str:
    """The answer's body as JSON text, encoded once. ``json.dumps`` writes
    U+0000 as the escape ``\\u0000``, which jsonb refuses: only a text holding
    that sequence is decoded and cleaned (``_without_nul``)."""
    text = json.dumps(data, cls=DjangoJSONEncoder)
    if "\\u0000" in text:
        text = json.dumps(_without_nul(json.loads(text)))
    return text


def _without_nul(value: Any) -> Any:
    """Postgres jsonb cannot hold U+0000, which an error answer may echo back
    (e.g. the names of unknown fields): store U+FFFD instead."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


def _replay(row: IdempotencyKey) -> Response:
    return Response(
        row.response_body, status=row.response_status, headers={"Idempotent-Replayed": "true"}
    )
