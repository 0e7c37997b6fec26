# One image for every FairQueue process (web, ws, worker, beat, migrate): the last stage,
# what `docker build .` makes; docker-compose.yml picks each one's command. PostgreSQL and
# Redis are real services there, so the `embedded` extra is not installed. The tools
# (devtools/: the sandbox gateway, the dev stack) are not in it: the demo's sandbox
# gateway is the `sandbox` stage, an image of its own (`target: sandbox` in compose).
FROM python:3.11-slim-bookworm AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies first, read from pyproject.toml alone, so a code change reuses this layer.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

RUN useradd --system --create-home --uid 10001 fairqueue

# The sandbox gateway (demo profile only): standard library and requests, and the
# currencies it shares with the app (fairqueue/money.py). No app code, no settings.
FROM base AS sandbox
COPY fairqueue/__init__.py fairqueue/money.py ./fairqueue/
COPY devtools/__init__.py ./devtools/
COPY devtools/sandbox ./devtools/sandbox
USER fairqueue
EXPOSE 8002
CMD ["python", "-m", "devtools.sandbox", "--host", "0.0.0.0", "--port", "8002"]

# The product.
FROM base AS app

COPY README.md manage.py ./
COPY config ./config
COPY fairqueue ./fairqueue
COPY customers ./customers
COPY inventory ./inventory
COPY events ./events
COPY queueing ./queueing
COPY claims ./claims
COPY ledger ./ledger
COPY payments ./payments
COPY storefront ./storefront
COPY console ./console
COPY templates ./templates
RUN pip install --no-deps .

# collectstatic only needs settings to import: development mode for this step alone (no
# key, no database or Redis is touched; production refuses to start without real ones).
RUN DJANGO_DEBUG=true \
    DATABASE_URL=postgres://build@localhost:5432/build REDIS_URL=redis://localhost:6379/0 \
    python manage.py collectstatic --noinput

# Run unprivileged; the static files belong to this user so that the shared volume
# docker compose fills from them (and refreshes in the migrate service) is writable.
RUN chown -R fairqueue:fairqueue /app/staticfiles
USER fairqueue

EXPOSE 8000 8001
CMD ["python", "-m", "fairqueue.webserver"]
