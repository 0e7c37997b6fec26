"""The organizer's names for other apps' rows (proxy models: no tables of
their own). An order is a claim of tickets; a buyer is a customer who made
one. Their admin pages are the organizer's orders and buyers lists."""

from claims.domain import ClaimStatus
from claims.models import Claim
from customers.models import Customer

STATUS_WORDS = {
    ClaimStatus.CLAIMED: "awaiting payment",
    ClaimStatus.CONFIRMED: "paid",
    ClaimStatus.RELEASED: "released",
}


class Order(Claim):
    class Meta:
        proxy = True
        verbose_name = "order"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        """What a person reads as the order's title: "Wizkid Live · 2 x VIP
        · ada@example.com · paid"."""
        status = STATUS_WORDS.get(ClaimStatus(self.status), self.status)
        return (
            f"{self.event.name} · {self.quantity} x {self.tier.name} · "
            f"{self.customer.email} · {status}"
        )


class Buyer(Customer):
    class Meta:
        proxy = True
        verbose_name = "buyer"
