from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.domain import ReleaseReason, ticket_code_display
from claims.models import TicketReturn, TicketTransfer
from claims.selectors import claim_get_for_customer
from claims.serializers import (
    CheckedInSerializer,
    CheckInSerializer,
    ClaimCreateSerializer,
    ClaimDetailSerializer,
    ClaimSerializer,
    ReturnQuoteSerializer,
    TicketReturnSerializer,
    TransferCreateSerializer,
    TransferSerializer,
    claim_created_payload,
)
from claims.services import (
    claim_create,
    claim_release,
    holder_ticket,
    issued_ticket_check_in,
    ticket_return,
    ticket_return_quote,
    ticket_return_withdraw,
    ticket_transfer_cancel,
    ticket_transfer_create,
)
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
                "ticket_already_used (details.checked_in_at: when), ticket_void (refunded, "
                "released, resold or transferred: a void code never checks in; "
                "details.voided_at, details.reason), ticket_on_resale (returned for resale: "
                "its holder withdraws the return to use it), ticket_other_event (another "
                "event's ticket, not named)."
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
            # Shown at the door only when the organizer has the holder shown.
            "holder_email": ticket.holder_email if ticket.event.holder_shown else "",
            "checked_in_at": ticket.checked_in_at,
        }
        return Response(CheckedInSerializer(body).data)


def return_body(ret: TicketReturn) -> dict[str, object]:
    return {
        "status": "on_resale",
        "return_id": str(ret.pk),
        "code": ticket_code_display(ret.ticket.code),
        "refund_amount": ret.refund_amount,
        "fee": ret.fee,
        "currency": ret.currency,
    }


def transfer_body(transfer: TicketTransfer) -> dict[str, object]:
    return {
        "transfer_id": str(transfer.pk),
        "status": transfer.status.lower(),
        "code": ticket_code_display(transfer.ticket.code),
        "to_email": transfer.to_email,
        "event_id": str(transfer.event_id),
        "created_at": transfer.created_at,
    }


class TicketReturnView(APIView):
    """A holder's return of one ticket for resale at face value."""

    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="ticket_return_quote",
        summary="What returning this ticket would give back (shown before confirming)",
        responses={
            200: ReturnQuoteSerializer,
            404: error("ticket_not_found"),
            409: error("returns_closed, ticket_not_returnable"),
        },
    )
    def get(self, request: Request, code: str) -> Response:
        ticket = holder_ticket(code=code, customer_id=customer_of(request).id)
        quote = ticket_return_quote(ticket=ticket)
        return Response(ReturnQuoteSerializer(quote).data)

    @extend_schema(
        operation_id="ticket_return",
        summary="Return a ticket for resale at face value",
        request=None,
        responses={
            202: TicketReturnSerializer,
            404: error("ticket_not_found"),
            409: error(
                "returns_closed, ticket_not_returnable (a ticket you were sent), "
                "transfer_pending, ticket_already_used, ticket_void, ticket_not_movable "
                "(the purchase's payment is disputed or went back; details.reason)."
            ),
            503: error("busy: retry after Retry-After."),
        },
    )
    def post(self, request: Request, code: str) -> Response:
        ret = ticket_return(code=code, customer_id=customer_of(request).id)
        ret = TicketReturn.objects.select_related("ticket").get(pk=ret.pk)
        return Response(return_body(ret), status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        operation_id="ticket_return_withdraw",
        summary="Withdraw a return nobody has taken yet",
        responses={
            204: None,
            404: error("ticket_not_found, return_not_found"),
            409: error("return_taken: someone is buying it, or has bought it."),
            503: error("busy: retry after Retry-After."),
        },
    )
    def delete(self, request: Request, code: str) -> Response:
        ticket_return_withdraw(code=code, customer_id=customer_of(request).id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TicketTransferView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="ticket_transfer",
        summary="Send a ticket to another person by email",
        request=TransferCreateSerializer,
        responses={
            201: TransferSerializer,
            404: error("ticket_not_found"),
            409: error(
                "transfers_not_allowed (off for the event, or the ticket's limit reached), "
                "transfer_pending, ticket_on_resale, ticket_already_used, ticket_void, "
                "ticket_not_movable (the purchase's payment is disputed or went back; "
                "details.reason)."
            ),
            422: error(
                "validation_error: an address sign-in does not take, or your own "
                "(details.email); the body is not a JSON object, or has unknown fields "
                "(details.unknown_fields) or invalid ones (details.fields)."
            ),
            429: error(
                "rate_limited: too many transfers of this ticket or by you, or offers "
                "emailed to this mailbox; see the Retry-After header."
            ),
            503: error(
                "busy: the purchase is being changed, or the limits cannot be counted; "
                "retry after Retry-After."
            ),
        },
    )
    def post(self, request: Request, code: str) -> Response:
        data = parse(TransferCreateSerializer, request.data)
        transfer = ticket_transfer_create(
            code=code, customer_id=customer_of(request).id, email=data["email"]
        )
        transfer = TicketTransfer.objects.select_related("ticket").get(pk=transfer.pk)
        return Response(TransferSerializer(transfer_body(transfer)).data, status=201)


class TransferView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="ticket_transfer_cancel",
        summary="Cancel a pending transfer (its sender)",
        responses={
            204: None,
            404: error("transfer_not_found"),
            409: error("transfer_not_pending: accepted (or cancelled) first."),
            503: error("busy: the purchase is being changed; retry after Retry-After."),
        },
    )
    def delete(self, request: Request, transfer_id: str) -> Response:
        ticket_transfer_cancel(transfer_id=transfer_id, customer_id=customer_of(request).id)
        return Response(status=status.HTTP_204_NO_CONTENT)
