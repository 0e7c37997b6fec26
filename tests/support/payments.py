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
from customers.models import Customer
from events.models import Event, TicketTier
from inventory.models import Ticket
from inventory.services import inventory_sync_event
from payments.models import Payment
from payments.paystack import sign
from payments.sandbox import SandboxServer
from tests.support.factories import CustomerFactory, EventFactory, TierFactory, bearer
from tests.support.sales import Admitted, admit_directly, claim_one, make_customers

WEBHOOK_PATH = "/api/v1/webhooks/paystack/"


class Sandbox:
    """The running sandbox plus helpers to drive it like a test would."""

    def __init__(self, server: SandboxServer) -> None:
        self.server = server
        self.app = server.app
        self.url = server.url

    def config(self, **values: Any) -> dict[str, Any]:
        answer = requests.post(f"{self.url}/_sandbox/config", json=values, timeout=5)
        answer.raise_for_status()
        return answer.json()["data"]

    def stats(self) -> dict[str, int]:
        return requests.get(f"{self.url}/_sandbox/stats", timeout=5).json()["data"]

    def transaction(self, reference: str) -> dict[str, Any] | None:
        answer = requests.get(f"{self.url}/_sandbox/transactions/{reference}", timeout=5)
        return answer.json()["data"] if answer.status_code == 200 else None

    def pay(self, reference: str, **body: Any) -> dict[str, Any]:
        answer = requests.post(f"{self.url}/_sandbox/pay/{reference}", json=body, timeout=30)
        answer.raise_for_status()
        return answer.json()["data"]

    def webhook(self, reference: str) -> tuple[bytes, str]:
        """The signed webhook the sandbox would send for this transaction now."""
        body = self.app.webhook_body(reference)
        return body, sign(body, self.app.secret_key)


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
        """Claim one ticket, pay (or decline) at the sandbox, deliver its webhook."""
        with self.on_commit(execute=True):
            claim = claim_one(tier, admitted)
        with self.on_commit(execute=True):
            payment = pending_payment(self.api, claim)
        self.sandbox.pay(payment.reference, outcome=outcome, send_webhook=False)
        with self.on_commit(execute=True):
            response = post_webhook(self.client, *self.sandbox.webhook(payment.reference))
        assert response.status_code == 200, response.content
        return reload(payment)


@dataclass
class PaidSale:
    """An ACTIVE event sold through the real services, API and sandbox
    gateway: Regular (3 tickets) bought by two customers and declined by a
    third in between, VIP (1 ticket) bought; one Regular ticket left. Every
    invariant holds, settled ones included."""

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
    paid += [shop.buy(third, regular), shop.buy(fourth, vip)]
    assert [p.status for p in paid] == ["CONFIRMED"] * 3
    assert declined.status == "FAILED"
    return PaidSale(event, regular, vip, paid, declined, shop)
