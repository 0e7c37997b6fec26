"""Production refuses unsafe settings (config/safety.py, checked when the
settings are imported, so by every entry point), and a correct production
environment passes Django's deploy checks."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from config.safety import challenge_problems, production_problems

REPO = Path(__file__).resolve().parents[2]

GOOD = {
    "secret_key": "s" + secrets.token_urlsafe(48),
    "token_signing_key": "t" + secrets.token_urlsafe(48),
    "paystack_secret_key": "sk_live_" + secrets.token_hex(20),
    "paystack_base_url": "https://api.paystack.co",
    "payments_sandbox": False,
    "email_backend": "django.core.mail.backends.smtp.EmailBackend",
    "public_base_url": "https://tickets.example.com",
    "metrics_token": "m" + secrets.token_urlsafe(32),
    "metrics_loopback_only": False,
    "num_proxies": 1,
    "allowed_hosts": ["tickets.example.com"],
}


def test_a_correct_production_configuration_has_no_problem():
    assert production_problems(**GOOD) == []


@pytest.mark.parametrize(
    ("override", "variable"),
    [
        ({"secret_key": ""}, "DJANGO_SECRET_KEY is not set"),
        ({"secret_key": "compose-demo-secret-key-change-me"}, "DJANGO_SECRET_KEY is a published"),
        (
            {"secret_key": "dev-insecure-key-change-me-in-production-0123456789"},
            "DJANGO_SECRET_KEY is a published",
        ),
        ({"secret_key": "django-insecure-" + "a1b2c3" * 8}, "DJANGO_SECRET_KEY is a published"),
        ({"secret_key": "x" * 31}, "DJANGO_SECRET_KEY is shorter than 32"),
        ({"secret_key": "abab" * 20}, "DJANGO_SECRET_KEY has fewer than 5 distinct"),
        ({"token_signing_key": ""}, "TOKEN_SIGNING_KEY is not set"),
        ({"token_signing_key": "k"}, "TOKEN_SIGNING_KEY is shorter than 32"),
        (
            {"token_signing_key": GOOD["secret_key"]},
            "TOKEN_SIGNING_KEY is the same as DJANGO_SECRET_KEY",
        ),
        ({"allowed_hosts": ["*"]}, "DJANGO_ALLOWED_HOSTS is '*'"),
        ({"allowed_hosts": ["tickets.example.com", " *"]}, "DJANGO_ALLOWED_HOSTS is '*'"),
        ({"paystack_secret_key": ""}, "PAYSTACK_SECRET_KEY is not set"),
        (
            {"paystack_secret_key": "sk_test_fairqueue_sandbox"},
            "PAYSTACK_SECRET_KEY is the sandbox gateway's public key",
        ),
        ({"paystack_secret_key": "sk_test_" + "9" * 40}, "PAYSTACK_SECRET_KEY is a test-mode key"),
        ({"paystack_secret_key": "x"}, "PAYSTACK_SECRET_KEY is shorter than 32"),
        (
            {"paystack_secret_key": "pk_live_" + "0123456789abcdef" * 3},
            "PAYSTACK_SECRET_KEY is a public key (pk_live_...)",
        ),
        (
            {"paystack_secret_key": "pk_test_" + "0123456789abcdef" * 3},
            "PAYSTACK_SECRET_KEY is a public key (pk_test_...)",
        ),
        ({"paystack_base_url": "http://sandbox:8002"}, "PAYSTACK_BASE_URL is not an https URL"),
        ({"paystack_base_url": "http://127.0.0.1:8002"}, "PAYSTACK_BASE_URL is not an https URL"),
        (
            {"email_backend": "django.core.mail.backends.console.EmailBackend"},
            "EMAIL_BACKEND is console",
        ),
        (
            {"email_backend": "django.core.mail.backends.locmem.EmailBackend"},
            "EMAIL_BACKEND is locmem",
        ),
        ({"public_base_url": ""}, "PUBLIC_BASE_URL is not set"),
        ({"public_base_url": "http://tickets.example.com"}, "PUBLIC_BASE_URL is not an https URL"),
        ({"public_base_url": "http://localhost:8080"}, "PUBLIC_BASE_URL is not an https URL"),
        ({"public_base_url": "https://"}, "PUBLIC_BASE_URL has no host"),
        ({"public_base_url": "tickets.example.com"}, "PUBLIC_BASE_URL is not an https URL"),
        ({"metrics_token": ""}, "METRICS_TOKEN is not set"),
        ({"metrics_token": "change-me"}, "METRICS_TOKEN is a published demo value"),
        ({"metrics_token": "t0ken"}, "METRICS_TOKEN is shorter than 32"),
        (
            {"metrics_token": "", "metrics_loopback_only": True},
            "METRICS_LOOPBACK_ONLY is on behind a proxy",
        ),
    ],
)
def test_each_unsafe_setting_is_refused_by_name(override, variable):
    problems = production_problems(**{**GOOD, **override})
    assert len(problems) == 1
    assert problems[0].startswith(variable), problems


def test_the_demo_switch_allows_the_sandbox_gateway_but_not_weak_keys():
    sandboxed = {
        **GOOD,
        "payments_sandbox": True,
        "paystack_secret_key": "sk_test_" + secrets.token_hex(20),
        "paystack_base_url": "http://sandbox:8002",
    }
    assert production_problems(**sandboxed) == []
    weak = production_problems(**{**sandboxed, "secret_key": "short"})
    assert weak == ["DJANGO_SECRET_KEY is shorter than 32 characters"]


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("sk_test_fairqueue_sandbox", "PAYSTACK_SECRET_KEY is a published demo value"),
        ("", "PAYSTACK_SECRET_KEY is not set"),
        ("sk_test_short", "PAYSTACK_SECRET_KEY is shorter than 32 characters"),
        (
            "pk_test_" + "0123456789abcdef" * 3,
            "PAYSTACK_SECRET_KEY is a public key (pk_test_...): use the secret key",
        ),
    ],
)
def test_the_demo_switch_never_takes_a_key_anyone_can_sign_webhooks_with(key, problem):
    """The sandbox signs its webhooks with the gateway key, and the app
    checks them with it: a demo on the published key accepts a
    ``charge.success`` anyone signs. The switch relaxes which gateway, never
    whose key."""
    sandboxed = {
        **GOOD,
        "payments_sandbox": True,
        "paystack_secret_key": key,
        "paystack_base_url": "http://sandbox:8002",
    }
    assert production_problems(**sandboxed) == [problem]


def test_a_demo_on_this_machine_may_link_to_plain_http_localhost():
    demo = {**GOOD, "payments_sandbox": True, "paystack_secret_key": "x" + secrets.token_hex(20)}
    on_this_machine = [
        production_problems(**{**demo, "public_base_url": url})
        for url in ("http://localhost:8080", "http://127.0.0.1:8080", "http://[::1]:8080")
    ]
    elsewhere = production_problems(**{**demo, "public_base_url": "http://demo.example.com"})

    assert on_this_machine == [[], [], []]
    assert elsewhere == [
        "PUBLIC_BASE_URL is not an https URL (emails and the payment callback would link to "
        "'http://demo.example.com')"
    ]


def test_metrics_on_loopback_without_a_token_only_with_no_proxy_in_front():
    switch = {**GOOD, "metrics_token": "", "metrics_loopback_only": True}

    assert production_problems(**{**switch, "num_proxies": 0}) == []
    assert len(production_problems(**{**switch, "num_proxies": 1})) == 1


def test_the_challenge_is_off_or_fully_configured():
    assert challenge_problems(provider="", site_key="", secret_key="") == []
    assert challenge_problems(provider="turnstile", site_key="k", secret_key="s") == []
    assert challenge_problems(provider="turnstyle", site_key="k", secret_key="s") == [
        "CHALLENGE_PROVIDER must be one of turnstile or empty"
    ]
    assert challenge_problems(provider="turnstile", site_key="", secret_key="") == [
        "CHALLENGE_SITE_KEY is not set (CHALLENGE_PROVIDER=turnstile)",
        "CHALLENGE_SECRET_KEY is not set (CHALLENGE_PROVIDER=turnstile)",
    ]


# --- the real processes -------------------------------------------------------------


def production_env(**overrides: str) -> dict[str, str]:
    """A correct production environment (real services for the settings to
    point at), plus ``overrides``; an empty override removes the variable."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(
            ("DJANGO_", "PAYSTACK_", "EMAIL_", "PAYMENTS_", "TOKEN_", "PUBLIC_", "METRICS_")
        )
        and key != "NUM_PROXIES"
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": GOOD["secret_key"],
            "TOKEN_SIGNING_KEY": GOOD["token_signing_key"],
            "DJANGO_ALLOWED_HOSTS": "tickets.example.com",
            "PAYSTACK_SECRET_KEY": GOOD["paystack_secret_key"],
            "EMAIL_URL": "smtp+tls://mailer:password@smtp.example.com:587",
            "PUBLIC_BASE_URL": GOOD["public_base_url"],
            "METRICS_TOKEN": GOOD["metrics_token"],
            "LOG_LEVEL": "WARNING",
        }
    )
    for key, value in overrides.items():
        if value:
            env[key] = value
        else:
            env.pop(key, None)
    return env


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and arguments
        argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


PY = sys.executable


@pytest.mark.slow
def test_a_correct_production_environment_passes_the_deploy_checks():
    result = run(
        [PY, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], production_env()
    )
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.slow
def test_https_settings_are_on_in_production_and_settable_for_a_tls_proxy():
    show = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER is not None, s.DEBUG)"
    )
    default = run([PY, "-c", show], production_env())
    proxied = run(
        [PY, "-c", show],
        production_env(
            DJANGO_SECURE_SSL_REDIRECT="false",
            DJANGO_SECURE_HSTS_SECONDS="60",
            NUM_PROXIES="1",
        ),
    )
    assert default.stdout.split() == ["True", "31536000", "True", "True", "False", "False"]
    assert proxied.stdout.split() == ["False", "60", "True", "True", "True", "False"]


UNSAFE = {
    "DJANGO_SECRET_KEY": production_env(DJANGO_SECRET_KEY="compose-demo-secret-key-change-me"),
    "TOKEN_SIGNING_KEY": production_env(TOKEN_SIGNING_KEY=""),
    "PAYSTACK_SECRET_KEY": production_env(PAYSTACK_SECRET_KEY="sk_test_fairqueue_sandbox"),
    "PAYSTACK_BASE_URL": production_env(PAYSTACK_BASE_URL="http://sandbox:8002"),
    "EMAIL_BACKEND": production_env(
        EMAIL_URL="", EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend"
    ),
    "PUBLIC_BASE_URL": production_env(PUBLIC_BASE_URL="http://localhost:8000"),
    "METRICS_TOKEN": production_env(METRICS_TOKEN=""),
}
ENTRY_POINTS = {
    "manage.py": [PY, "manage.py", "check"],
    "wsgi (granian)": [PY, "-c", "import config.wsgi"],
    "asgi (daphne)": [PY, "-c", "import config.asgi"],
    "celery": [PY, "-m", "celery", "-A", "config", "report"],
}


@pytest.mark.slow
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_entry_point_refuses_to_start_on_unsafe_settings(entry):
    """One unsafe variable per entry point (each is the settings import, so
    the rule itself is covered for every variable above)."""
    variable = sorted(UNSAFE)[sorted(ENTRY_POINTS).index(entry) % len(UNSAFE)]
    result = run(ENTRY_POINTS[entry], UNSAFE[variable])
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Refusing to start with DJANGO_DEBUG=false" in output
    assert variable in output


@pytest.mark.slow
def test_debug_is_off_unless_turned_on():
    """No DJANGO_DEBUG at all: production rules, so no keys is a refusal."""
    env = production_env(DJANGO_DEBUG="", DJANGO_SECRET_KEY="", TOKEN_SIGNING_KEY="")
    result = run([PY, "manage.py", "check"], env)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in result.stderr
    assert "TOKEN_SIGNING_KEY is not set" in result.stderr


@pytest.mark.slow
def test_the_demo_switch_starts_with_the_sandbox_gateway_on_its_own_key():
    env = production_env(
        PAYMENTS_SANDBOX="true",
        PAYSTACK_SECRET_KEY="sk_test_" + secrets.token_hex(24),
        PAYSTACK_BASE_URL="http://sandbox:8002",
    )
    result = run([PY, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], env)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_the_demo_switch_refuses_to_start_on_the_published_sandbox_key():
    env = production_env(
        PAYMENTS_SANDBOX="true",
        PAYSTACK_SECRET_KEY="sk_test_fairqueue_sandbox",
        PAYSTACK_BASE_URL="http://sandbox:8002",
    )
    result = run([PY, "manage.py", "check"], env)
    assert result.returncode != 0
    assert "PAYSTACK_SECRET_KEY is a published demo value" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        (
            "TOKEN_SIGNING_KEY",
            GOOD["secret_key"],
            "TOKEN_SIGNING_KEY is the same as DJANGO_SECRET_KEY",
        ),
        ("PAYSTACK_SECRET_KEY", "x", "PAYSTACK_SECRET_KEY is shorter than 32 characters"),
        (
            "PAYSTACK_SECRET_KEY",
            "pk_live_" + "0123456789abcdef" * 3,
            "PAYSTACK_SECRET_KEY is a public key (pk_live_...)",
        ),
        ("DJANGO_ALLOWED_HOSTS", "*", "DJANGO_ALLOWED_HOSTS is '*'"),
    ],
)
def test_production_refuses_to_start_on_a_shared_short_or_public_key_or_any_host(
    variable, value, problem
):
    """Webhooks checked with a key anyone has, customers minted with the
    sessions' key, or any Host header answered: each stops the process."""
    result = run([PY, "manage.py", "check"], production_env(**{variable: value}))
    assert result.returncode != 0, result.stdout
    assert "Refusing to start with DJANGO_DEBUG=false" in result.stderr
    assert problem in result.stderr
    assert "System check identified" not in result.stdout


# --- the banner -----------------------------------------------------------------------

BANNER = "Test mode: payments go to a sandbox gateway; no real money moves."


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/signin/", "/admin/login/"])
def test_the_sandbox_banner_is_on_every_page_while_the_switch_is_on(client, settings, path):
    settings.PAYMENTS_SANDBOX = True
    on = client.get(path)
    settings.PAYMENTS_SANDBOX = False
    off = client.get(path)

    assert on.status_code == off.status_code == 200
    assert on.content.decode().count(BANNER) == 1
    assert BANNER not in off.content.decode()
