"""Errors the payments interfaces answer with (all in the one envelope)."""

from fairqueue.errors import AppError, Conflict, ErrorCode


class GatewayUnavailable(AppError):
    """The gateway did not answer after our retries: the payment is kept in
    INITIALIZING (reconciliation finishes it); try again shortly."""

    status = 503
    code = ErrorCode.GATEWAY_UNAVAILABLE
    message = "The payment gateway is not answering; retry shortly."


class PaymentsUnavailable(AppError):
    """The gateway refused us for a reason on our side (our key, our account,
    our request): not the buyer's fault. The payment waits, the claim is kept
    (and gets the lost time back), staff are alerted; try again later."""

    status = 503
    code = ErrorCode.PAYMENTS_UNAVAILABLE
    message = "Payments are unavailable for a moment; your tickets stay held. Retry shortly."


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
