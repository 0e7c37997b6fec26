"""The docs keep up with the project: every relative link and image in
README.md and docs/*.md resolves to a file (and an ``#anchor`` to a heading
of that file), and every environment variable the project reads is in
docs/CONFIGURATION.md."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONFIGURATION = ROOT / "docs" / "CONFIGURATION.md"

# CommonMark as GitHub renders these pages (tables included), so a link in a
# code span or block is no link, as a reader sees it.
MARKDOWN = MarkdownIt("commonmark").enable("table")


def _tokens(page: Path) -> list[Token]:
    return MARKDOWN.parse(page.read_text(encoding="utf-8"))


def _inline_children(page: Path) -> Iterator[Token]:
    for token in _tokens(page):
        yield from token.children or ()


def links(page: Path) -> list[str]:
    """Every link target and image source of ``page``."""
    found = []
    for child in _inline_children(page):
        if child.type == "link_open":
            found.append(str(child.attrs["href"]))
        elif child.type == "image":
            found.append(str(child.attrs["src"]))
    return found


def slug(text: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces
    to hyphens."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of ``page``'s headings, repeated ones numbered as GitHub
    numbers them (``name``, ``name-1``, ...)."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    for opening, inline in pairwise(_tokens(page)):
        if opening.type != "heading_open":
            continue
        words = (c.content for c in inline.children or () if c.type in ("text", "code_inline"))
        base = slug("".join(words))
        seen = counts.get(base, 0)
        counts[base] = seen + 1
        found.add(f"{base}-{seen}" if seen else base)
    return found


def broken_links(page: Path) -> list[str]:
    problems = []
    for target in links(page):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:  # http(s), mailto: outside this repository
            continue
        path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not path.exists():
            problems.append(f"{target}: no such file")
        elif parts.fragment and path.suffix == ".md" and parts.fragment not in anchors(path):
            problems.append(f"{target}: no heading #{parts.fragment} in {path.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_the_link_check_sees_links_images_and_anchors():
    """Guards the check itself: the README's links, its screenshot and the
    anchors of a page are all found (a parser that saw nothing would pass)."""
    readme = links(ROOT / "README.md")
    assert "docs/CONFIGURATION.md" in readme
    assert any(target.startswith("docs/img/") for target in readme)
    assert {"the-invariants", "request-lanes"} <= anchors(ROOT / "docs" / "DESIGN.md")


def test_a_broken_link_and_a_broken_anchor_are_reported(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# Here\n\n## Twice\n\n## Twice\n")
    page.write_text(
        "[ok](there.md#here) [ok](there.md#twice-1) [ok](#a-title) [out](https://example.com/x)\n"
        "[gone](missing.md) ![gone](img/none.png) [bad](there.md#nowhere)\n"
        "`[not a link](missing.md)`\n\n# A title\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "img/none.png: no such file",
        "there.md#nowhere: no heading #nowhere in there.md",
    ]


# --- every environment variable is documented -------------------------------------------

# Where the project reads its environment: django-environ (env.bool("X"), env("X"),
# "X" in env), os.environ (.get, .setdefault, [...]), the devstack's copy of it
# (env.get / env.setdefault / env["X"] on a dict named env), and compose (${X...}).
_READS = [
    re.compile(r"""\b(?:env|os\.environ)(?:\.\w+)?\(\s*["']([A-Z][A-Z0-9_]+)["']"""),
    re.compile(r"""\b(?:env|os\.environ)\[\s*["']([A-Z][A-Z0-9_]+)["']\s*\]"""),
    re.compile(r"""["']([A-Z][A-Z0-9_]+)["']\s+(?:not\s+)?in\s+(?:env|os\.environ)\b"""),
]
_COMPOSE = re.compile(r"\$\{([A-Z][A-Z0-9_]+)")
# The safety checks name the variables they refuse ("PAYSTACK_SECRET_KEY is not set").
_NAMED = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b")
# The system's, not ours.
NOT_OURS = {"PATH", "PYTHONUNBUFFERED"}
SKIPPED_DIRS = {".venv", "tests", "bench", "migrations", "node_modules", "docs"}


def project_sources() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).parts
        if not any(part in SKIPPED_DIRS or part.startswith(".") for part in relative):
            yield path


def variables_read() -> set[str]:
    found: set[str] = set()
    for path in project_sources():
        text = path.read_text(encoding="utf-8")
        for pattern in _READS:
            found.update(pattern.findall(text))
    found.update(_COMPOSE.findall((ROOT / "docker-compose.yml").read_text(encoding="utf-8")))
    safety = (ROOT / "config" / "safety.py").read_text(encoding="utf-8")
    constants = set(re.findall(r"^([A-Z][A-Z0-9_]+)\s*=", safety, flags=re.MULTILINE))
    found.update(set(_NAMED.findall(safety)) - constants)
    return found - NOT_OURS


def documented() -> set[str]:
    """Names in the code spans of docs/CONFIGURATION.md."""
    spans = [c.content for c in _inline_children(CONFIGURATION) if c.type == "code_inline"]
    return {name for span in spans for name in re.findall(r"[A-Z][A-Z0-9_]+", span)}


def test_the_variable_scan_finds_every_kind_of_read():
    """Guards the scan: a variable of each source is found."""
    found = variables_read()
    assert {
        "DATABASE_URL",  # "X" not in env, env.db("X")
        "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS",  # env.bool( on the next line
        "WEB_HOST",  # os.environ.get("X")
        "WEB_LOG_LEVEL",
        "SANDBOX_PORT",  # env["X"] on the devstack's dict
        "SANDBOX_CONTROL_TOKEN",  # env.get("X") on the devstack's dict
        "POSTGRES_PASSWORD",  # docker-compose.yml
        "EMAIL_BACKEND",  # named by config/safety.py
    } <= found


def test_every_environment_variable_is_in_the_configuration_page():
    assert sorted(variables_read() - documented()) == []
