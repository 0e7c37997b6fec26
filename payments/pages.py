"""The page the gateway sends the customer's browser back to (callback_url)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from payments.domain import LIVE_STATUSES
from payments.selectors import payment_by_reference


def payment_return_page(request: HttpRequest) -> HttpResponse:
    """The gateway appends ``?reference=``. The reference is unguessable, so
    showing its status needs no sign-in; the webhook (or reconciliation)
    does the confirming, this page only reports and refreshes while pending."""
    reference = (request.GET.get("reference") or request.GET.get("trxref") or "")[:64]
    payment = payment_by_reference(reference=reference) if reference else None
    return render(
        request,
        "payments/return.html",
        {
            "payment": payment,
            "pending": payment is not None and payment.status in LIVE_STATUSES,
        },
        status=200 if payment is not None else 404,
    )


urlpatterns = [path("payments/return/", payment_return_page, name="payment-return-page")]
