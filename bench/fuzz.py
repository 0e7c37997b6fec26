"""Fuzz the API from its OpenAPI schema with schemathesis, against a running stack.

    python bench/fuzz.py --launch-stack
    DATABASE_URL=... python bench/fuzz.py --url http://127.0.0.1:8000

Checks: no 5xx (``not_a_server_error``), every status code, content type
and response header documented, every response body valid against the
schema, operations that need a token refuse requests without one
(``ignored_auth``), an undocumented method is a 405 with an ``Allow`` header
that tells the truth. Two passes:

1. path parameters bound to real resources of one customer (an event it is
   admitted to, its claim, its payment), so generated bodies reach the code
   behind the existence checks;
2. path parameters generated too (unknown ids, malformed values).

A launched stack gets sign-in rate limits far above the fuzzer's pace, so the
sign-in code behind the throttle is fuzzed too (a 429 is still checked
against the schema whenever one comes).

Requests carry that customer's bearer token (schemathesis also sends
requests without it). Reports (JUnit XML) go to bench/out/fuzz/.
Exit status: schemathesis' own (0 = no failure).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import requests

from bench.stack import manage

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "bench" / "out" / "fuzz"
CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_schema_conformance,response_headers_conformance,ignored_auth,"
    "unsupported_method,allow_header_conformance,missing_required_header"
)

# For --launch-stack: the sign-in throttles (10 and 30 per hour per client)
# would answer nearly every generated sign-in request with 429.
FUZZ_STACK_ENV = {
    "THROTTLE_OTP_REQUEST": "100000/hour",
    "THROTTLE_OTP_VERIFY": "100000/hour",
}


def customer_with_purchase(base: str, env: dict[str, str]) -> dict[str, str]:
    """A customer admitted to an event, holding a claim with a payment started
    (the admission tick of the running stack lets it in within seconds)."""
    event = json.loads(
        manage(
            env,
            "create_event",
            "--name",
            f"Fuzz {uuid.uuid4().hex[:8]}",
            "--tier",
            "Regular:500000:50",
            "--activate",
            "--batch-size",
            "10",
            "--window-seconds",
            "3600",
        ).splitlines()[-1]
    )
    tokens = OUT_DIR / "tokens.txt"
    manage(
        env,
        "mint_customer_tokens",
        "--count",
        "1",
        "--output",
        str(tokens),
        "--email-prefix",
        f"fuzz{uuid.uuid4().hex[:6]}",
    )
    _, token = tokens.read_text().split()
    auth = {"Authorization": f"Bearer {token}"}
    eid = event["event_id"]
    answer = requests.post(f"{base}/api/v1/events/{eid}/queue/", headers=auth, timeout=10)
    answer.raise_for_status()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        position = requests.get(
            f"{base}/api/v1/events/{eid}/queue/position/", headers=auth, timeout=10
        ).json()
        if position.get("admission_token"):
            break
        time.sleep(1)
    else:
        raise SystemExit("not admitted within 60 s: is the Celery beat running?")
    claim = requests.post(
        f"{base}/api/v1/events/{eid}/claims/",
        json={
            "admission_token": position["admission_token"],
            "tier_id": event["tiers"][0]["id"],
            "quantity": 1,
        },
        headers=auth,
        timeout=10,
    )
    claim.raise_for_status()
    claim_id = claim.json()["claim_id"]
    payment = requests.post(
        f"{base}/api/v1/claims/{claim_id}/payments/", json={}, headers=auth, timeout=30
    )
    payment.raise_for_status()
    return {
        "token": token,
        "event_id": eid,
        "claim_id": claim_id,
        "payment_id": payment.json()["payment_id"],
    }


def write_config(path: Path, token: str, ids: dict[str, str] | None) -> None:
    lines = ["[headers]", f'Authorization = "Bearer {token}"']
    if ids:
        lines.append("[parameters]")
        lines += [
            f'"path.{name}" = "{ids[name]}"' for name in ("event_id", "claim_id", "payment_id")
        ]
    path.write_text("\n".join(lines) + "\n")


def run_pass(name: str, base: str, config: Path, args: argparse.Namespace) -> int:
    report_dir = OUT_DIR / name
    cmd = [
        str(Path(sys.executable).parent / "schemathesis"),
        "--config-file",
        str(config),
        "run",
        f"{base}/api/schema/",
        "--url",
        base,
        "--checks",
        CHECKS,
        "--max-examples",
        str(args.max_examples),
        "--workers",
        str(args.workers),
        "--seed",
        str(args.seed),
        "--report",
        "junit",
        "--report-dir",
        str(report_dir),
        "--request-timeout",
        "30",
    ]
    if args.max_time:
        cmd += ["--max-time", str(args.max_time)]
    print(f"\n=== fuzz pass: {name} ===\n{' '.join(cmd)}", flush=True)
    return subprocess.run(cmd, cwd=OUT_DIR, check=False).returncode  # noqa: S603


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python bench/fuzz.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--launch-stack", action="store_true", help="start the whole system here")
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--database-url", default=os.environ.get("DATABASE_URL"))
    p.add_argument("--max-examples", type=int, default=50, help="per operation")
    p.add_argument("--max-time", type=int, default=0, help="seconds per pass (0: no limit)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stack = None
    try:
        if args.launch_stack:
            from bench.stack import LocalStack

            stack = LocalStack(OUT_DIR / "stack", env_overrides=FUZZ_STACK_ENV)
            print("starting the stack ...", flush=True)
            stack.start()
            env, base = stack.env, stack.http_url
        else:
            if not args.database_url:
                p.error("DATABASE_URL (or --database-url) is needed without --launch-stack")
            env, base = {**os.environ, "DATABASE_URL": args.database_url}, args.url.rstrip("/")
        ids = customer_with_purchase(base, env)
        bound, free = OUT_DIR / "bound.toml", OUT_DIR / "free.toml"
        write_config(bound, ids["token"], ids)
        write_config(free, ids["token"], None)
        codes = {
            "bound-ids": run_pass("bound-ids", base, bound, args),
            "generated-ids": run_pass("generated-ids", base, free, args),
        }
        print(f"\nfuzz results (schemathesis exit codes): {codes}")
        return max(codes.values())
    finally:
        if stack is not None:
            stack.stop()


if __name__ == "__main__":
    sys.exit(main())
