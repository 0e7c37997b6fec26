"""Server-rendered pages for customers using a browser."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from events.inventory import available_tickets
from events.selectors import event_public_get, events_public


def event_list_page(request: HttpRequest) -> HttpResponse:
    return render(request, "events/list.html", {"events": events_public()[:200]})


def event_page(request: HttpRequest, event_id: str) -> HttpResponse:
    event = event_public_get(event_id=event_id)
    available = available_tickets(event_id=event.pk)
    tiers = [(tier, available.get(str(tier.id))) for tier in event.tiers.all()]
    return render(request, "events/detail.html", {"event": event, "tiers": tiers})


urlpatterns = [
    path("", event_list_page, name="event-list-page"),
    path("events/<uuid:event_id>/", event_page, name="event-page"),
]
