"""A tiny, pure state-machine helper shared by the apps' domain modules.

No Django import: the rules read like the design's diagrams and are tested
without a database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum


class IllegalTransition(Exception):
    def __init__(self, machine: str, source: str, target: str) -> None:
        self.machine, self.source, self.target = machine, source, target
        super().__init__(f"{machine}: {source} -> {target} is not allowed")


class StateMachine:
    def __init__(self, name: str, transitions: Mapping[StrEnum, Iterable[StrEnum]]) -> None:
        self.name = name
        self.transitions = {src: frozenset(dsts) for src, dsts in transitions.items()}

    def can(self, source: str, target: str) -> bool:
        return any(src == source and target in dsts for src, dsts in self.transitions.items())

    def check(self, source: str, target: str) -> None:
        if not self.can(source, target):
            raise IllegalTransition(self.name, str(source), str(target))

    def sources_of(self, target: str) -> list[str]:
        """Every state that may move to ``target``: the WHERE clause of a
        conditional UPDATE."""
        return [str(src) for src, dsts in self.transitions.items() if target in dsts]


def choices(enum: type[StrEnum]) -> list[tuple[str, str]]:
    return [(member.value, member.value.replace("_", " ").title()) for member in enum]
