from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from customers.authentication import IsCustomer, customer_of
from events.selectors import event_public_get
from fairqueue.schema import error
from storefront.customer_state import customer_event_state, customer_holds, customer_tickets
from storefront.serializers import (
    MeEventSerializer,
    MyHoldsSerializer,
    MyTicketsSerializer,
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
        return Response({"results": customer_tickets(customer_id=customer_of(request).id)})


class MyHoldsView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="me_holds",
        summary="Tickets I hold and have not paid yet (every page's reminder bar)",
        responses={200: MyHoldsSerializer},
    )
    def get(self, request: Request) -> Response:
        return Response({"results": customer_holds(customer_id=customer_of(request).id)})
