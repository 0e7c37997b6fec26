# FairQueue developer entry points. Every target installs the project into .venv first
# (again whenever pyproject.toml changes); PostgreSQL and Redis are embedded unless
# DATABASE_URL / REDIS_URL are set (see devtools/devstack/).

PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: run test lint services clean tools browser screenshots bench-tools

# The whole system: embedded services, migrations, demo data, web, ws, worker, beat, sandbox.
run: $(STAMP)
	$(VENV_PY) -m devtools.devstack run

test: $(STAMP) tools browser
	$(VENV_PY) -m devtools.devstack test -- pytest $(PYTEST_ARGS)

# System tools the tests use: promtool (Prometheus' own checker, run on the
# /metrics output and the alert rules) from Debian's prometheus package.
tools:
	@command -v promtool >/dev/null 2>&1 || { \
		if [ "$$(id -u)" != 0 ]; then \
			echo "promtool is missing: sudo apt-get install prometheus (Debian/Ubuntu)" >&2; exit 1; \
		fi; \
		echo "installing promtool (Debian package prometheus)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	}
# And nginx (Debian's package): deploy/nginx.conf run in front of a test origin.
	@command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || { \
		if [ "$$(id -u)" != 0 ]; then \
			echo "nginx is missing: sudo apt-get install nginx (Debian/Ubuntu)" >&2; exit 1; \
		fi; \
		echo "installing nginx (Debian package nginx)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends nginx >/dev/null; \
	}

# The browser tests drive Debian's chromium + chromium-driver (never a downloaded browser):
# installed here when missing and this machine allows it (root with apt-get). Otherwise the
# browser tests fail and say what to install.
browser:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing chromium and chromium-driver for the browser tests"; \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
				apt-get install -y -qq chromium chromium-driver >/dev/null) || \
				echo "warning: could not install chromium: the browser tests will fail" >&2; \
		else \
			echo "warning: chromium/chromedriver missing and not installable here (needs root and apt-get): the browser tests will fail" >&2; \
		fi; \
	fi

# The benchmarks' own tools, Debian's packages (never a downloaded binary): nginx, which
# bench/queue_bench.py starts in front of its server to measure the line state behind a
# cache as compose serves it, and wrk, its load generator. Installed here when missing and
# this machine allows it (root with apt-get); without them the bench says what it skips.
bench-tools:
	@if ! command -v nginx >/dev/null 2>&1 || ! command -v wrk >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing nginx and wrk for the benchmarks"; \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
				apt-get install -y -qq --no-install-recommends nginx wrk >/dev/null) || \
				echo "warning: could not install nginx/wrk" >&2; \
		else \
			echo "warning: nginx/wrk missing and not installable here (needs root and apt-get)" >&2; \
		fi; \
	fi

# The browser tests again, writing their screenshots to docs/img/ (README.md and docs/USING.md show them).
screenshots: $(STAMP) browser
	SCREENSHOTS_DIR=$(CURDIR)/docs/img $(VENV_PY) -m devtools.devstack test -- pytest tests/browser -m slow

# mypy's Django plugin imports the settings, which want both URLs (nothing connects)
# and, in production mode, real keys: it reads them in development mode.
lint: $(STAMP)
	$(VENV_PY) -m ruff check .
	$(VENV)/bin/lint-imports
	DJANGO_DEBUG=true DATABASE_URL="$${DATABASE_URL:-postgres://unused@127.0.0.1:1/unused}" \
		REDIS_URL="$${REDIS_URL:-redis://127.0.0.1:1/0}" $(VENV)/bin/mypy

# Embedded PostgreSQL and Redis only; prints the DATABASE_URL / REDIS_URL exports.
services: $(STAMP)
	$(VENV_PY) -m devtools.devstack services

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
