"""The organizer's names for other apps' rows (proxy models: no tables of
their own). An order is a claim of tickets; a buyer is a customer who made
one; a waiting-list entry is a place on a sold-out event's waiting list; a
return is a ticket given back for resale. Their admin pages are the
organizer's lists (platform staff also have each app's own pages)."""

from claims.domain import ClaimSource, ClaimStatus
from claims.models import Claim, TicketReturn
from customers.models import Customer
from queueing.models import WaitlistEntry

STATUS_WORDS = {
    ClaimStatus.CLAIMED: "awaiting payment",
    ClaimStatus.CONFIRMED: "paid",
    ClaimStatus.RELEASED: "released",
}
# A ticket sent by its holder is its recipient's order, with nothing paid.
RECEIVED_WORDS = "received by transfer"


def status_words(claim: Claim) -> str:
    """An order's status as its organizer says it."""
    if claim.source == ClaimSource.TRANSFER and claim.status == ClaimStatus.CONFIRMED:
        return RECEIVED_WORDS
    return STATUS_WORDS.get(ClaimStatus(claim.status), claim.status)


class Order(Claim):
    class Meta:
        proxy = True
        verbose_name = "order"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        """What a person reads as the order's title: "Wizkid Live · 2 x VIP
        · ada@example.com · paid"."""
        status = status_words(self)
        return (
            f"{self.event.name} · {self.quantity} x {self.tier.name} · "
            f"{self.customer.email} · {status}"
        )


class Buyer(Customer):
    class Meta:
        proxy = True
        verbose_name = "buyer"


class WaitingListEntry(WaitlistEntry):
    class Meta:
        proxy = True
        verbose_name = "waiting list entry"
        verbose_name_plural = "waiting list"


class Return(TicketReturn):
    class Meta:
        proxy = True
        verbose_name = "return"
