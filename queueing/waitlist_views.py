"""The waiting list's REST interface: parse, call one service, shape the answer."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from customers.authentication import IsCustomer, customer_of
from fairqueue.schema import error
from queueing.domain import WaitlistStatus
from queueing.services.waitlist import WaitlistPlace, waitlist_join, waitlist_leave, waitlist_place


class WaitlistJoinSerializer(serializers.Serializer):
    tier_id = serializers.UUIDField(
        required=False, allow_null=True, help_text="The tier wanted; omitted or null: any tier."
    )


class WaitlistEntrySerializer(serializers.Serializer):
    waitlist_entry_id = serializers.UUIDField()
    status = serializers.ChoiceField(
        choices=[s.value for s in WaitlistStatus],
        help_text="waiting, offered (claim with admission_token before offer_expires_at), "
        "accepted (claimed the offered ticket), lapsed, left or closed (the sale ended).",
    )
    tier_id = serializers.UUIDField(allow_null=True, help_text="The tier wanted; null: any.")
    position = serializers.IntegerField(
        allow_null=True,
        help_text="1-based place among the entries a freed ticket of this tier would go to "
        "first, while waiting; null before the first minute's draw (see draw_at).",
    )
    draw_at = serializers.DateTimeField(
        allow_null=True,
        help_text="An entry of the first minute after the sell-out: when the draw gives it its "
        "place.",
    )
    offer_tier_id = serializers.UUIDField(allow_null=True, help_text="The tier offered.")
    offer_expires_at = serializers.DateTimeField(allow_null=True)
    admission_token = serializers.CharField(
        allow_null=True,
        help_text="While offered: use it with POST events/{id}/claims/ for one ticket of "
        "offer_tier_id, exactly like an admission from the line.",
    )


def _body(place: WaitlistPlace) -> dict:
    entry = place.entry
    offered = place.admission_token is not None
    return {
        "waitlist_entry_id": entry.id,
        "status": place.status,
        "tier_id": entry.tier_id,
        "position": place.position,
        "draw_at": place.draw_at,
        "offer_tier_id": entry.offer_tier_id if offered else None,
        "offer_expires_at": place.offer_expires_at,
        "admission_token": place.admission_token,
    }


class WaitlistView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="waitlist_join",
        summary="Join the waiting list of a sold-out event (or of an ended sale, returns open)",
        request=WaitlistJoinSerializer,
        responses={
            201: WaitlistEntrySerializer,
            401: error("not_authenticated / invalid_token"),
            404: error("event_not_found"),
            409: error(
                "waitlist_closed (not sold out, or the sale ended and returns closed), "
                "already_on_waitlist, already_claimed, or already_in_queue (admitted from "
                "the line)"
            ),
            422: error(
                "validation_error (the body is not a JSON object, or tier_id is not a UUID: "
                "details.fields; unknown fields are ignored) or tier_not_found (no such tier "
                "of the event)."
            ),
        },
    )
    def post(self, request: Request, event_id: str) -> Response:
        body = WaitlistJoinSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        customer_id = customer_of(request).id
        waitlist_join(
            event_id=event_id, customer_id=customer_id, tier_id=body.validated_data.get("tier_id")
        )
        place = waitlist_place(event_id=event_id, customer_id=customer_id)
        return Response(WaitlistEntrySerializer(_body(place)).data, status=201)

    @extend_schema(
        operation_id="waitlist_entry",
        summary="My entry on the waiting list: my place, or my offer",
        responses={
            200: WaitlistEntrySerializer,
            401: error("not_authenticated / invalid_token"),
            404: error("event_not_found or not_on_waitlist"),
        },
    )
    def get(self, request: Request, event_id: str) -> Response:
        place = waitlist_place(event_id=event_id, customer_id=customer_of(request).id)
        return Response(WaitlistEntrySerializer(_body(place)).data)

    @extend_schema(
        operation_id="waitlist_leave",
        summary="Leave the waiting list (an open offer is given up)",
        responses={
            204: None,
            401: error("not_authenticated / invalid_token"),
            404: error("event_not_found or not_on_waitlist"),
            503: error("busy: the entry changed meanwhile; retry shortly"),
        },
    )
    def delete(self, request: Request, event_id: str) -> Response:
        waitlist_leave(event_id=event_id, customer_id=customer_of(request).id)
        return Response(status=204)
