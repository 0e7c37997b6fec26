"""`python -m devtools.devstack test|run|services`: the package docstring says what each does."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from devtools import devstack
from devtools.devstack.processes import (
    REPO_ROOT,
    Interrupted,
    SignalWatch,
    StartupError,
    log,
    run_foreground,
    write_line,
)
from devtools.devstack.services import Stack
from devtools.devstack.system import run_system, wait_for_stop

STATE_DIR = REPO_ROOT / ".fairqueue"


def parse_args(argv: list[str]) -> tuple[str, list[str]]:
    own, cmd = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    parser = argparse.ArgumentParser(
        prog="python -m devtools.devstack",
        description=devstack.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("mode", choices=["test", "run", "services"])
    mode = parser.parse_args(own).mode
    if cmd and mode != "test":
        parser.error("a command after `--` is only accepted in test mode")
    return mode, cmd


def main(argv: list[str] | None = None) -> int:
    mode, cmd = parse_args(sys.argv[1:] if argv is None else argv)
    watch = SignalWatch()
    stack = Stack()
    try:
        if mode == "test":
            base = Path(tempfile.mkdtemp(prefix="fairqueue-test-"))
            stack.temp_dirs.append(base)
            base.chmod(0o711)  # the PostgreSQL system user must reach base/pg
            env = stack.start(base, watch, throwaway=True)
            env.setdefault("DJANGO_DEBUG", "true")
            return run_foreground(cmd or ["pytest"], env, watch)
        STATE_DIR.mkdir(exist_ok=True)
        env = stack.start(STATE_DIR, watch, throwaway=False)
        if mode == "services":
            if not stack.servers:
                log("DATABASE_URL and REDIS_URL are both set: nothing to start")
                return 0
            for server in stack.servers:
                write_line(sys.stdout, f"export {server.env_var}={env[server.env_var]}")
            log("Ctrl-C stops the services")
            return wait_for_stop(stack, watch)
        # A development machine: debug pages, the console email backend, the
        # sandbox gateway. A deployment leaves DJANGO_DEBUG unset (= false).
        env.setdefault("DJANGO_DEBUG", "true")
        return run_system(env, stack, watch)
    except Interrupted as exc:
        log(f"interrupted by {exc}; stopping")
        return 128 + exc.signum
    except StartupError as exc:
        log(f"error: {exc}")
        return 1
    finally:
        stack.close()


if __name__ == "__main__":
    sys.exit(main())
