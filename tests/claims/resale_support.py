"""Returns and transfers in tests: an event with returns open, bought
through the real services, API and sandbox gateway."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from claims.models import Claim, IssuedTicket
from customers.models import Customer
from events.models import Event, TicketTier
from payments.models import Payment
from tests.support.factories import bearer
from tests.support.payments import pending_payment, post_webhook, reload
from tests.support.sales import Admitted, admit_directly, claim_one, on_sale

PRICE = 500_000
FEE = 50_000


def resale_event(*, tickets: int = 2, **fields: Any) -> TicketTier:
    """An event on sale with returns open for a day and a fee, transfers on."""
    values: dict[str, Any] = {
        "returns_until": timezone.now() + timedelta(days=1),
        "return_fee": FEE,
        "transfers_allowed": True,
        "max_tickets_per_customer": 2,
    }
    values.update(fields)
    return on_sale(tickets=tickets, price=PRICE, **values)


@dataclass
class Buyer:
    admitted: Admitted
    claim: Claim
    payment: Payment

    @property
    def customer(self) -> Customer:
        return self.admitted.customer

    def tickets(self) -> list[IssuedTicket]:
        return list(IssuedTicket.objects.filter(claim=self.claim).order_by("seat"))


def buy(
    api, client, sandbox, on_commit, tier: TicketTier, admitted: Admitted, *, quantity: int = 1
) -> Buyer:
    """Claim (through the service), pay at the sandbox, deliver the webhook."""
    from claims.services import claim_create

    with on_commit(execute=True):
        if quantity == 1:
            claim = claim_one(tier, admitted)
        else:
            claim = claim_create(
                event_id=tier.event_id,
                customer_id=admitted.customer.id,
                admission_token=admitted.token,
                tier_id=tier.id,
                quantity=quantity,
            )
    payment = pay_for(api, client, sandbox, on_commit, claim)
    return Buyer(admitted, reload(claim), reload(payment))


def pay_for(api, client, sandbox, on_commit, claim: Claim) -> Payment:
    """Pay a claim at the sandbox and deliver the webhook."""
    with on_commit(execute=True):
        payment = pending_payment(api, claim)
    sandbox.pay(payment.reference, send_webhook=False)
    with on_commit(execute=True):
        response = post_webhook(client, *sandbox.webhook(payment.reference))
    assert response.status_code == 200, response.content
    return payment


def admitted(event: Event, n: int = 1) -> list[Admitted]:
    from tests.support.sales import make_customers

    return admit_directly(event, make_customers(n))


def return_ticket(api, buyer: Buyer, ticket: IssuedTicket, on_commit):
    with on_commit(execute=True):
        return api.post(f"/api/v1/tickets/{ticket.code}/return/", **bearer(buyer.customer))


def my_tickets(api, customer: Customer) -> dict[str, Any]:
    response = api.get("/api/v1/me/tickets/", **bearer(customer))
    assert response.status_code == 200, response.content
    return response.json()
