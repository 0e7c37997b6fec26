from django.urls import path

from storefront.views import MeEventView, MyHoldsView, MyTicketsView

urlpatterns = [
    path("events/<uuid:event_id>/me/", MeEventView.as_view(), name="me-event"),
    path("me/tickets/", MyTicketsView.as_view(), name="me-tickets"),
    path("me/holds/", MyHoldsView.as_view(), name="me-holds"),
]
