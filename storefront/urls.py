from django.urls import path

from customers.authentication import token_signed
from fairqueue.lanes import WAITING, declare
from storefront.views import MeEventView, MyHoldsView, MyTicketsView

urlpatterns = [
    path(
        "events/<uuid:event_id>/me/",
        declare(MeEventView.as_view(), WAITING, proof=token_signed),
        name="me-event",
    ),
    path(
        "me/tickets/",
        declare(MyTicketsView.as_view(), WAITING, proof=token_signed),
        name="me-tickets",
    ),
    # The held-tickets bar every page shows.
    path("me/holds/", declare(MyHoldsView.as_view(), WAITING, proof=token_signed), name="me-holds"),
]
