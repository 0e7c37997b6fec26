"""Shapes of the queue API's answers (also the OpenAPI schema)."""

import uuid

from rest_framework import serializers

from queueing.domain import QueueStatus
from queueing.services import Extension, JoinResult, PositionResult
from queueing.services.draw import number_draw_key

POLL_AFTER_HELP = (
    "While WAITING: seconds after which a client without the WebSocket should ask for its "
    "place again (every admission tick near the head of the line, seldom far back; before "
    "the sale starts, spread after the start, when the pre-queue is drawn). Null otherwise."
)

SCORE_HELP = (
    "The customer's number in the line: admitted once the line state's `frontier` reaches it "
    "(GET events/{id}/queue/state/)."
)
EPOCH_HELP = (
    "The epoch of `score` and `position`: when the line state's `epoch` differs, learn the "
    "number again (the pre-queue draw gives new ones). Null: learn it again now."
)

DRAW_KEY_HELP = (
    "While the number is a pre-queue one: the customer's own key to the pre-queue draw's "
    "public documents (GET events/{id}/queue/draw/{shard}/), where the page finds its rank "
    "after the draw without signing in. Null otherwise; never share it."
)


class QueueJoinedSerializer(serializers.Serializer):
    queue_entry_id = serializers.UUIDField()
    status = serializers.CharField(
        help_text="WAITING; ADMITTED when a tick admitted the customer while the join was on "
        "its way (the position endpoint then hands out the admission token)."
    )
    position = serializers.IntegerField(
        allow_null=True, help_text="1-based place in the line, exact at this moment."
    )
    eta_seconds = serializers.IntegerField(
        allow_null=True, help_text="Estimated wait at the measured admission rate; null if none."
    )
    served = serializers.IntegerField(
        allow_null=True,
        help_text="Customers admitted so far. The WebSocket `position` push carries the new "
        "total; a client's position moves forward by the difference.",
    )
    poll_after_seconds = serializers.IntegerField(allow_null=True, help_text=POLL_AFTER_HELP)
    score = serializers.IntegerField(allow_null=True, help_text=SCORE_HELP)
    epoch = serializers.IntegerField(allow_null=True, help_text=EPOCH_HELP)
    draw_key = serializers.CharField(allow_null=True, help_text=DRAW_KEY_HELP)


class QueuePositionSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="WAITING, ADMITTED, COMPLETED, ABANDONED or EXPIRED.")
    position = serializers.IntegerField(allow_null=True, help_text="1-based, while WAITING.")
    eta_seconds = serializers.IntegerField(allow_null=True)
    served = serializers.IntegerField(allow_null=True)
    poll_after_seconds = serializers.IntegerField(allow_null=True, help_text=POLL_AFTER_HELP)
    score = serializers.IntegerField(
        required=False, allow_null=True, help_text="Only while WAITING: " + SCORE_HELP
    )
    epoch = serializers.IntegerField(
        required=False, allow_null=True, help_text="Only while WAITING: " + EPOCH_HELP
    )
    draw_key = serializers.CharField(
        required=False, allow_null=True, help_text="Only while WAITING: " + DRAW_KEY_HELP
    )
    admission_token = serializers.CharField(
        required=False, help_text="Only when ADMITTED: give it to the claim endpoint."
    )
    admission_expires_at = serializers.DateTimeField(
        required=False, help_text="Only when ADMITTED: when the time to choose runs out."
    )
    admission_extendable = serializers.BooleanField(
        required=False,
        help_text="Only when ADMITTED: the one extension of the time to choose may still be "
        "asked for (POST events/{id}/queue/extend/).",
    )
    reason = serializers.CharField(
        required=False,
        help_text="Only when EXPIRED: `admission_window` (admitted, did not claim in the time "
        "to choose), `sold_out` (admitted, and nothing was left: first on the waiting list), "
        "`offer_withdrawn` or `sale_ended` (the sale ended, or its sale window closed).",
    )


class ExtensionSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="ADMITTED.")
    admission_token = serializers.CharField(
        help_text="The admission token again, carrying the new expiry (the old one still works)."
    )
    admission_expires_at = serializers.DateTimeField(
        help_text="When the extended time to choose runs out."
    )
    admission_extendable = serializers.BooleanField(help_text="False: the one extension is used.")


class WsTicketSerializer(serializers.Serializer):
    ticket = serializers.CharField(
        help_text="Open ws/events/{id}/queue/?ticket=<ticket> with it: once, and soon."
    )
    expires_in = serializers.IntegerField(help_text="Seconds the ticket stays valid (at most 60).")


Ids = uuid.UUID | str


def joined_body(result: JoinResult, *, event_id: Ids, customer_id: Ids) -> dict:
    return {
        "queue_entry_id": str(result.queue_entry_id),
        "status": str(result.status),
        "position": result.position,
        "eta_seconds": result.eta_seconds,
        "served": result.served,
        "poll_after_seconds": result.poll_after_seconds,
        "score": result.score,
        "epoch": result.epoch,
        "draw_key": number_draw_key(event_id=event_id, customer_id=customer_id, score=result.score)
        if result.status == QueueStatus.WAITING
        else None,
    }


def position_body(result: PositionResult, *, event_id: Ids, customer_id: Ids) -> dict:
    body = {
        "status": str(result.status),
        "position": result.position,
        "eta_seconds": result.eta_seconds,
        "served": result.served,
        "poll_after_seconds": result.poll_after_seconds,
    }
    if result.status == QueueStatus.WAITING:
        body["score"] = result.score
        body["epoch"] = result.epoch
        body["draw_key"] = number_draw_key(
            event_id=event_id, customer_id=customer_id, score=result.score
        )
    if result.admission_token and result.admission_expires_at:
        body["admission_token"] = result.admission_token
        body["admission_expires_at"] = result.admission_expires_at.isoformat()
        body["admission_extendable"] = result.admission_extendable
    if result.reason:
        body["reason"] = result.reason
    return body


def extension_body(extension: Extension) -> dict:
    return {
        "status": QueueStatus.ADMITTED.value,
        "admission_token": extension.admission_token,
        "admission_expires_at": extension.expires_at.isoformat(),
        "admission_extendable": False,
    }
