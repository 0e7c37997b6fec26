from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.domain import ReleaseReason, ticket_code_display
from claims.selectors import claim_get_for_customer
from claims.serializers import (
    CheckedInSerializer,
    CheckInSerializer,
    ClaimCreateSerializer,
    ClaimDetailSerializer,
    ClaimSerializer,
    claim_created_payload,
)
from claims.services import claim_create, claim_release, issued_ticket_check_in
from customers.authentication import IsCustomer, customer_of
from customers.idempotency import IDEMPOTENCY_KEY, idempotent
from events.authentication import OrganizerSessionAuthentication, RunsThisEvent
from fairqueue.api import parse
from fairqueue.schema import error


class EventClaimCreateView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="claim_create",
        summary="Claim tickets with an admission token",
        request=ClaimCreateSerializer,
        responses={
            201: ClaimSerializer,
            401: error(
                "not_authenticated, invalid_token or token_expired: no valid customer token; "
                "or invalid_token: the admission token is not valid."
            ),
            403: error("admission_invalid (another event or customer), admission_expired."),
            404: error("event_not_found"),
            409: error(
                "event_not_on_sale, already_claimed (details.claim_id names the claim that "
                "holds the tickets), claim_in_progress, seats_unavailable (details.seats: "
                "the chosen seats that are taken; nothing is held), not_enough_tickets "
                "(fewer left than asked for, none left held; details.available: how many "
                "are, which the same admission may claim); or idempotency_in_progress (see "
                "the Retry-After header)."
            ),
            410: error("sold_out: none left."),
            422: error(
                "validation_error, invalid_quantity, tier_not_found, seat_not_found "
                "(details.seats), not_reserved_seating (seats on a general tier), "
                "invalid_idempotency_key or idempotency_mismatch."
            ),
            503: error("busy: tickets are briefly unavailable; retry after Retry-After."),
        },
        parameters=[IDEMPOTENCY_KEY],
    )
    @idempotent("claims.create")
    def post(self, request: Request, event_id: str) -> Response:
        data = parse(ClaimCreateSerializer, request.data)
        claim = claim_create(
            event_id=event_id,
            customer_id=customer_of(request).id,
            admission_token=data["admission_token"],
            tier_id=data["tier_id"],
            quantity=data.get("quantity"),
            seats=data.get("seats"),
        )
        return Response(claim_created_payload(claim), status=status.HTTP_201_CREATED)


class ClaimDetailView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="claim_detail",
        responses={200: ClaimDetailSerializer, 404: error("claim_not_found")},
    )
    def get(self, request: Request, claim_id: str) -> Response:
        claim = claim_get_for_customer(claim_id=claim_id, customer_id=customer_of(request).id)
        return Response(ClaimDetailSerializer(claim).data)

    @extend_schema(
        operation_id="claim_release",
        summary="Give a claim's tickets back",
        responses={
            204: None,
            404: error("claim_not_found"),
            409: error("invalid_transition: only a CLAIMED claim can be released."),
        },
    )
    def delete(self, request: Request, claim_id: str) -> Response:
        claim_release(
            claim_id=claim_id, reason=ReleaseReason.CUSTOMER, customer_id=customer_of(request).id
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class TicketCheckInView(APIView):
    """The door. Organizer auth: the admin session of a member of the
    event's organizer, with CSRF (events/authentication.py)."""

    authentication_classes = [OrganizerSessionAuthentication]
    permission_classes = [RunsThisEvent]

    @extend_schema(
        operation_id="ticket_check_in",
        summary="Check a ticket in at the door (organizers)",
        request=CheckInSerializer,
        responses={
            200: CheckedInSerializer,
            401: error("not_authenticated: no admin session."),
            403: error("forbidden: not a member of the event's organizer, or no CSRF token."),
            404: error("ticket_not_found"),
            409: error(
                "ticket_already_used (details.checked_in_at: when), ticket_void (refunded or "
                "released; details.voided_at), ticket_other_event (another event's ticket, "
                "not named)."
            ),
        },
    )
    def post(self, request: Request, event_id: str) -> Response:
        data = parse(CheckInSerializer, request.data)
        ticket = issued_ticket_check_in(
            event_id=event_id, code=data["code"], actor=f"staff:{request.user.get_username()}"
        )
        body = {
            "result": "checked_in",
            "code": ticket_code_display(ticket.code),
            "tier": ticket.tier.name,
            "seat": ticket.seat,
            "seat_label": ticket.seat_label,
            "holder_email": ticket.holder_email,
            "checked_in_at": ticket.checked_in_at,
        }
        return Response(CheckedInSerializer(body).data)
