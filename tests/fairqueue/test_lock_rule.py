"""Every row lock goes through the lock module (fairqueue/locks.py), read
from the source of every app:

- ``select_for_update(`` is called only in fairqueue/locks.py;
- a row-lock clause in SQL text (``FOR UPDATE``, ``FOR NO KEY UPDATE``,
  ``FOR SHARE``, ``FOR KEY SHARE``) is written only there.

Two kinds of lock may stay beside the code that takes them, each named below:
batch scans that never wait (``skip_locked=True`` / ``SKIP LOCKED`` written
at the lock itself), and the join's ``FOR KEY SHARE`` (the lock its foreign
key takes anyway). Docstrings are prose and not read; migrations are frozen
history and not read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
APPS = [
    "config", "fairqueue", "customers", "inventory", "events", "queueing", "claims", "ledger",
    "payments", "storefront", "console",
]  # fmt: skip
LOCK_MODULE = Path("fairqueue/locks.py")

# Function or constant -> what it scans. Each never waits for a row.
SKIP_LOCKED_SCANS = {
    "_expire_unpaid_batch": "claims expiry: due unpaid claims",
    "payments_due": "payments reconciliation: due live payments",
    "refunds_due": "refund reconciliation: due open refunds",
    "_REMOVE_FREE_SQL": "a tier made smaller: free ticket rows to delete",
    "seats_set_blocked": "seats blocked or unblocked: free seats",
    "PICK_FREE_SQL": "a claim's free ticket rows",
    "_CLAIM_ADMITTED_SQL": "a claim's free ticket rows (the claim's one statement)",
    "claim_insert_after_sale": "a claim after the sale: free ticket rows on resale",
    "_ADMIT_SQL": "the admission tick: the next waiting queue entries",
}
# Locks that are not ours to take elsewhere: named, with why.
OTHER_LOCKS = {
    "_EVENT_LIVE_SQL": "the join's INSERT: FOR KEY SHARE, the lock its foreign key takes anyway",
}

LOCK_CLAUSE = re.compile(r"\bFOR\s+(?:NO\s+KEY\s+UPDATE|UPDATE|KEY\s+SHARE|SHARE)\b", re.I)
SKIP_LOCKED = re.compile(r"\bSKIP\s+LOCKED\b", re.I)


def sources() -> Iterator[tuple[Path, str]]:
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path.relative_to(ROOT), path.read_text()


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _named(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Every node with the name it belongs to: its function, else the
    module-level constant it is assigned to."""
    for top in tree.body:
        if isinstance(top, ast.Assign | ast.AnnAssign):
            targets = top.targets if isinstance(top, ast.Assign) else [top.target]
            name = next((t.id for t in targets if isinstance(t, ast.Name)), "<module>")
            for node in ast.walk(top):
                yield name, node
        elif isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for inner in ast.walk(top):
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    for node in ast.walk(inner):
                        yield inner.name, node
        else:
            for node in ast.walk(top):
                yield "<module>", node


def _skips(call: ast.Call) -> bool:
    return any(
        k.arg == "skip_locked" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in call.keywords
    )


def violations(path: Path, source: str) -> list[str]:
    """Where ``source`` takes a row lock outside the lock module and the
    exceptions named above."""
    if path == LOCK_MODULE:
        return []
    tree = ast.parse(source)
    prose = _docstrings(tree)
    found = []
    for name, node in _named(tree):
        where = f"{path}:{getattr(node, 'lineno', '?')} ({name})"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "select_for_update"
            and not (name in SKIP_LOCKED_SCANS and _skips(node))
        ):
            found.append(f"{where}: select_for_update")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in prose
            and LOCK_CLAUSE.search(node.value)
            and name not in OTHER_LOCKS
            and not (name in SKIP_LOCKED_SCANS and SKIP_LOCKED.search(node.value))
        ):
            found.append(f"{where}: {LOCK_CLAUSE.search(node.value).group(0)}")
    return sorted(set(found))


def test_no_row_lock_is_taken_outside_the_lock_module():
    found = [v for path, source in sources() for v in violations(path, source)]
    assert found == []


def test_every_named_exception_still_exists():
    """A name left here after its code went would let a new lock of that
    name in unseen."""
    text = "\n".join(source for _, source in sources())
    gone = [name for name in {**SKIP_LOCKED_SCANS, **OTHER_LOCKS} if name not in text]
    assert gone == []


def test_the_scan_finds_every_way_of_taking_a_row_lock():
    """Written into a product module, each of these is found."""
    source = '''
"""A docstring may say SELECT ... FOR UPDATE: prose."""

def payment_peek(pk):
    return Payment.objects.select_for_update().get(pk=pk)

def refunds_due():
    waits = Refund.objects.select_for_update(skip_locked=False)
    skips = Refund.objects.select_for_update(skip_locked=True)

def scan_not_named():
    return Claim.objects.select_for_update(skip_locked=True)

_RAW_SQL = f"SELECT id FROM t WHERE x = %s FOR NO KEY UPDATE"
_SHARE_SQL = "SELECT 1 FROM t for share"
PICK_FREE_SQL = "SELECT id FROM t LIMIT 1 FOR UPDATE"
_ADMIT_SQL = "SELECT id FROM t FOR UPDATE SKIP LOCKED"

def not_a_lock():
    return "waiting FOR UPDATES to land"
'''
    found = violations(Path("payments/services/example.py"), source)
    at = sorted(
        (int(line.split(":")[1].split(" ")[0]), line.split("(")[1].split(")")[0])
        for line in found
    )
    assert at == [
        (5, "payment_peek"), (8, "refunds_due"), (12, "scan_not_named"), (14, "_RAW_SQL"),
        (15, "_SHARE_SQL"), (16, "PICK_FREE_SQL"),
    ]  # fmt: skip
    assert violations(LOCK_MODULE, source) == []
