"""The one extension of an admitted customer's time to choose: parse, call
the service, shape the answer."""

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from customers.authentication import IsCustomer, customer_of
from fairqueue.schema import error
from queueing.serializers import ExtensionSerializer, extension_body
from queueing.services import admission_extend


class QueueExtendView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="queue_extend",
        summary="More time to choose: the one extension of an admission",
        description=(
            "An admitted customer's time to choose (the event's `admission_window_seconds`) "
            "runs once more, from its current end. Once per admission; the page offers it "
            "when it warns that the time is running out. The answer carries a token with the "
            "new expiry, also pushed on the customer's WebSocket as an `admitted` message."
        ),
        request=None,
        responses={
            200: ExtensionSerializer,
            401: error("not_authenticated / invalid_token / token_revoked"),
            403: error("admission_expired: the time to choose is over"),
            404: error("event_not_found or not_in_queue"),
            409: error(
                "already_extended (the one extension was used; details.admission_expires_at) "
                "or invalid_transition (still waiting, not admitted)"
            ),
        },
    )
    def post(self, request: Request, event_id: str) -> Response:
        extension = admission_extend(event_id=event_id, customer_id=customer_of(request).id)
        return Response(extension_body(extension))
