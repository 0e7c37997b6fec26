"""Payments in tests: a driver for the sandbox gateway (the real client talks
HTTP to it), claims made directly as rows with their tickets taken, and
payments made through the API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import requests
from django.utils import timezone

from claims.models import Claim
from claims.services import claims_expire
from customers.models import Customer
from devtools.sandbox import SandboxServer, shapes, webhooks
from events.models import Event, TicketTier
from inventory.models import Ticket
from inventory.services import inventory_sync_event
from ledger.domain import charge_moves
from ledger.services import account_post
from payments.models import Payment
from payments.paystack import sign
from tests.support.factories import CustomerFactory, EventFactory, TierFactory, bearer
from tests.support.sales import Admitted, admit_directly, claim_one, make_customers

WEBHOOK_PATH = "/api/v1/webhooks/paystack/"
# The sandbox's control token in tests (its /_sandbox/* API refuses calls without it).
CONTROL_TOKEN = "test-sandbox-control-token"
# Paystack's webhook retry schedule (3 min x 4, then hourly) compressed: 3 min -> 0.09 s.
RETRY_SCALE = 0.0005


class Sandbox:
    """The running sandbox plus helpers to drive it like a test would."""

    def __init__(self, server: SandboxServer, token: str = CONTROL_TOKEN) -> None:
        self.server = server
        self.app = server.app
        self.url = server.url
        self.headers = {"X-Sandbox-Token": token}

    def control(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(
            method, f"{self.url}/_sandbox/{path}", headers=self.headers, timeout=30, **kwargs
        )

    def config(self, **values: Any) -> dict[str, Any]:
        answer = self.control("POST", "config", json=values)
        answer.raise_for_status()
        return answer.json()["data"]

    def stats(self) -> dict[str, int]:
        return self.control("GET", "stats").json()["data"]

    def transaction(self, reference: str) -> dict[str, Any] | None:
        answer = self.control("GET", f"transactions/{reference}")
        return answer.json()["data"] if answer.status_code == 200 else None

    def pay(self, reference: str, **body: Any) -> dict[str, Any]:
        answer = self.control("POST", f"pay/{reference}", json=body)
        answer.raise_for_status()
        return answer.json()["data"]

    def dispute(self, reference: str, **body: Any) -> dict[str, Any]:
        answer = self.control("POST", f"disputes/{reference}", json=body)
        answer.raise_for_status()
        return answer.json()["data"]

    def settle_refund(self, refund_id: str, outcome: str) -> dict[str, Any]:
        answer = self.control("POST", f"refunds/{refund_id}", json={"outcome": outcome})
        answer.raise_for_status()
        return answer.json()["data"]

    def webhook(self, reference: str) -> tuple[bytes, str]:
        """The signed charge.success the sandbox would send for this transaction now."""
        body = self.app.webhook_body(reference)
        return body, sign(body, self.app.secret_key)

    def dispute_webhook(self, reference: str, event: str) -> tuple[bytes, str]:
        """The signed charge.dispute.<event> for the transaction's dispute now."""
        with self.app.lock:
            tx = self.app.transactions[reference]
            data = shapes.dispute(tx["dispute"], tx)
        return webhooks.signed(self.app.secret_key, f"charge.dispute.{event}", data)

    def dashboard_refund(self, reference: str, amount: int | None = None) -> dict[str, Any]:
        """A refund made by hand in the gateway's dashboard: the gateway's own
        Refund API called with the merchant's key, never asked for by us."""
        body: dict[str, Any] = {"transaction": reference}
        if amount is not None:
            body["amount"] = amount
        answer = requests.post(
            f"{self.url}/refund",
            json=body,
            headers={"Authorization": f"Bearer {self.app.secret_key}"},
            timeout=30,
        )
        answer.raise_for_status()
        return answer.json()["data"]

    def refunds_of(self, reference: str) -> list[dict[str, Any]]:
        with self.app.lock:
            return [dict(r) for r in self.app.refunds.values() if r["reference"] == reference]

    def refund_webhook(self, refund_id: int) -> tuple[bytes, str]:
        """The signed refund.<status> the sandbox would send for this refund now."""
        with self.app.lock:
            refund = self.app.refunds[refund_id]
            data = shapes.refund_event(refund, self.app.transactions[refund["reference"]])
        return webhooks.signed(self.app.secret_key, f"refund.{refund['status']}", data)


def make_claim(
    *,
    tier: TicketTier | None = None,
    customer: Customer | None = None,
    quantity: int = 1,
    expires_in: float = 600,
) -> Claim:
    """A CLAIMED claim holding its ticket rows, as claim_create leaves it."""
    tier = tier or TierFactory(inventory=5)
    customer = customer or CustomerFactory()
    claim = Claim.objects.create(
        event=tier.event,
        tier=tier,
        customer=customer,
        quantity=quantity,
        amount=tier.price * quantity,
        currency=tier.event.currency,
        expires_at=timezone.now() + timedelta(seconds=expires_in),
    )
    free = list(
        Ticket.objects.filter(tier=tier, claim__isnull=True).values_list("id", flat=True)[:quantity]
    )
    assert len(free) == quantity, "the tier has no free tickets left"
    Ticket.objects.filter(id__in=free).update(claim=claim)
    return claim


def payment_row(
    *,
    reference: str,
    amount: int,
    status: str = "PENDING",
    currency: str = "NGN",
    tier: TicketTier | None = None,
) -> Payment:
    """A payment with a given reference (to match a published example body)
    for a new claim of that amount: PENDING with its claim being paid, or
    CONFIRMED (money taken) with its claim CONFIRMED."""
    tier = tier or TierFactory(inventory=5, price=amount)
    claim = make_claim(tier=tier)
    paid = status != "PENDING"
    Claim.objects.filter(pk=claim.pk).update(
        status="CONFIRMED" if status == "CONFIRMED" else "CLAIMED",
        payment_in_flight=not paid,
        amount=amount,
        currency=currency,
    )
    payment = Payment.objects.create(
        claim=claim,
        customer=claim.customer,
        reference=reference,
        email=claim.customer.email,
        amount=amount,
        currency=currency,
        status=status,
        paid_amount=amount if paid else None,
        paid_currency=currency if paid else "",
        confirmed_at=timezone.now() if status == "CONFIRMED" else None,
        next_check_at=timezone.now() + timedelta(minutes=5),
    )
    if paid:  # the charge in the purchase's account, as the payment's move writes it
        account_post(
            claim_id=claim.pk,
            moves=charge_moves(
                amount=amount, tickets=claim.quantity if status == "CONFIRMED" else 0
            ),
            currency=currency,
            actor="test",
            payment_id=payment.pk,
        )
    return payment


def pending_payment(api, claim: Claim | None = None) -> Payment:
    """A PENDING payment of ``claim`` (a new one by default), made through the API."""
    claim = claim or make_claim()
    response = api.post(
        f"/api/v1/claims/{claim.id}/payments/", format="json", **bearer(claim.customer)
    )
    assert response.status_code == 201, response.json()
    return Payment.objects.get(pk=response.json()["payment_id"])


def held_tickets(claim: Claim) -> int:
    return Ticket.objects.filter(claim=claim).count()


def reload(obj: Any) -> Any:
    obj.refresh_from_db()
    return obj


def kinds(payment: Payment) -> list[str]:
    return list(payment.events.order_by("created_at", "id").values_list("kind", flat=True))


def transitions(payment: Payment) -> list[tuple[str, str]]:
    return list(
        payment.events.filter(kind="state_change")
        .order_by("created_at", "id")
        .values_list("from_status", "to_status")
    )


def post_webhook(client, body: bytes, signature: str | None):
    headers = {} if signature is None else {"HTTP_X_PAYSTACK_SIGNATURE": signature}
    return client.generic(
        "POST", WEBHOOK_PATH, data=body, content_type="application/json", **headers
    )


@dataclass
class Shop:
    """What buying through the API takes: clients, the sandbox, and pytest-django's
    ``django_capture_on_commit_callbacks`` (each step's after-commit work runs
    as it would in production)."""

    api: Any
    client: Any
    sandbox: Sandbox
    on_commit: Callable[..., Any]

    def buy(self, admitted: Admitted, tier: TicketTier, *, outcome: str = "success") -> Payment:
        """Claim one ticket, pay at the sandbox and deliver its webhook; or
        decline there, which sends no webhook (as with Paystack), and come
        back to the callback page, which finds the decline."""
        with self.on_commit(execute=True):
            claim = claim_one(tier, admitted)
        with self.on_commit(execute=True):
            payment = pending_payment(self.api, claim)
        self.sandbox.pay(payment.reference, outcome=outcome, send_webhook=False)
        with self.on_commit(execute=True):
            if outcome == "success":
                response = post_webhook(self.client, *self.sandbox.webhook(payment.reference))
            else:
                response = self.client.get("/payments/return/", {"reference": payment.reference})
        assert response.status_code == 200, response.content
        return reload(payment)


@dataclass
class PaidSale:
    """An ACTIVE event sold through the real services, API and sandbox
    gateway: Regular (3 tickets) bought by two customers and declined by a
    third in between (whose hold then ran out), VIP (1 ticket) bought; one
    Regular ticket left. Every invariant holds, settled ones included."""

    event: Event
    regular: TicketTier
    vip: TicketTier
    paid: list[Payment]
    declined: Payment
    shop: Shop

    def buy(self, admitted: Admitted, tier: TicketTier, *, outcome: str = "success") -> Payment:
        return self.shop.buy(admitted, tier, outcome=outcome)


def make_paid_sale(shop: Shop) -> PaidSale:
    event = EventFactory(name="Paid sale")
    regular = TierFactory(event=event, name="Regular", inventory=3, price=500_000)
    vip = TierFactory(event=event, name="VIP", inventory=1, price=2_000_000, sort_order=1)
    inventory_sync_event(event_id=event.pk)
    first, second, third, fourth = admit_directly(event, make_customers(4))
    paid = [shop.buy(first, regular)]
    declined = shop.buy(second, regular, outcome="failed")
    # The decliner did not try again: the hold ran out and its ticket went back.
    Claim.objects.filter(pk=declined.claim_id).update(expires_at=timezone.now())
    with shop.on_commit(execute=True):
        claims_expire()
    paid += [shop.buy(third, regular), shop.buy(fourth, vip)]
    assert [p.status for p in paid] == ["CONFIRMED"] * 3
    assert declined.status == "FAILED"
    return PaidSale(event, regular, vip, paid, declined, shop)
