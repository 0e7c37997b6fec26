"""What a production process refuses to start with.

``config.settings`` calls ``production_problems`` when ``DJANGO_DEBUG`` is off
and raises ``ImproperlyConfigured`` naming every variable at fault. Settings
are imported by every entry point (manage.py, the WSGI module granian serves,
daphne's ASGI module, Celery's app), so none of them can serve with a
key anyone can read in this repository, or take sandbox payments as real.

Pure functions of the values: no Django import, tested without a process.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

MIN_KEY_LENGTH = 32
MIN_KEY_DISTINCT = 5  # Django's own deploy check (security.W009) asks the same

# Values printed in this repository's files or docs, past or present: public.
DEMO_VALUES = frozenset(
    {
        "dev-insecure-key-change-me-in-production-0123456789",
        "compose-demo-secret-key-change-me",
        "collectstatic-only",
        "sk_test_fairqueue_sandbox",
        "change-me",
        "changeme",
        "secret",
    }
)
SANDBOX_PAYSTACK_KEY = "sk_test_fairqueue_sandbox"
PUBLIC_PAYSTACK_KEY_PREFIXES = ("pk_live_", "pk_test_")
# Email backends that put sign-in codes where others read them (logs, memory, files).
LEAKY_EMAIL_BACKENDS = frozenset(
    {
        "django.core.mail.backends.console.EmailBackend",
        "django.core.mail.backends.locmem.EmailBackend",
        "django.core.mail.backends.filebased.EmailBackend",
    }
)


def signing_key_problem(name: str, value: str) -> str | None:
    """Why ``value`` may not sign anything in production (None: it may)."""
    if not value:
        return f"{name} is not set"
    if value in DEMO_VALUES or value.startswith("django-insecure-"):
        return f"{name} is a published demo value"
    if len(value) < MIN_KEY_LENGTH:
        return f"{name} is shorter than {MIN_KEY_LENGTH} characters"
    if len(set(value)) < MIN_KEY_DISTINCT:
        return f"{name} has fewer than {MIN_KEY_DISTINCT} distinct characters"
    return None


def token_signing_key_problem(value: str, *, secret_key: str) -> str | None:
    """The key that mints customers is not the one behind Django's sessions:
    one leaked key must not give both."""
    problem = signing_key_problem("TOKEN_SIGNING_KEY", value)
    if problem is None and value == secret_key:
        return "TOKEN_SIGNING_KEY is the same as DJANGO_SECRET_KEY: give it a key of its own"
    return problem


def paystack_problems(*, secret_key: str, base_url: str, sandbox: bool) -> list[str]:
    """A production deployment takes real payments: the live gateway over
    TLS and a live key. ``PAYMENTS_SANDBOX=true`` is the explicit demo switch
    (and every page then says payments are not real): it allows the sandbox
    gateway or Paystack's test mode, never a key anyone can read. The key
    checks webhook signatures, so a demo on the published sandbox key would
    take a ``charge.success`` signed by anyone; so would a short key, or a
    public one (``pk_...``: every checkout page carries it)."""
    if sandbox:
        problem = public_paystack_key_problem(secret_key) or signing_key_problem(
            "PAYSTACK_SECRET_KEY", secret_key
        )
        return [problem] if problem else []
    problems = []
    if not secret_key:
        problems.append("PAYSTACK_SECRET_KEY is not set")
    elif secret_key == SANDBOX_PAYSTACK_KEY or secret_key in DEMO_VALUES:
        problems.append("PAYSTACK_SECRET_KEY is the sandbox gateway's public key")
    elif problem := public_paystack_key_problem(secret_key):
        problems.append(problem)
    elif secret_key.startswith("sk_test_"):
        problems.append("PAYSTACK_SECRET_KEY is a test-mode key (test cards would buy tickets)")
    elif problem := signing_key_problem("PAYSTACK_SECRET_KEY", secret_key):
        problems.append(problem)
    # The sandbox gateway only speaks plain HTTP; Paystack only HTTPS.
    if urlsplit(base_url).scheme != "https":
        problems.append(f"PAYSTACK_BASE_URL is not an https URL ({base_url!r}: the sandbox?)")
    return problems


def public_paystack_key_problem(secret_key: str) -> str | None:
    """Paystack's public keys are in every checkout page: never the secret."""
    for prefix in PUBLIC_PAYSTACK_KEY_PREFIXES:
        if secret_key.startswith(prefix):
            return f"PAYSTACK_SECRET_KEY is a public key ({prefix}...): use the secret key"
    return None


def allowed_hosts_problem(hosts: Sequence[str]) -> str | None:
    """``*`` answers any Host header, so whatever the app builds from the
    request's host (absolute links, redirects) follows the caller's choice."""
    if any(host.strip() == "*" for host in hosts):
        return "DJANGO_ALLOWED_HOSTS is '*' (any Host header is answered): list the site's hosts"
    return None


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def public_url_problem(url: str, *, sandbox: bool) -> str | None:
    """Links in emails and the payment callback go to ``PUBLIC_BASE_URL``:
    an https URL, or with the demo switch a plain-HTTP one on this machine
    (a demo nobody else can reach, whose links reach nobody else either)."""
    if not url:
        return "PUBLIC_BASE_URL is not set (emails would link to the server's own address)"
    parts = urlsplit(url)
    local_demo = sandbox and parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS
    if parts.scheme != "https" and not local_demo:
        return (
            "PUBLIC_BASE_URL is not an https URL (emails and the payment callback would "
            f"link to {url!r})"
        )
    if not parts.hostname:
        return f"PUBLIC_BASE_URL has no host ({url!r})"
    return None


def metrics_problem(*, token: str, loopback_only: bool, num_proxies: int) -> str | None:
    """``/metrics`` (event names, sales, payment counts) needs its bearer
    token, unless ``METRICS_LOOPBACK_ONLY`` says this process has no proxy
    in front (behind one, every caller arrives from the proxy's address)."""
    if not token and loopback_only:
        if num_proxies > 0:
            return (
                "METRICS_LOOPBACK_ONLY is on behind a proxy (NUM_PROXIES > 0: every caller "
                "would be the proxy): set METRICS_TOKEN"
            )
        return None
    return signing_key_problem("METRICS_TOKEN", token)


def production_problems(
    *,
    secret_key: str,
    token_signing_key: str,
    paystack_secret_key: str,
    paystack_base_url: str,
    payments_sandbox: bool,
    email_backend: str,
    public_base_url: str,
    metrics_token: str,
    metrics_loopback_only: bool,
    num_proxies: int,
    allowed_hosts: Sequence[str] = (),
) -> list[str]:
    """Everything wrong with these production settings, one line each, each
    naming its variable; empty when they are safe to serve with."""
    problems = [
        problem
        for problem in (
            signing_key_problem("DJANGO_SECRET_KEY", secret_key),
            token_signing_key_problem(token_signing_key, secret_key=secret_key),
            allowed_hosts_problem(allowed_hosts),
            public_url_problem(public_base_url, sandbox=payments_sandbox),
            metrics_problem(
                token=metrics_token, loopback_only=metrics_loopback_only, num_proxies=num_proxies
            ),
        )
        if problem
    ]
    problems += paystack_problems(
        secret_key=paystack_secret_key, base_url=paystack_base_url, sandbox=payments_sandbox
    )
    if email_backend in LEAKY_EMAIL_BACKENDS:
        problems.append(
            f"EMAIL_BACKEND is {email_backend.rsplit('.', 2)[-2]} (sign-in codes would land "
            "in logs or memory): set EMAIL_URL or a real EMAIL_BACKEND"
        )
    return problems


CHALLENGE_PROVIDERS = ("turnstile",)


def challenge_problems(*, provider: str, site_key: str, secret_key: str) -> list[str]:
    """The bot challenge's settings: off (empty), or a known provider with
    both keys."""
    if not provider:
        return []
    if provider not in CHALLENGE_PROVIDERS:
        return [f"CHALLENGE_PROVIDER must be one of {', '.join(CHALLENGE_PROVIDERS)} or empty"]
    return [
        f"{name} is not set (CHALLENGE_PROVIDER={provider})"
        for name, value in (("CHALLENGE_SITE_KEY", site_key), ("CHALLENGE_SECRET_KEY", secret_key))
        if not value
    ]
