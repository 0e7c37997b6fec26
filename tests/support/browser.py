"""Headless Chromium for the browser tests: Debian's ``chromium`` and
``chromium-driver`` driven by Selenium, offline (no component updates, no
sync, no QUIC, nothing fetched), a fresh profile each time. Missing browser:
the tests fail with what to install, never skip (`make test` installs both
when it runs as root with apt-get).

Also the other processes a page needs: a daphne for the queue WebSocket, and
a static file server for the JavaScript unit tests."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from django.conf import settings
from django.db import connection
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from devtools import devstack

REPO = Path(__file__).resolve().parents[2]
# Screenshots of each state. A test run writes them to a throwaway folder (a
# checkout stays clean after `make test`); `make screenshots` runs the browser
# tests with SCREENSHOTS_DIR=docs/img to refresh the ones the docs show.
SCREENSHOTS = Path(
    os.environ.get("SCREENSHOTS_DIR") or Path(tempfile.gettempdir()) / "fairqueue-screenshots"
)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver", "chromium-driver")
OFFLINE_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-features=Translate,OptimizationHints,MediaRouter",
)


def _which(names: tuple[str, ...], extra: tuple[str, ...] = ()) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return next((path for path in extra if os.access(path, os.X_OK)), None)


def chromium_paths() -> tuple[str, str]:
    browser = _which(BROWSERS)
    driver = _which(DRIVERS, ("/usr/lib/chromium/chromedriver",))
    if not browser or not driver:
        pytest.fail(
            "The browser tests need Debian's chromium and chromium-driver "
            f"(found browser={browser}, driver={driver}). Install them with "
            "`apt-get install -y chromium chromium-driver` (`make test` does it when run as "
            "root); the tests never download a browser.",
            pytrace=False,
        )
    return browser, driver


@contextmanager
def chromium(
    width: int = 1280, height: int = 900, flags: tuple[str, ...] = ()
) -> Iterator[webdriver.Chrome]:
    """``flags``: more of Chromium's switches (a fake camera, say)."""
    browser, driver_path = chromium_paths()
    profile = tempfile.mkdtemp(prefix="fq-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (*OFFLINE_FLAGS, *flags):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.add_argument("--lang=en-GB")
    # The console, for the Content-Security-Policy's refusals (csp_violations).
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.fq_viewport = (width, height)  # type: ignore[attr-defined]  # for new tabs
    try:
        emulate(driver)
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def emulate(driver: webdriver.Chrome) -> None:
    """The tab's viewport, time zone, language and motion preference (CDP
    overrides belong to one tab: call again after opening another)."""
    width, height = driver.fq_viewport  # type: ignore[attr-defined]
    # The viewport itself: a headless window is at least 500 px wide.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )
    # A customer in Lagos with a British English browser: times show in their
    # zone (WAT), and screenshots do not catch a bar mid-animation.
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Africa/Lagos"})
    driver.execute_cdp_cmd("Emulation.setLocaleOverride", {"locale": "en-GB"})
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]},
    )


def new_tab(driver: webdriver.Chrome, url: str) -> str:
    """Open ``url`` in a new tab of the same browser (same storage); returns
    the previous tab's handle."""
    previous = driver.current_window_handle
    driver.switch_to.new_window("tab")
    emulate(driver)
    driver.get(url)
    return previous


def wait_for(
    driver: webdriver.Chrome, predicate: Callable[[Any], Any], timeout: float = 20, what: str = ""
) -> Any:
    try:
        # A page that reloads (the payment page refreshes while pending) leaves stale elements.
        return WebDriverWait(
            driver, timeout, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
        ).until(predicate)
    except TimeoutException:
        shot(driver, "failure-last")
        raise AssertionError(f"timed out waiting for {what or predicate}") from None


def csp_violations(driver: webdriver.Chrome) -> list[str]:
    """What the console said about the Content-Security-Policy since the
    last call (Chromium logs every refusal: an inline script, a script,
    socket, frame or worker from an origin the policy does not list)."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if "Content Security Policy" in entry["message"]
        or "Content-Security-Policy" in entry["message"]
    ]


def text_of(driver: webdriver.Chrome, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def visible_panel(driver: webdriver.Chrome) -> str | None:
    return driver.execute_script(
        "const p = [...document.querySelectorAll('#room [data-panel]')].find(n => !n.hidden);"
        "return p ? p.getAttribute('data-panel') : null;"
    )


def wait_panel(driver: webdriver.Chrome, panel: str, timeout: float = 20) -> None:
    wait_for(driver, lambda d: visible_panel(d) == panel, timeout, f"the {panel!r} panel")


def shot(driver: webdriver.Chrome, name: str) -> Path:
    """A screenshot of the whole page into SCREENSHOTS (docs/img/ with `make screenshots`)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    width = driver.execute_script("return window.innerWidth")
    height = driver.execute_script(
        "return Math.max(document.body.scrollHeight, window.innerHeight)"
    )
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {
            "width": width,
            "height": min(height, 2400),
            "deviceScaleFactor": 1,
            "mobile": width < 600,
        },
    )
    try:
        driver.save_screenshot(str(path))
    finally:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {
                "width": width,
                "height": driver.get_window_size()["height"],
                "deviceScaleFactor": 1,
                "mobile": width < 600,
            },
        )
    return path


# --- the queue WebSocket: a real daphne on the test database -------------------------------


def child_env() -> dict[str, str]:
    """This session's settings for a child process: the test database (not
    the one DATABASE_URL names), the same Redis and signing keys."""
    db = urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + connection.settings_dict["NAME"])
    return {
        **os.environ,
        "DATABASE_URL": db.geturl(),
        "DJANGO_DEBUG": "true",
        "DJANGO_ALLOWED_HOSTS": "localhost,127.0.0.1",
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "TOKEN_SIGNING_KEY": settings.TOKEN_SIGNING_KEY,
        "LOG_LEVEL": "WARNING",
    }


class Daphne:
    """daphne serving config.asgi on a fixed port: stop it to drop every
    socket, start it again on the same port to let the page reconnect.
    ``pages_port``: where the pages are served (its PORT, as under `make
    run`), whose origin may open the socket."""

    def __init__(self, log: Path, *, pages_port: int) -> None:
        self.port = devstack.free_port()
        self.pages_port = pages_port
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ws://localhost:{self.port}"

    def start(self) -> Daphne:
        with self.log.open("ab") as out:
            argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                    "config.asgi:application"]  # fmt: skip
            env = {**child_env(), "PORT": str(self.pages_port)}
            self.proc = devstack.spawn(argv, env=env, stdout=out)
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).ok:
                    return self
            except requests.RequestException:
                pass
            assert self.proc.poll() is None and time.monotonic() < deadline, (
                f"daphne did not start:\n{devstack.log_tail(self.log)}"
            )
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None:
            devstack.stop_groups([self.proc])
            self.proc = None


# --- static files for the JavaScript unit tests ----------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "text/javascript",
    }

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def repo_files() -> Iterator[str]:
    """The repository over HTTP on 127.0.0.1 (ES modules do not load from file://)."""
    handler = functools.partial(_Quiet, directory=str(REPO))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0
