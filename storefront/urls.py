from django.urls import path

from storefront.views import EventDetailView, EventListView, MeEventView, MyTicketsView

urlpatterns = [
    path("events/", EventListView.as_view(), name="event-list"),
    path("events/<uuid:event_id>/", EventDetailView.as_view(), name="event-detail"),
    path("events/<uuid:event_id>/me/", MeEventView.as_view(), name="me-event"),
    path("me/tickets/", MyTicketsView.as_view(), name="me-tickets"),
]
