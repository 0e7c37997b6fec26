"""The served OpenAPI schema, fuzzed against the web process as `make run`
starts it: Schemathesis generates requests from ``/api/schema/`` (the
demo event, a customer who bought a ticket of it) and runs every check it
has on the answers. Each answer must be one the schema declares, with a
body and headers that fit it; a request the schema calls valid must not be
refused as bad data ("schema-valid request accepted"), one it calls invalid
must not be accepted; an operation that wants a token must refuse requests
without one; a method the schema does not list is a 405 with a true
``Allow``. The run is bounded (a fixed seed, a few dozen cases per
operation) and must end with no failure; a server answering outside its
schema must fail it.

What the fuzzer cannot know, a client would, and the test supplies it:

- path parameters are the sale's real ids, so requests reach the code
  behind the lookups (unknown ids are tests/fairqueue/test_bad_input.py's);
- when a case is meant to be valid, a claim or waiting-list body names the
  event's real tiers and seats and a quantity within its limit, and a
  transfer is not to the holder's own address (each refused with a
  declared 422): no schema can say which tiers an event has, or who asks;
- an ``Idempotency-Key`` names one request: the same key is never sent with
  another body (that is ``422 idempotency_mismatch``, declared, but no
  schema can say what a key was used with before);
- sign-out is fuzzed with a token of its own, or it would sign the run out.

``POST auth/otp/verify/`` trades an emailed code for a token: a code the
fuzzer makes up is ``400 otp_invalid`` as declared. Schemathesis excuses a
refused credential on token endpoints it recognises (an OAuth2
``tokenUrl``); ours is no OAuth2 flow, so the test says it for that
operation: 400 is an accepted answer to valid data there, 422 is not.

The Paystack webhook is not in the schema (it is the gateway's, signed
with our secret key): nothing of it is fuzzed here; tests/payments covers
its bodies and signatures.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from io import StringIO
from typing import Any

import hypothesis.configuration
import pytest
import schemathesis
import schemathesis.hooks
from django.core.management import call_command
from django.utils import timezone
from rest_framework.response import Response
from schemathesis.engine import events
from schemathesis.engine import from_schema as engine_for

import customers.views
from claims.models import Claim, IssuedTicket
from claims.services import ticket_transfer_create
from customers.emails import email_canonical
from customers.idempotency import HEADER as IDEMPOTENCY_HEADER
from customers.idempotency import MAX_KEY_LENGTH
from events.management.commands.bootstrap_demo import DEMO_SLUG
from events.models import Event, TicketTier, TierKind
from inventory.models import Ticket
from tests.claims.resale_support import pay_for
from tests.support.factories import CustomerFactory, bearer
from tests.support.processes import web_process
from tests.support.sales import admit_directly, claim_one

pytestmark = pytest.mark.slow

SEED = 20240601
MAX_EXAMPLES = 20  # generated cases per operation: the run takes under a minute on 2 cores
# The answers Schemathesis accepts to a valid request by default (positive_data_acceptance).
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
# Every check Schemathesis has (all are on unless configured off), each of
# which the run must have made; max_response_time is off without a limit.
EVERY_CHECK = {
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "positive_data_acceptance",
    "negative_data_rejection",
    "missing_required_header",
    "ignored_auth",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "object_level_authorization",
}


@dataclass(frozen=True)
class Sale:
    """The demo event, returns and transfers on, and a customer who bought a
    ticket of it and is sending it to someone."""

    event_id: str
    general_tier_id: str
    seated_tier_id: str
    seat_label: str
    max_per_customer: int
    email: str
    token: str
    claim_id: str
    payment_id: str
    code: str
    transfer_id: str


@pytest.fixture
def sale(transactional_db, api, client, sandbox, eager_tasks, django_capture_on_commit_callbacks):
    call_command("bootstrap_demo", "--quiet", stdout=StringIO())
    Event.objects.filter(slug=DEMO_SLUG).update(
        returns_until=timezone.now() + timedelta(days=1), transfers_allowed=True
    )
    event = Event.objects.get(slug=DEMO_SLUG)
    tiers = TicketTier.objects.filter(event=event).order_by("sort_order", "name")
    general = next(t for t in tiers if t.kind == TierKind.GENERAL)
    seated = next(t for t in tiers if t.kind != TierKind.GENERAL)
    seat = Ticket.objects.filter(tier=seated).order_by("label").values_list("label", flat=True)[0]
    (buyer,) = admit_directly(event, [CustomerFactory()])
    claim = claim_one(general, buyer)
    payment = pay_for(api, client, sandbox, django_capture_on_commit_callbacks, claim)
    assert Claim.objects.get(pk=claim.pk).status == "CONFIRMED"
    ticket = IssuedTicket.objects.get(claim=claim)
    transfer = ticket_transfer_create(
        code=ticket.code, customer_id=buyer.customer.id, email="friend@example.test"
    )
    return Sale(
        event_id=str(event.pk),
        general_tier_id=str(general.pk),
        seated_tier_id=str(seated.pk),
        seat_label=seat,
        max_per_customer=event.max_tickets_per_customer,
        email=buyer.customer.email,
        token=bearer(buyer.customer)["HTTP_AUTHORIZATION"],
        claim_id=str(claim.pk),
        payment_id=str(payment.pk),
        code=ticket.code,
        transfer_id=str(transfer.pk),
    )


@pytest.fixture
def no_hypothesis_files(tmp_path) -> Iterator[None]:
    """Hypothesis keeps caches in ./.hypothesis unless told otherwise."""
    hypothesis.configuration.set_hypothesis_home_dir(tmp_path / "hypothesis")
    yield
    hypothesis.configuration.set_hypothesis_home_dir(None)


def _key_ok(value: object) -> bool:
    """An Idempotency-Key the server takes (customers/idempotency.py)."""
    key = str(value).strip()
    return 0 < len(key) <= MAX_KEY_LENGTH and key.isascii() and key.isprintable()


def _own(address: object, email: str) -> bool:
    return isinstance(address, str) and email_canonical(address) == email_canonical(email)


def _as_a_client_would(sale: Sale):
    """A ``before_call`` hook: what a client knows and a schema cannot say."""

    def before_call(context: Any, case: Any, kwargs: Any = None) -> None:
        meta = case.meta  # read before any change: a changed case is classified again
        if meta is None or not meta.generation.mode.is_positive:
            return
        headers = case.headers or {}
        for name in [n for n in headers if n.lower() == IDEMPOTENCY_HEADER.lower()]:
            if _key_ok(headers[name]):
                request = json.dumps(
                    [headers[name], case.method, case.formatted_path, case.body],
                    sort_keys=True,
                    default=str,
                )
                headers[name] = hashlib.sha256(request.encode()).hexdigest()
        if not isinstance(case.body, dict):
            return
        body = dict(case.body)  # a new body: a generated one may be shared
        operation_id = case.operation.definition.raw.get("operationId")
        if operation_id == "claim_create":
            if "seats" in body:  # a real seat of the seated tier, quantity to match
                body.update(tier_id=sale.seated_tier_id, seats=[sale.seat_label])
                if "quantity" in body:
                    body["quantity"] = 1
            else:
                body.update(tier_id=sale.general_tier_id, quantity=sale.max_per_customer)
        elif operation_id == "waitlist_join" and body.get("tier_id") is not None:
            body["tier_id"] = sale.general_tier_id
        elif operation_id == "ticket_transfer" and _own(body.get("email"), sale.email):
            body["email"] = "friend@example.test"  # not to oneself (422, declared)
        case.body = body

    return before_call


@dataclass
class Run:
    """What one Schemathesis run did and found."""

    operations: set[str] = field(default_factory=set)
    cases: int = 0
    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)
    failures: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{len(self.operations)} operations, {self.cases} cases, {self.requests} requests, "
            f"statuses {dict(sorted(self.statuses.items()))}, {len(self.failures)} failures; "
            f"checks run {dict(sorted(self.checks.items()))}; "
            f"seconds by phase { {k: round(v, 1) for k, v in self.seconds.items()} }"
        )


def fuzz(schema: Any) -> Run:
    """Schemathesis' own engine (what its command line runs) over the schema."""
    run = Run()
    for event in engine_for(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            if event.label:
                run.operations.add(event.label)
            run.seconds[str(event.phase)] += event.elapsed_time
            run.cases += len(event.recorder.cases)
            for interaction in event.recorder.interactions.values():
                run.requests += 1
                if interaction.response is not None:
                    run.statuses[interaction.response.status_code] += 1
            for case_id, checks in event.recorder.checks.items():
                for check in checks:
                    run.checks[check.name] += 1
                    if check.failure_info is not None:
                        failure = check.failure_info.failure
                        interaction = event.recorder.interactions.get(case_id)
                        answer = interaction.response if interaction is not None else None
                        run.failures.add(
                            f"{failure.operation}: {check.name}: {failure.title} ({event.phase})\n"
                            f"{failure.message}\n{check.failure_info.code_sample}\n"
                            f"answered: {answer.content[:300] if answer is not None else None!r}"
                        )
        elif isinstance(event, events.NonFatalError):
            run.errors.append(f"{event.label}: {event.info.title}: {event.info.message}")
        elif isinstance(event, events.FatalError):
            run.errors.append(repr(event.exception))
        elif isinstance(event, events.EngineFinished):
            run.failures.update(f"{f.operation}: {f.title}\n{f.message}" for f in event.failures)
    return run


def labels(schema: Any) -> list[str]:
    return [
        f"{method.upper()} {path}"
        for path, methods in schema.raw_schema["paths"].items()
        for method in methods
        if method in {"get", "post", "put", "patch", "delete"}
    ]


def config(token: str, **project: Any) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            # Generating slowly is the machine's doing (other tests run beside this one),
            # never the API's: not a failure.
            "suppress-health-check": ["too_slow"],
            "headers": {"Authorization": token},
            "generation": {"max-examples": MAX_EXAMPLES, "database": "none"},
            # Error feedback reads a 422 as DRF's own error body (fields at the top)
            # and takes our envelope's error.details.fields.<name> for request
            # properties to add: it would invent an "error" field in every body.
            "phases": {"fuzzing": {"error-feedback": {"enabled": False}}},
            "request-timeout": 30,
            # No .schemathesis/ cache: each run starts from the schema alone.
            "cache": {"enabled": False},
            **project,
        }
    )


def test_the_api_answers_as_its_schema_says(sale, no_hypothesis_files):
    sign_out_token = bearer(CustomerFactory())["HTTP_AUTHORIZATION"]
    hook = schemathesis.hook("before_call")(_as_a_client_would(sale))
    try:
        with web_process(WEB_CONCURRENCY="1") as base:
            schema = schemathesis.openapi.from_url(
                f"{base}/api/schema/",
                config=config(
                    sale.token,
                    parameters={
                        "path.event_id": sale.event_id,
                        "path.tier_id": sale.seated_tier_id,
                        "path.claim_id": sale.claim_id,
                        "path.payment_id": sale.payment_id,
                        "path.code": sale.code,
                        "path.transfer_id": sale.transfer_id,
                    },
                    operations=[
                        {
                            "include-operation-id": "auth_logout",
                            "headers": {"Authorization": sign_out_token},
                        },
                        {
                            "include-operation-id": "auth_otp_verify",
                            "checks": {
                                "positive_data_acceptance": {
                                    "expected-statuses": [*ACCEPTED, "400"]
                                }
                            },
                        },
                    ],
                ),
            )
            run = fuzz(schema)
    finally:
        schemathesis.hooks.unregister(hook)
    print(run.summary())
    assert run.errors == []
    assert run.failures == set(), "\n\n".join(sorted(run.failures))
    assert run.operations >= set(labels(schema))  # every operation was fuzzed
    assert run.requests > 800  # about 30 per operation: the run was not cut short
    assert set(run.checks) >= EVERY_CHECK


# --- the control: an answer outside the schema fails the run --------------------


def _body_without_email(serializer_input: dict[str, Any]) -> Any:
    class Broken:
        data = {"customer_id": str(serializer_input["customer_id"])}  # "email" is required

    return Broken()


@pytest.mark.parametrize(
    ("breakage", "check"),
    [("body", "response_schema_conformance"), ("status", "status_code_conformance")],
)
def test_an_answer_outside_the_schema_fails_the_run(
    live_server, monkeypatch, no_hypothesis_files, breakage, check
):
    """``GET auth/me/`` answers without a required field, or with a status
    it does not declare: Schemathesis reports it, on that operation. (The
    live server is a thread of this process, so the view can be patched.)"""
    if breakage == "body":
        monkeypatch.setattr(customers.views, "MeSerializer", _body_without_email)
    else:
        monkeypatch.setattr(
            customers.views, "Response", lambda data, **kw: Response(data, status=203)
        )
    token = bearer(CustomerFactory())["HTTP_AUTHORIZATION"]
    schema = schemathesis.openapi.from_url(
        f"{live_server.url}/api/schema/", config=config(token)
    ).include(operation_id="auth_me")
    run = fuzz(schema)
    print(run.summary())
    assert run.operations == {"GET /api/v1/auth/me/"}
    assert any(f.startswith(f"GET /api/v1/auth/me/: {check}:") for f in run.failures), run.failures
