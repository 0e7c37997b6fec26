"""Prometheus' own checker, run on what we produce. Never skipped: a missing
promtool fails the test (``make test`` installs it, Debian's ``prometheus``
package)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def promtool(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is missing: `make tools` installs it (Debian package prometheus)")
    return subprocess.run(  # noqa: S603 - fixed binary, our own arguments
        [binary, *map(str, args)], input=stdin, capture_output=True, timeout=60, check=False
    )
