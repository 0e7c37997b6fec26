from django.urls import path

from customers.authentication import token_signed
from fairqueue.lanes import PURCHASE, declare
from payments.views import ClaimPaymentView, PaymentDetailView, PaystackWebhookView, webhook_signed

webhook = declare(PaystackWebhookView.as_view(), PURCHASE, proof=webhook_signed)

urlpatterns = [
    path(
        "claims/<uuid:claim_id>/payments/",
        declare(ClaimPaymentView.as_view(), PURCHASE, proof=token_signed),
        name="claim-payments",
    ),
    path(
        "payments/<uuid:payment_id>/",
        declare(PaymentDetailView.as_view(), PURCHASE, proof=token_signed),
        name="payment-detail",
    ),
    path("webhooks/paystack/", webhook, name="paystack-webhook"),
    # The URL as typed into the gateway's dashboard may lack the slash: served
    # as it is (a redirect would turn the gateway's POST into a GET).
    path("webhooks/paystack", webhook, name="paystack-webhook-no-slash"),
]
