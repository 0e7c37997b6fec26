"""The organizer's names for other apps' rows (proxy models: no tables of
their own). An order is a claim of tickets; a buyer is a customer who made
one. Their admin pages are the organizer's orders and buyers lists."""

from claims.models import Claim
from customers.models import Customer


class Order(Claim):
    class Meta:
        proxy = True
        verbose_name = "order"
        ordering = ["-created_at"]


class Buyer(Customer):
    class Meta:
        proxy = True
        verbose_name = "buyer"
