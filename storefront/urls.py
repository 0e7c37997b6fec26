from django.urls import path

from storefront.views import MeEventView, MyTicketsView, TransferAcceptView

urlpatterns = [
    path("events/<uuid:event_id>/me/", MeEventView.as_view(), name="me-event"),
    path("me/tickets/", MyTicketsView.as_view(), name="me-tickets"),
    path(
        "transfers/<uuid:transfer_id>/accept/",
        TransferAcceptView.as_view(),
        name="transfer-accept",
    ),
]
