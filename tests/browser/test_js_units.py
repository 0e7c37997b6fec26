"""The pages' pure ES modules (position maths, the line state's rules, ETA
text, countdown, the waiting room's state machine, the seat map's rules),
unit-tested in headless Chromium: the tests/js/*.test.js files, loaded by
tests/js/runner.html."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver

from tests.support.browser import chromium, repo_files, wait_for

pytestmark = pytest.mark.slow

JS_TESTS = sorted(p.name for p in (Path(__file__).parents[1] / "js").glob("*.test.js"))


@pytest.fixture(scope="module")
def page() -> Iterator[tuple[webdriver.Chrome, str]]:
    with repo_files() as base, chromium() as driver:
        yield driver, base


def test_every_pure_module_has_its_tests():
    assert JS_TESTS == [
        "attention.test.js",
        "countdown.test.js",
        "eta.test.js",
        "holds.test.js",
        "line.test.js",
        "live.test.js",
        "machine.test.js",
        "position.test.js",
        "seatmap.test.js",
    ]


@pytest.mark.parametrize("name", JS_TESTS)
def test_js_module(page, name):
    driver, base = page
    driver.get(f"{base}/tests/js/runner.html?file={name}")
    results = wait_for(
        driver, lambda d: d.execute_script("return window.__results"), 20, f"{name} to finish"
    )
    failed = [f"{r['name']}: {r.get('error')}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)
    assert len(results) >= 4, results  # a file that registered nothing would pass vacuously
