"""Errors the payments interfaces answer with (all in the one envelope)."""

from fairqueue.errors import AppError, Conflict, GatewayError


class GatewayUnavailable(AppError):
    """The gateway did not answer after our retries: the payment is kept in
    INITIALIZING (reconciliation finishes it); try again shortly."""

    status = 503
    code = "gateway_unavailable"
    message = "The payment gateway is not answering; retry shortly."


class PaymentRefused(GatewayError):
    """The gateway refused the payment for good: it is FAILED and the claim
    released."""

    code = "payment_refused"
    message = "The payment gateway refused this payment; the claim was released."


class AlreadyPaid(Conflict):
    code = "already_paid"
    message = "This claim is already paid."


class InvalidSignature(AppError):
    status = 400
    code = "invalid_signature"
    message = "The webhook signature is missing or wrong."


class MalformedWebhook(AppError):
    status = 400
    code = "malformed_request"
    message = "The webhook body is not a JSON object."
