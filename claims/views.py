from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.domain import ReleaseReason
from claims.selectors import claim_get_for_customer
from claims.serializers import (
    ClaimCreateSerializer,
    ClaimDetailSerializer,
    ClaimSerializer,
    claim_created_payload,
)
from claims.services import claim_create, claim_release
from fairqueue.api import IsCustomer, customer_of, parse
from fairqueue.idempotency import HEADER, idempotent

_IDEMPOTENCY_HEADER = OpenApiParameter(
    HEADER,
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Same key and body: the same answer; same key, other body: 422.",
)


class EventClaimCreateView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        request=ClaimCreateSerializer,
        responses={201: ClaimSerializer},
        parameters=[_IDEMPOTENCY_HEADER],
    )
    @idempotent("claims.create")
    def post(self, request: Request, event_id: str) -> Response:
        data = parse(ClaimCreateSerializer, request.data)
        claim = claim_create(
            event_id=event_id,
            customer_id=customer_of(request).id,
            admission_token=data["admission_token"],
            tier_id=data["tier_id"],
            quantity=data["quantity"],
        )
        return Response(claim_created_payload(claim), status=status.HTTP_201_CREATED)


class ClaimDetailView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(responses=ClaimDetailSerializer)
    def get(self, request: Request, claim_id: str) -> Response:
        claim = claim_get_for_customer(claim_id=claim_id, customer_id=customer_of(request).id)
        return Response(ClaimDetailSerializer(claim).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, claim_id: str) -> Response:
        claim_release(
            claim_id=claim_id, reason=ReleaseReason.CUSTOMER, customer_id=customer_of(request).id
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
