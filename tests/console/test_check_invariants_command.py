"""``manage.py check_invariants``: a table or JSON on stdout, exit status 0
when every check passes, 1 on any violation, 2 for an unknown event."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from claims.models import Claim
from payments.models import Payment
from tests.support.processes import child_env

pytestmark = pytest.mark.django_db

MANAGE_PY = Path(__file__).resolve().parents[2] / "manage.py"


def run(*args: str) -> str:
    out = StringIO()
    call_command("check_invariants", *args, stdout=out)
    return out.getvalue()


def exit_status(*args: str) -> int:
    """The exit status of ``manage.py check_invariants ...``: Django exits
    with a CommandError's ``returncode`` (the subprocess test below shows it)."""
    try:
        run(*args)
    except CommandError as exc:
        return exc.returncode
    return 0


def test_a_clean_sale_prints_every_check_passing(paid_sale):
    event = paid_sale.event

    lines = run("--event", str(event.pk), "--settled").splitlines()

    assert lines[:4] == [
        "Database",
        "  check                         inv  status  detail",
        "  gateway_refunds_once            7  PASS    every gateway refund recorded once",
        "  payment_log_append_only         7  PASS    payments_paymentevent refuses UPDATE and "
        "DELETE (payments_paymentevent_append_only)",
    ]
    assert lines[5:8] == [
        f"Event Paid sale ({event.pk}, ACTIVE)",
        "claims 3 CONFIRMED, 1 RELEASED; payments 3 CONFIRMED, 1 FAILED; queue 4 COMPLETED",
        "  check                         inv  status  detail",
    ]
    rows = lines[8:-2]
    assert len(rows) == 27
    assert all(row.split()[2] == "PASS" for row in rows)
    assert rows[0] == (
        "  tickets_within_inventory        1  PASS    held/inventory: Regular 2/3, VIP 1/1"
    )
    assert lines[-1] == "29 checks, 0 failed"


def test_a_violation_is_a_fail_row_and_exit_status_1(paid_sale):
    Claim.objects.filter(pk=paid_sale.paid[0].claim_id).update(payment_in_flight=True)
    out = StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("check_invariants", "--event", str(paid_sale.event.pk), stdout=out)

    assert failed.value.returncode == 1
    assert str(failed.value) == "1 invariant check(s) failed: payment_in_flight_flag"
    [row] = [line for line in out.getvalue().splitlines() if "  FAIL  " in line]
    assert row == (
        "  payment_in_flight_flag          5  FAIL    "
        "1 claim flagged in flight without a live payment"
    )
    assert out.getvalue().splitlines()[-1] == "22 checks, 1 failed"


def test_json_output_for_machines(paid_sale):
    Claim.objects.filter(pk=paid_sale.paid[0].claim_id).update(payment_in_flight=True)

    out = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("check_invariants", "--event", str(paid_sale.event.pk), "--json", stdout=out)
    report = json.loads(out.getvalue())

    assert failed.value.returncode == 1
    assert report["ok"] is False
    assert report["failed"] == 1
    assert [c["check"] for c in report["database"]] == [
        "gateway_refunds_once",
        "payment_log_append_only",
    ]
    [event] = report["events"]
    assert event["event_id"] == str(paid_sale.event.pk)
    assert event["counts"]["payments"] == {"CONFIRMED": 3, "FAILED": 1}
    assert len(event["checks"]) == 20
    [bad] = [c for c in event["checks"] if not c["ok"]]
    assert bad == {
        "check": "payment_in_flight_flag",
        "invariant": 5,
        "when": "always",
        "ok": False,
        "detail": "1 claim flagged in flight without a live payment",
        "data": {},
    }


def test_sold_out_and_settled_checks_run_only_when_asked_for(paid_sale):
    def checks(*flags: str) -> set[str]:
        out = StringIO()
        with contextlib.suppress(CommandError):  # the sale is not sold out
            call_command(
                "check_invariants", "--event", str(paid_sale.event.pk), "--json", *flags, stdout=out
            )
        return {c["check"] for c in json.loads(out.getvalue())["events"][0]["checks"]}

    always = checks()
    assert len(always) == 20
    assert checks("--sold-out") - always == {"sold_equals_inventory"}
    assert checks("--settled") - always == {
        "offers_within_free_tickets",
        "sold_out_means_none_free",
        "claims_expired_in_time",
        "admissions_expired_in_time",
        "payments_settled",
        "resale_refunds_settled",
        "redis_agrees",
    }
    assert checks("--settled", "--no-redis") - always == checks("--settled") - always - {
        "redis_agrees"
    }


def test_no_redis_leaves_redis_out_of_a_settled_check(paid_sale, redis_clean):
    redis_clean.flushdb()

    assert exit_status("--event", str(paid_sale.event.pk), "--settled") == 1
    assert exit_status("--event", str(paid_sale.event.pk), "--settled", "--no-redis") == 0


def test_an_unknown_event_is_exit_status_2_and_checks_nothing(paid_sale):
    missing = uuid.uuid4()
    out = StringIO()

    with pytest.raises(CommandError) as refused:
        call_command(
            "check_invariants",
            *("--event", str(paid_sale.event.pk), "--event", str(missing)),
            stdout=out,
        )

    assert refused.value.returncode == 2
    assert str(refused.value) == f"No such event: {missing}."
    assert out.getvalue() == ""


def test_without_event_every_event_is_checked(paid_sale):
    report = json.loads(run("--json"))

    assert [e["event_id"] for e in report["events"]] == [str(paid_sale.event.pk)]
    assert report["ok"] is True


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_real_command_exits_0_1_and_2(paid_sale):
    """``python manage.py check_invariants`` in its own process, against this
    session's test database."""

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(  # noqa: S603
            [sys.executable, str(MANAGE_PY), "check_invariants", *args],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    event = str(paid_sale.event.pk)
    clean = manage("--event", event, "--settled", "--json")
    assert (clean.returncode, clean.stderr) == (0, "")
    assert json.loads(clean.stdout)["ok"] is True

    Payment.objects.filter(pk=paid_sale.paid[0].pk).update(paid_currency="USD")
    broken = manage("--event", event)
    assert broken.returncode == 1
    assert broken.stderr == "CommandError: 1 invariant check(s) failed: payment_amounts_match\n"
    assert broken.stdout.splitlines()[-1] == "22 checks, 1 failed"

    unknown = manage("--event", str(uuid.uuid4()))
    assert unknown.returncode == 2
    assert unknown.stdout == ""
    assert manage("--event", "not-a-uuid").returncode == 2
