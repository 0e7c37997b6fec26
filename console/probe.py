"""Container healthchecks, on the standard library alone (a probe runs
every few seconds: it must start fast and needs no Django):

    python -m console.probe http http://127.0.0.1:8000/healthz   # web, ws
    python -m console.probe heartbeat /tmp/fairqueue/worker --max-age 20
    python -m console.probe heartbeat /tmp/fairqueue/beat --max-age 20

Exit 0 when healthy, 1 with the reason on stderr otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def check_http(url: str, timeout: float) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - our URL
            status = response.status
    except urllib.error.HTTPError as exc:
        return f"{url} answered {exc.code}"
    except OSError as exc:
        return f"{url} unreachable: {exc}"
    return None if 200 <= status < 300 else f"{url} answered {status}"


def check_heartbeat(path: Path, max_age: float, now: float | None = None) -> str | None:
    try:
        age = (now if now is not None else time.time()) - path.stat().st_mtime
    except OSError:
        return f"{path} missing: the process has not started (or HEARTBEAT_DIR differs)"
    return None if age <= max_age else f"{path} is {age:.0f} s old (limit {max_age:g} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.probe", description=__doc__)
    sub = parser.add_subparsers(dest="kind", required=True)
    http = sub.add_parser("http", help="GET the URL; healthy on 2xx")
    http.add_argument("url")
    http.add_argument("--timeout", type=float, default=3.0)
    beat = sub.add_parser("heartbeat", help="healthy while the file is fresh")
    beat.add_argument("path", type=Path)
    beat.add_argument("--max-age", type=float, default=20.0)
    args = parser.parse_args(argv)
    if args.kind == "http":
        problem = check_http(args.url, args.timeout)
    else:
        problem = check_heartbeat(args.path, args.max_age)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
