"""The organizer's console, in the Django admin (as pretix's control panel):
events with their tiers, the live sale dashboard, orders and buyers with
their CSV exports, the waiting list and the returns, and organizers. One
module per concept; importing the package registers every page.

An organizer user (a member of an ``Organizer``) sees and changes only that
organizer's events and their orders; superusers see all. Every write goes
through a service; a refused change is shown as an admin message.
"""

from console.admin import after_sale, events, orders, organizers

__all__ = ["after_sale", "events", "orders", "organizers"]
