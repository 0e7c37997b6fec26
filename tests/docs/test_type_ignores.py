"""mypy runs on the apps in ``make lint``; a ``type: ignore`` there must name
its error code and say why on the same line (``# type: ignore[code]  # why``),
so an ignore is a decision someone can read, not a silenced warning."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = [
    "config", "fairqueue", "customers", "inventory", "events", "queueing", "claims",
    "payments", "storefront", "console", "devtools",
]  # fmt: skip
IGNORE = re.compile(r"#\s*type:\s*ignore")
EXPLAINED = re.compile(r"#\s*type:\s*ignore\[[a-z-]+(, *[a-z-]+)*\]  # \S")


def unexplained(text: str) -> list[int]:
    return [
        n
        for n, line in enumerate(text.splitlines(), 1)
        if IGNORE.search(line) and not EXPLAINED.search(line)
    ]


def test_every_type_ignore_names_its_code_and_says_why():
    found = {
        str(path.relative_to(ROOT)): lines
        for app in APPS
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts and (lines := unexplained(path.read_text()))
    }
    assert found == {}


def test_the_rule_tells_an_explained_ignore_from_the_others():
    assert unexplained("x = 1  # type: ignore[attr-defined]  # read by a test\n") == []
    assert unexplained("x = 1  # type: ignore[attr-defined, override]  # why\n") == []
    assert unexplained("x = 1  # type: ignore\n") == [1]
    assert unexplained("x = 1  # type: ignore[attr-defined]\n") == [1]
    assert unexplained("x = 1  # type: ignore[attr-defined]  (no hash)\n") == [1]
