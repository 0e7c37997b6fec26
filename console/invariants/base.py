"""What a check is, and the registry every check module adds itself to.

A check looks at one event (or, for ``scope=DATABASE``, at the whole
database) and lists the problems it found; no problem is a pass, and its
summary says what was looked at. Checks only read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.db import connection

from events.models import Event


class When(StrEnum):
    """When a check must hold."""

    # At every moment, even in the middle of a sale under full load.
    ALWAYS = "always"
    # Once the sale is quiet and beat has caught up (reconciliation, expiry):
    # nothing in flight, Redis rebuilt. Asked for with ``settled=True``.
    SETTLED = "settled"
    # Once every ticket is sold. Asked for with ``sold_out=True``.
    SOLD_OUT = "sold_out"


class Scope(StrEnum):
    EVENT = "event"
    DATABASE = "database"


@dataclass(frozen=True)
class Options:
    now: datetime
    # Deadlines (admission windows, claim expiry) count as missed only this
    # long after they passed: beat runs every few seconds, not continuously.
    grace_seconds: float = 0.0


@dataclass
class Found:
    """What a check function answers: the problems (none = pass), what it
    looked at when all is well, and figures for machines."""

    problems: list[str]
    summary: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Result:
    check: str
    invariant: int
    when: When
    ok: bool
    detail: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "invariant": self.invariant,
            "when": self.when.value,
            "ok": self.ok,
            "detail": self.detail,
            "data": self.data,
        }


@dataclass(frozen=True)
class Check:
    name: str
    invariant: int
    when: When
    scope: Scope
    uses_redis: bool
    function: Callable[..., Found]

    def __call__(self, target: Event | None, options: Options) -> Result:
        found = self.function(options) if target is None else self.function(target, options)
        return Result(
            check=self.name,
            invariant=self.invariant,
            when=self.when,
            ok=not found.problems,
            detail="; ".join(found.problems) if found.problems else found.summary,
            data=found.data,
        )


CHECKS: list[Check] = []


def check(
    *,
    invariant: int,
    when: When = When.ALWAYS,
    scope: Scope = Scope.EVENT,
    uses_redis: bool = False,
) -> Callable[[Callable[..., Found]], Check]:
    """Register a check function under its own name (invariant
    ``invariant`` of docs/DESIGN.md). Event checks take ``(event, options)``, database checks
    ``(options)``."""

    def register(function: Callable[..., Found]) -> Check:
        registered = Check(function.__name__, invariant, when, scope, uses_redis, function)
        CHECKS.append(registered)
        return registered

    return register


# --- reading Postgres ----------------------------------------------------------------


def rows(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def value(sql: str, params: Sequence[Any]) -> Any:
    return rows(sql, params)[0][0]


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {words or word + 's'}"
