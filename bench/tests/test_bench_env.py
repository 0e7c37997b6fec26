"""The benchmarks' production-mode processes pay through the sandbox gateway:
the web process and the sandbox must agree on the Paystack key (the sandbox
answers 401 to any other Bearer key, and signs its webhooks with it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.production_env import production_env

REPO = Path(__file__).resolve().parents[2]
SETTINGS_KEY = (
    "import django; django.setup(); from django.conf import settings; "
    "print(repr(settings.PAYSTACK_SECRET_KEY))"
)


@pytest.mark.slow
def test_the_bench_web_process_and_its_sandbox_share_the_paystack_key():
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "PAYSTACK_", "EMAIL_", "PAYMENTS_", "TOKEN_"))
    }
    env.update(DJANGO_DEBUG="false", DJANGO_SETTINGS_MODULE="config.settings")
    production_env(env)
    result = subprocess.run(  # noqa: S603 - our own interpreter and arguments
        [sys.executable, "-c", SETTINGS_KEY],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    web_key = result.stdout.strip().strip("'")
    # What devtools/sandbox reads from the same environment.
    assert web_key
    assert web_key == env["PAYSTACK_SECRET_KEY"]


def test_an_explicit_paystack_key_wins():
    env = production_env({"PAYSTACK_SECRET_KEY": "given-" + "k" * 40})
    assert env["PAYSTACK_SECRET_KEY"] == "given-" + "k" * 40
