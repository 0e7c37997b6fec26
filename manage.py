#!/usr/bin/env python
import os
import sys

# Settings refuse to load without DATABASE_URL / REDIS_URL, and in production
# without their secrets (config/safety.py). Help needs none of them: for
# `manage.py`, `manage.py help [cmd]` and `manage.py <cmd> --help` the services
# get addresses nothing listens on (nothing connects while printing help) and the
# settings load in development mode, whose defaults need no secret. The help
# is the same in every mode, and argparse exits after printing it: no command runs.
HELP_FLAGS = {"-h", "--help", "--version"}
UNREACHABLE = {"DATABASE_URL": "postgres://help@127.0.0.1:1/help", "REDIS_URL": "redis://127.0.0.1:1/0"}


def only_help(argv: list[str]) -> bool:
    return len(argv) < 2 or argv[1] in ("help", "version") or any(a in HELP_FLAGS for a in argv[1:])


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if only_help(sys.argv):
        for name, url in UNREACHABLE.items():
            os.environ.setdefault(name, url)
        os.environ["DJANGO_DEBUG"] = "true"
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
