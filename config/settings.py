"""FairQueue settings: everything comes from the environment (django-environ).

Every variable, with its default, is listed in docs/CONFIGURATION.md. `DATABASE_URL` and
`REDIS_URL` are required; `make run` / `make test` set them to embedded
services when they are missing from the environment.
"""

from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from config.connections import database_pool
from config.openapi import OPENAPI_SETTINGS
from config.safety import challenge_problems, production_problems
from fairqueue.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

# Off unless said otherwise: `make run` and `make test` turn it on for
# themselves (devtools/devstack), so a deployment that forgets the variable
# gets production behaviour and the checks below, never debug pages.
DEBUG = env.bool("DJANGO_DEBUG", default=False)
_DEV_SECRET_KEY = "dev-insecure-key-change-me-in-production-0123456789"  # noqa: S105 - dev only
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default=_DEV_SECRET_KEY if DEBUG else "")
# Signs customer, admission and WebSocket tokens. Its own variable in
# production, so that the key behind Django's sessions is not also the one
# that mints customers.
TOKEN_SIGNING_KEY = env.str("TOKEN_SIGNING_KEY", default=SECRET_KEY if DEBUG else "")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["*"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
# Origins allowed to open the queue WebSocket; empty means "same host as ALLOWED_HOSTS".
WEBSOCKET_ALLOWED_ORIGINS = env.list("WEBSOCKET_ALLOWED_ORIGINS", default=[])
# Base of absolute links (payment callback, emails): an https URL, required in
# production (config/safety.py). Empty (development only): the host the
# customer used (fairqueue/public_url.py), so a phone on the LAN can pay.
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="")
PORT = env.int("PORT", default=8000)
# Where browsers open the queue WebSocket, e.g. "wss://tickets.example.com".
# Empty: the page's own host, on WS_PORT when that is set (`make run` serves
# daphne beside granian), else the page's own origin (nginx routes /ws/).
WEBSOCKET_PUBLIC_URL = env.str("WEBSOCKET_PUBLIC_URL", default="")
WS_PORT = env.int("WS_PORT", default=None)

# --- HTTPS (on in production; each settable for a TLS proxy in front) -------
# Proxies in front of the app whose X-Forwarded-For hop is trusted (nginx in
# docker compose: 1). 0 = the client is REMOTE_ADDR; never trust the header
# blindly, or a client picks a new identity for every rate limit.
NUM_PROXIES = env.int("NUM_PROXIES", default=0)
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool(
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG
)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=not DEBUG)
SESSION_COOKIE_SECURE = env.bool("DJANGO_SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("DJANGO_CSRF_COOKIE_SECURE", default=not DEBUG)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (deploy/nginx.conf
# overwrites it), so that request.is_secure() and the redirect see https.
if env.bool("DJANGO_TRUST_X_FORWARDED_PROTO", default=NUM_PROXIES > 0):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Health checks and Prometheus' scrapes (web:8000, ws:8001) come over plain
# HTTP from inside the network; /metrics needs its bearer token (production
# refuses to start without one) and nginx does not serve it outside.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
# Content-Security-Policy (django-csp; fairqueue/csp.py adds the WebSocket's
# and the bot challenge's origins): scripts from our origin only, never
# inline; inline styles allowed (a style runs no code); nothing frames us.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
# security.W003 cannot see PagesCsrfViewMiddleware (a subclass, see
# fairqueue/middleware.py); fairqueue.W003 checks for it instead.
SILENCED_SYSTEM_CHECKS = ["security.W003"]

INSTALLED_APPS = [
    "daphne",
    "console.apps.FairQueueAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc as our own static files (no CDN)
    "csp",
    "channels",
    "django_celery_beat",
    "axes",
    "customers",
    "inventory",
    "events",
    "queueing",
    "claims",
    "ledger",
    "payments",
    "storefront",
    "console",
]

# Django's own middleware; the four cookie ones skip /api/ (bearer tokens only),
# see fairqueue/middleware.py.
MIDDLEWARE = [
    # First: times the whole request and logs one line for it.
    "fairqueue.requestlog.RequestLogMiddleware",
    "fairqueue.middleware.PrivateAnswersMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every answer (CONTENT_SECURITY_POLICY below).
    "fairqueue.csp.SitePolicyMiddleware",
    "fairqueue.middleware.PagesSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "fairqueue.middleware.PagesCsrfViewMiddleware",
    "fairqueue.middleware.PagesAuthenticationMiddleware",
    "fairqueue.middleware.PagesMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as its documentation asks: it turns a locked-out login into 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "storefront.context.payments_sandbox",
            ],
        },
    },
]

# --- PostgreSQL: the only source of truth ---------------------------------
if "DATABASE_URL" not in env:
    raise ImproperlyConfigured(
        "DATABASE_URL is not set. Use `make run` / `make test` (they start an embedded "
        "PostgreSQL) or export DATABASE_URL=postgres://user@host:port/dbname."
    )
_db = env.db("DATABASE_URL")
# A pool (the web and WebSocket servers) or one persistent connection per
# process (Celery, manage.py): the entry point chooses (config/connections.py).
_pool = database_pool(env)
if _pool is not None:
    _db["CONN_MAX_AGE"] = 0
    _db.setdefault("OPTIONS", {})["pool"] = _pool
else:
    _db["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=60)
    # Off by default: it costs a `SELECT 1` round trip before the first query
    # of every request. A connection that broke fails one request, is marked
    # unusable and replaced on the next.
    _db["CONN_HEALTH_CHECKS"] = env.bool("DB_CONN_HEALTH_CHECKS", default=False)
_db.setdefault("OPTIONS", {})["connect_timeout"] = 5
# Behind a pooler in transaction mode (PgBouncer, docs/SCALING.md): no
# server-side cursors (they outlive a transaction, on a server the pooler
# may hand to someone else). Prepared statements are already off (Django's
# psycopg connections have prepare_threshold None).
_transaction_pooler = env.bool("DB_TRANSACTION_POOLER", default=False)
_db["DISABLE_SERVER_SIDE_CURSORS"] = _transaction_pooler
# The hottest statements (claim, join, sign-out state) are prepared once per
# connection (fairqueue/db.py); not behind a transaction pooler unless it
# keeps them (PgBouncer 1.21+ with max_prepared_statements).
DB_PREPARED_STATEMENTS = env.bool("DB_PREPARED_STATEMENTS", default=not _transaction_pooler)
# How long a request waits for a Postgres row lock before it answers "busy,
# retry" (503 + Retry-After) instead of hanging (fairqueue/locks.py).
DB_LOCK_TIMEOUT_MS = env.int("DB_LOCK_TIMEOUT_MS", default=2000)
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: performance layer, may be wiped at any moment --------------------
if "REDIS_URL" not in env:
    raise ImproperlyConfigured(
        "REDIS_URL is not set. Use `make run` / `make test` (they start an embedded "
        "Redis) or export REDIS_URL=redis://host:port/0."
    )
REDIS_URL = env.str("REDIS_URL")
# Seed nodes of a Redis Cluster for the hot data (queue, admission, inventory,
# locks, limits, socket tickets), comma separated; empty: all of it at
# REDIS_URL. The Channels layer and Celery's broker stay at REDIS_URL.
REDIS_CLUSTER_URL = env.str("REDIS_CLUSTER_URL", default="")
REDIS_SOCKET_TIMEOUT = env.float("REDIS_SOCKET_TIMEOUT", default=2.0)

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "fq:cache",
        "OPTIONS": {"socket_timeout": REDIS_SOCKET_TIMEOUT, "socket_connect_timeout": 2},
    }
}

CHANNEL_LAYERS = {
    "default": {
        # Pub/sub layer: a group message is one PUBLISH, whatever the number
        # of sockets listening. A tick is one message per event, which each
        # daphne process's registry hands to the sockets that need it
        # (queueing/line_sockets.py): no per-customer cost per tick.
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL]},
    }
}

# --- Celery ----------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_TASK_IGNORE_RESULT = True
# No result backend, and one (disabled) backend object for the whole process:
# per thread, as Celery keeps it by default, finding it scans every installed
# package's entry points (~7 ms of CPU), and a web worker's request threads
# come and go, so each payment start and webhook that queued a task paid it
# again (6 % of a web worker's CPU while a 10,000-customer sale was buying).
CELERY_RESULT_BACKEND_THREAD_SAFE = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"
ADMISSION_INTERVAL_SECONDS = env.float("ADMISSION_INTERVAL_SECONDS", default=5.0)
EXPIRY_INTERVAL_SECONDS = env.float("EXPIRY_INTERVAL_SECONDS", default=30.0)
RECONCILE_INTERVAL_SECONDS = env.float("RECONCILE_INTERVAL_SECONDS", default=30.0)

# --- Auth, tokens, customers -----------------------------------------------
CUSTOMER_TOKEN_TTL = timedelta(hours=env.int("CUSTOMER_TOKEN_TTL_HOURS", default=24))
OTP_TTL = timedelta(minutes=env.int("OTP_TTL_MINUTES", default=10))
OTP_MAX_ATTEMPTS = env.int("OTP_MAX_ATTEMPTS", default=5)
OTP_RESEND_SECONDS = env.int("OTP_RESEND_SECONDS", default=60)
# How long spent one-time codes and stored Idempotency-Key answers are kept
# (purged hourly by the beat task customers.tasks.records_purge).
OTP_CODE_RETENTION_HOURS = env.int("OTP_CODE_RETENTION_HOURS", default=24)
IDEMPOTENCY_KEY_RETENTION_HOURS = env.int("IDEMPOTENCY_KEY_RETENTION_HOURS", default=24)
# WebSocket tickets: single use, exchanged for the socket within this time.
WS_TICKET_TTL_SECONDS = min(60, env.int("WS_TICKET_TTL_SECONDS", default=30))
# Email: EMAIL_URL (e.g. smtp+tls://user:password@smtp.example.com:587) or an
# explicit EMAIL_BACKEND. The console backend is for development only.
if "EMAIL_URL" in env:
    globals().update(env.email_url("EMAIL_URL"))
EMAIL_BACKEND = env.str(
    "EMAIL_BACKEND",
    default=globals().get("EMAIL_BACKEND")
    or (
        "django.core.mail.backends.console.EmailBackend"
        if DEBUG
        else "django.core.mail.backends.smtp.EmailBackend"
    ),
)
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="FairQueue <tickets@fairqueue.local>")

# Bot challenge on sign-in and queue join (Cloudflare Turnstile's siteverify
# API); off unless CHALLENGE_PROVIDER=turnstile. `make run` points the verify
# URL at the sandbox's test verifier.
CHALLENGE_PROVIDER = env.str("CHALLENGE_PROVIDER", default="")
CHALLENGE_SITE_KEY = env.str("CHALLENGE_SITE_KEY", default="")
CHALLENGE_SECRET_KEY = env.str("CHALLENGE_SECRET_KEY", default="")
CHALLENGE_VERIFY_URL = env.str(
    "CHALLENGE_VERIFY_URL", default="https://challenges.cloudflare.com/turnstile/v0/siteverify"
)
CHALLENGE_SCRIPT_URL = env.str(
    "CHALLENGE_SCRIPT_URL", default="https://challenges.cloudflare.com/turnstile/v0/api.js"
)
CHALLENGE_TIMEOUT_SECONDS = env.float("CHALLENGE_TIMEOUT_SECONDS", default=5.0)
# Where the widget runs, for the verifier's "hostname" (fairqueue/challenge.py);
# empty: PUBLIC_BASE_URL's host, else the host the browser used.
CHALLENGE_HOSTNAMES = env.list("CHALLENGE_HOSTNAMES", default=[])
# A typo must not switch the challenge off quietly (in any mode).
if _challenge_problems := challenge_problems(
    provider=CHALLENGE_PROVIDER, site_key=CHALLENGE_SITE_KEY, secret_key=CHALLENGE_SECRET_KEY
):
    raise ImproperlyConfigured("; ".join(_challenge_problems))

# --- Admin logins -------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses a locked-out user or address
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": env.int("ADMIN_PASSWORD_MIN_LENGTH", default=12)},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes: failures counted per (username, client address) and per client
# address (the same address rule as the API's throttles: NUM_PROXIES), never per
# username alone, so nobody elsewhere can lock a user out. A limit reached
# holds that pair or address for the cool-off, counted from the failure that
# reached it: attempts meanwhile are refused without counting or extending it,
# so guessing is slowed to a few tries per cool-off (console/login_limits.py).
AXES_FAILURE_LIMIT = env.int("ADMIN_LOGIN_FAILURE_LIMIT", default=5)
ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT = env.int("ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT", default=20)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("ADMIN_LOGIN_COOLOFF_MINUTES", default=5))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_HANDLER = "console.login_limits.AdminLoginHandler"
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_CLIENT_IP_CALLABLE = "fairqueue.clientip.client_ip"  # honours NUM_PROXIES
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429

# --- Queue, claims, payments -----------------------------------------------
CLAIM_TTL_SECONDS = env.int("CLAIM_TTL_SECONDS", default=600)
# After the pre-queue draw every page learns its new place once: spread over
# (waiting / this) seconds, within a tick and a minute (the line state's
# relearn_within_seconds), so the origin sees about this many a second.
QUEUE_RELEARN_PER_SECOND = env.float("QUEUE_RELEARN_PER_SECOND", default=1000.0)
# The demo switch: payments go to the sandbox gateway (or Paystack's test
# mode) and every page says so. `make run` turns it on with the sandbox.
PAYMENTS_SANDBOX = env.bool("PAYMENTS_SANDBOX", default=False)
PAYSTACK_BASE_URL = env.str(
    "PAYSTACK_BASE_URL", default="http://127.0.0.1:8002" if DEBUG else "https://api.paystack.co"
)
PAYSTACK_SECRET_KEY = env.str(
    "PAYSTACK_SECRET_KEY", default="sk_test_fairqueue_sandbox" if DEBUG else ""
)
PAYSTACK_TIMEOUT_SECONDS = env.float("PAYSTACK_TIMEOUT_SECONDS", default=10.0)
# Transient gateway failures (timeouts, 5xx, 429): attempts per call, and the
# base of the exponential backoff with full jitter between them.
PAYSTACK_MAX_ATTEMPTS = env.int("PAYSTACK_MAX_ATTEMPTS", default=3)
PAYSTACK_RETRY_BASE_SECONDS = env.float("PAYSTACK_RETRY_BASE_SECONDS", default=0.25)
PAYMENT_STALE_SECONDS = env.int("PAYMENT_STALE_SECONDS", default=120)
# A payment the gateway keeps in a non-final status (ongoing, pending,
# processing, queued) holds its claim's tickets past the claim's expiry for at
# most this long; then the claim is released, the payment stays under watch
# and staff are alerted (docs/PAYMENTS.md, "Non-final statuses").
PAYMENT_IN_PROGRESS_MAX_SECONDS = env.int("PAYMENT_IN_PROGRESS_MAX_SECONDS", default=1800)
# The payment return page asks the gateway at most this often per payment.
PAYMENT_RETURN_VERIFY_SECONDS = env.float("PAYMENT_RETURN_VERIFY_SECONDS", default=3.0)
# REFUND_REQUIRED payments are refunded through the gateway's Refund API
# without waiting for staff.
PAYSTACK_AUTO_REFUND = env.bool("PAYSTACK_AUTO_REFUND", default=True)

# --- DRF / OpenAPI ----------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["customers.authentication.CustomerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "fairqueue.errors.exception_handler",
    # A token bucket per signed-in customer (CUSTOMER_BUCKETS below).
    "DEFAULT_THROTTLE_CLASSES": ["customers.throttling.CustomerBucketThrottle"],
    "UNAUTHENTICATED_USER": None,
    "NUM_PROXIES": NUM_PROXIES,
}
# Per client address (an IPv6 /64), comma-separated "N/unit" windows
# (customers/throttling.py). Wide: a carrier NAT or venue Wi-Fi is one address.
RATE_LIMITS = {
    "otp_request": env.str("THROTTLE_OTP_REQUEST", default="60/minute,1200/hour"),
    "otp_verify": env.str("THROTTLE_OTP_VERIFY", default="120/minute,2400/hour"),
}
# Per mailbox: codes sent to one address.
OTP_EMAIL_LIMITS = env.str("OTP_EMAIL_LIMITS", default="5/hour,20/day")
# Ticket transfers, whose offer emails a stranger (claims/services/transfers.py):
# transfers made per ticket and per sender, offers mailed per recipient mailbox.
TRANSFER_TICKET_LIMITS = env.str("TRANSFER_TICKET_LIMITS", default="5/hour,10/day")
TRANSFER_SENDER_LIMITS = env.str("TRANSFER_SENDER_LIMITS", default="10/hour,30/day")
TRANSFER_MAILBOX_LIMITS = env.str("TRANSFER_MAILBOX_LIMITS", default="5/hour,20/day")
# A ticket sent again to a mailbox emailed about it this recently sends no second email.
TRANSFER_EMAIL_REPEAT_SECONDS = env.int("TRANSFER_EMAIL_REPEAT_SECONDS", default=86400)
# Per signed-in customer, token buckets (customers/throttling.py): "N/unit"
# refills N per unit, "burst=B" holds at most B. Sized for the waiting room's
# own schedule (several tabs polling at its fastest, sockets reconnecting at
# its fastest backoff: tests/core/test_customer_buckets.py), not for scripts.
CUSTOMER_BUCKETS = {
    "reads": env.str("THROTTLE_CUSTOMER_READS", default="120/minute,burst=60"),
    "ws_tickets": env.str("THROTTLE_WS_TICKETS", default="20/minute,burst=20"),
}
SPECTACULAR_SETTINGS = OPENAPI_SETTINGS  # config/openapi.py
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=64 * 1024)

# --- i18n, static ------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
LOGIN_URL = "admin:login"

# --- Logs and metrics ----------------------------------------------------------
# One line per HTTP request; plain text, or one JSON object per line with
# LOG_FORMAT=json (fairqueue/logs.py). Celery's processes use the same config.
LOGGING = logging_config(
    level=env.str("LOG_LEVEL", default="INFO"), fmt=env.str("LOG_FORMAT", default="plain")
)
# GET /metrics: only with "Authorization: Bearer <METRICS_TOKEN>" (required in
# production); without a token, open to loopback callers when no proxy is in
# front (NUM_PROXIES=0: make run). METRICS_LOOPBACK_ONLY=true says so in
# production, where the token may then be left out.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_LOOPBACK_ONLY = env.bool("METRICS_LOOPBACK_ONLY", default=False)
# /readyz: how long it waits for a Celery worker to answer a ping.
READYZ_WORKER_TIMEOUT_SECONDS = env.float("READYZ_WORKER_TIMEOUT_SECONDS", default=1.0)
# Where the Celery worker and beat touch their heartbeat files (the compose
# healthchecks read them: python -m console.probe worker|beat).
HEARTBEAT_DIR = env.str("HEARTBEAT_DIR", default="")
# Celery worker and beat serve their own metrics on this port when set
# (docker compose, where each container is scraped); 0 = off.
CELERY_METRICS_PORT = env.int("CELERY_METRICS_PORT", default=0)

# --- Production refuses unsafe settings (config/safety.py) -------------------------
if not DEBUG:
    _problems = production_problems(
        secret_key=SECRET_KEY,
        token_signing_key=TOKEN_SIGNING_KEY,
        paystack_secret_key=PAYSTACK_SECRET_KEY,
        paystack_base_url=PAYSTACK_BASE_URL,
        payments_sandbox=PAYMENTS_SANDBOX,
        email_backend=EMAIL_BACKEND,
        public_base_url=PUBLIC_BASE_URL,
        metrics_token=METRICS_TOKEN,
        metrics_loopback_only=METRICS_LOOPBACK_ONLY,
        num_proxies=NUM_PROXIES,
        allowed_hosts=ALLOWED_HOSTS,
    )
    if _problems:
        raise ImproperlyConfigured(
            "Refusing to start with DJANGO_DEBUG=false: "
            + "; ".join(_problems)
            + ". See docs/CONFIGURATION.md."
        )
