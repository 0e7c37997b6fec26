"""Every code the API answers with is a member of ``ErrorCode`` (the
schema's ErrorCodeEnum), and no code is written any other way: the source of
every app is read, so a new ``code="..."`` or an ``ErrorCode`` member nobody
uses fails here before a client sees it."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from fairqueue import errors
from fairqueue.errors import AppError, ErrorCode

ROOT = Path(__file__).resolve().parents[2]
APPS = [
    "config", "fairqueue", "customers", "inventory", "events", "queueing", "claims", "ledger",
    "payments", "storefront", "console",
]  # fmt: skip


def sources() -> Iterator[tuple[Path, ast.Module]]:
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text(), filename=str(path))


def all_subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= all_subclasses(sub)
    return found


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"


def is_code_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def test_every_error_class_has_a_code_of_the_enum():
    for app in APPS:  # every module, so that every AppError subclass exists
        package = importlib.import_module(app)
        for module in pkgutil.walk_packages(package.__path__, f"{app}."):
            if ".migrations" not in module.name:
                importlib.import_module(module.name)
    classes = all_subclasses(AppError) | {AppError}

    assert {cls for cls in classes if not isinstance(cls.code, ErrorCode)} == set()
    # One error style: a service raises the status's class with a code of the
    # enum; a subclass of its own only where a caller catches it by type.
    assert {cls.__qualname__ for cls in classes} == {
        "AppError", "InvalidInput", "Unauthenticated", "Forbidden", "NotFound", "Conflict",
        "InvalidTransition", "Gone", "RateLimited", "Busy", "PayloadTooLarge",
        "RedisUnavailable",  # caught by the beat tasks' per-event loops
    }  # fmt: skip


def test_the_drf_errors_map_to_codes_of_the_enum():
    assert all(isinstance(code, ErrorCode) for _, _, code in errors._DRF_CODES)


def string_codes(tree: ast.Module) -> Iterator[ast.AST]:
    """Codes written as strings: ``code="..."`` as a keyword or a class
    attribute, ``x.code == "..."``, ``json_error("...", ...)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "code" and is_code_literal(node.value):
            yield node.value
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named_code = any(getattr(t, "id", None) == "code" for t in targets)
            if named_code and node.value is not None and is_code_literal(node.value):
                yield node
        elif isinstance(node, ast.Compare) and getattr(node.left, "attr", None) == "code":
            if any(is_code_literal(c) for c in node.comparators):
                yield node
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "json_error"
            and node.args
            and is_code_literal(node.args[0])
        ):
            yield node


def test_no_code_is_written_as_a_string():
    """``code="sold_out"`` must be ``code=ErrorCode.SOLD_OUT``: then the
    enum, and so the schema, has every code."""
    found = [where(path, node) for path, tree in sources() for node in string_codes(tree)]
    assert found == []


def test_the_scan_finds_codes_written_as_strings():
    tree = ast.parse(
        "class Late(AppError):\n    code = 'late'\n"
        "raise Gone('x', code='sold_out_again')\n"
        "if exc.code == 'admission_expired': pass\n"
        "json_error('nope', 'x', 400)\n"
        "raise Gone('x', code=ErrorCode.SOLD_OUT)\n"
    )
    assert sorted(node.lineno for node in string_codes(tree)) == [2, 3, 4, 5]


def test_every_code_named_in_the_source_exists_and_every_member_is_used():
    named: dict[str, list[str]] = {}
    for path, tree in sources():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "ErrorCode"
            ):
                named.setdefault(node.attr, []).append(where(path, node))

    unknown = {name: at for name, at in named.items() if name not in ErrorCode.__members__}
    assert unknown == {}
    unused = set(ErrorCode.__members__) - set(named)
    assert unused == set(), "members no code raises: remove them or raise them"


@pytest.mark.parametrize("code", list(ErrorCode))
def test_codes_are_stable_snake_case(code):
    assert code.value == code.name.lower()
    assert code.value.replace("_", "").isalpha()
