# FairQueue developer entry points. Every target installs the project into .venv first
# (again whenever pyproject.toml changes); PostgreSQL and Redis are embedded unless
# DATABASE_URL / REDIS_URL are set (see fairqueue/devstack/).

PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: run test lint services clean

# The whole system: embedded services, migrations, demo data, web, ws, worker, beat, sandbox.
run: $(STAMP)
	$(VENV_PY) -m fairqueue.devstack run

test: $(STAMP)
	$(VENV_PY) -m fairqueue.devstack test -- pytest $(PYTEST_ARGS)

# mypy's Django plugin imports the settings, which want both URLs; nothing connects.
lint: $(STAMP)
	$(VENV_PY) -m ruff check .
	$(VENV)/bin/lint-imports
	DATABASE_URL="$${DATABASE_URL:-postgres://unused@127.0.0.1:1/unused}" \
		REDIS_URL="$${REDIS_URL:-redis://127.0.0.1:1/0}" $(VENV)/bin/mypy

# Embedded PostgreSQL and Redis only; prints the DATABASE_URL / REDIS_URL exports.
services: $(STAMP)
	$(VENV_PY) -m fairqueue.devstack services

# Removes the embedded services' data (.fairqueue/) and caches; keeps .venv.
clean:
	@if [ -f .fairqueue/pg/postmaster.pid ] && kill -0 "$$(head -n 1 .fairqueue/pg/postmaster.pid)" 2>/dev/null; then \
		echo "The embedded PostgreSQL in .fairqueue/pg is running: stop make run / make services first." >&2; \
		exit 1; \
	fi
	rm -rf .fairqueue .pytest_cache .ruff_cache .mypy_cache build staticfiles *.egg-info
	find . -path ./$(VENV) -prune -o -type d -name __pycache__ -exec rm -rf {} +

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install -e '.[dev]'
	touch $@
