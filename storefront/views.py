from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.services import ticket_transfer_accept
from customers.authentication import IsCustomer, customer_of
from events.selectors import event_public_get
from fairqueue.schema import error
from storefront.customer_state import (
    customer_event_state,
    customer_holds,
    customer_tickets,
    ticket_body,
    transfers_for_customer,
)
from storefront.serializers import (
    MeEventSerializer,
    MyHoldsSerializer,
    MyTicketsSerializer,
    TransferAcceptedSerializer,
)


class MeEventView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="me_event",
        summary="Where am I: my place in line, my claim, its payment and my tickets",
        responses={200: MeEventSerializer, 404: error("event_not_found")},
    )
    def get(self, request: Request, event_id: str) -> Response:
        event = event_public_get(event_id=event_id)
        return Response(
            customer_event_state(event_id=event.pk, customer_id=customer_of(request).id)
        )


class MyTicketsView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="me_tickets",
        summary="All my tickets, newest first",
        responses={200: MyTicketsSerializer},
    )
    def get(self, request: Request) -> Response:
        customer_id = customer_of(request).id
        return Response(
            {
                "results": customer_tickets(customer_id=customer_id),
                "incoming_transfers": transfers_for_customer(customer_id=customer_id),
            }
        )


class TransferAcceptView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="ticket_transfer_accept",
        summary="Accept a ticket sent to you (signed in with the address it was sent to)",
        request=None,
        responses={
            200: TransferAcceptedSerializer,
            404: error("transfer_not_found (not sent to you either)"),
            409: error(
                "transfer_not_pending, already_claimed (you hold tickets for this event: one "
                "purchase per customer), ticket_on_resale, ticket_already_used, ticket_void, "
                "ticket_not_movable (the sender's payment is disputed or went back; "
                "details.reason)."
            ),
            503: error("busy: retry after Retry-After."),
        },
    )
    def post(self, request: Request, transfer_id: str) -> Response:
        ticket = ticket_transfer_accept(
            transfer_id=transfer_id, customer_id=customer_of(request).id
        )
        body = {
            "transfer_id": str(transfer_id),
            "status": "accepted",
            "ticket": ticket_body(ticket, with_event=True),
        }
        return Response(body)


class MyHoldsView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="me_holds",
        summary="Tickets I hold and have not paid yet (every page's reminder bar)",
        responses={200: MyHoldsSerializer},
    )
    def get(self, request: Request) -> Response:
        return Response({"results": customer_holds(customer_id=customer_of(request).id)})
