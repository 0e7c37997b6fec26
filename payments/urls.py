from django.urls import path

from payments.views import ClaimPaymentView, PaymentDetailView, PaystackWebhookView

urlpatterns = [
    path("claims/<uuid:claim_id>/payments/", ClaimPaymentView.as_view(), name="claim-payments"),
    path("payments/<uuid:payment_id>/", PaymentDetailView.as_view(), name="payment-detail"),
    path("webhooks/paystack/", PaystackWebhookView.as_view(), name="paystack-webhook"),
    # The URL as typed into the gateway's dashboard may lack the slash: served
    # as it is (a redirect would turn the gateway's POST into a GET).
    path(
        "webhooks/paystack", PaystackWebhookView.as_view(), name="paystack-webhook-no-slash"
    ),
]
