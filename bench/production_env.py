"""What the benchmark's production-mode processes (DJANGO_DEBUG=false) need
to be allowed to start (config/safety.py): keys of their own, random per run
and shared by every process of the run (the bench mints the tokens the
servers check), the sandbox gateway declared as such, plain HTTP on the
loopback (links included), metrics for loopback callers (no proxy in front),
and sign-in mail going nowhere (the bench mints tokens instead).

PAYSTACK_SECRET_KEY too: production mode has no default for it, and the web
process must send the key the sandbox checks (it answers 401 otherwise) and
signs its webhooks with; both read it from this environment.
"""

from __future__ import annotations

import secrets
from collections.abc import MutableMapping

FIXED = {
    "PAYMENTS_SANDBOX": "true",
    "PUBLIC_BASE_URL": "http://127.0.0.1:8000",
    "METRICS_LOOPBACK_ONLY": "true",
    "DJANGO_SECURE_SSL_REDIRECT": "false",
    "EMAIL_BACKEND": "django.core.mail.backends.dummy.EmailBackend",
    # The load generator loops each customer's token far faster than a page
    # does: the per-customer buckets are lifted (what they cost stays).
    "THROTTLE_CUSTOMER_READS": "1000000/minute",
    "THROTTLE_WS_TICKETS": "1000000/minute",
}
RANDOM = ("DJANGO_SECRET_KEY", "TOKEN_SIGNING_KEY", "SANDBOX_CONTROL_TOKEN", "PAYSTACK_SECRET_KEY")


def production_env(env: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Fill in what ``env`` lacks (an explicit value always wins); returns it."""
    for key, value in FIXED.items():
        env.setdefault(key, value)
    for key in RANDOM:
        env.setdefault(key, secrets.token_urlsafe(48))
    return env
