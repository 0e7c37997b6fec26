"""Errors the payments interfaces answer with (all in the one envelope)."""

from fairqueue.errors import AppError, Conflict, ErrorCode, GatewayError


class GatewayUnavailable(AppError):
    """The gateway did not answer after our retries: the payment is kept in
    INITIALIZING (reconciliation finishes it); try again shortly."""

    status = 503
    code = ErrorCode.GATEWAY_UNAVAILABLE
    message = "The payment gateway is not answering; retry shortly."


class PaymentRefused(GatewayError):
    """The gateway refused the payment for good: it is FAILED and the claim
    released."""

    code = ErrorCode.PAYMENT_REFUSED
    message = "The payment gateway refused this payment; the claim was released."


class AlreadyPaid(Conflict):
    code = ErrorCode.ALREADY_PAID
    message = "This claim is already paid."


class InvalidSignature(AppError):
    status = 400
    code = ErrorCode.INVALID_SIGNATURE
    message = "The webhook signature is missing or wrong."


class MalformedWebhook(AppError):
    status = 400
    code = ErrorCode.MALFORMED_REQUEST
    message = "The webhook body is not a JSON object."
