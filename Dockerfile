# One image for every FairQueue process (web, ws, worker, beat, sandbox, migrate);
# docker-compose.yml picks each one's command. PostgreSQL and Redis are real services
# there, so the `embedded` extra is not installed.
FROM python:3.11-slim-bookworm

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

COPY README.md manage.py ./
COPY config ./config
COPY fairqueue ./fairqueue
COPY customers ./customers
COPY inventory ./inventory
COPY events ./events
COPY queueing ./queueing
COPY claims ./claims
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
RUN useradd --system --create-home --uid 10001 fairqueue \
    && chown -R fairqueue:fairqueue /app/staticfiles
USER fairqueue

EXPOSE 8000 8001 8002
CMD ["python", "-m", "fairqueue.webserver"]
