from django.urls import path

from customers.authentication import token_signed
from fairqueue.lanes import ARRIVAL, PURCHASE, WAITING, declare
from queueing.extension_views import QueueExtendView
from queueing.views import (
    QueueDrawShardView,
    QueueLineStateView,
    QueuePositionView,
    QueueView,
    QueueWsTicketView,
)
from queueing.waitlist_views import WaitlistView

urlpatterns = [
    path(
        "events/<uuid:event_id>/queue/state/",
        QueueLineStateView.as_view(),
        name="queue-state",
    ),
    path(
        "events/<uuid:event_id>/queue/draw/<str:shard>/",
        QueueDrawShardView.as_view(),
        name="queue-draw-shard",
    ),
    path(
        "events/<uuid:event_id>/queue/",
        # A join takes its place in line when it runs: joins keep their order among arrivals.
        declare(QueueView.as_view(), {"POST": ARRIVAL, "*": WAITING}, proof=token_signed),
        name="queue",
    ),
    path(
        "events/<uuid:event_id>/queue/position/",
        declare(QueuePositionView.as_view(), WAITING, proof=token_signed),
        name="queue-position",
    ),
    path(
        "events/<uuid:event_id>/queue/extend/",
        # An admitted customer about to choose: beside the claims it leads to.
        declare(QueueExtendView.as_view(), PURCHASE, proof=token_signed),
        name="queue-extend",
    ),
    path(
        "events/<uuid:event_id>/waitlist/",
        # As the line: a join keeps its order among arrivals; a place is read in WAITING.
        declare(WaitlistView.as_view(), {"POST": ARRIVAL, "*": WAITING}, proof=token_signed),
        name="waitlist",
    ),
    path(
        "events/<uuid:event_id>/queue/ws-ticket/",
        declare(QueueWsTicketView.as_view(), WAITING, proof=token_signed),
        name="queue-ws-ticket",
    ),
]
