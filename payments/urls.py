from django.urls import path

from payments.views import ClaimPaymentView, PaymentDetailView, paystack_webhook

urlpatterns = [
    path("claims/<uuid:claim_id>/payments/", ClaimPaymentView.as_view(), name="claim-payments"),
    path("payments/<uuid:payment_id>/", PaymentDetailView.as_view(), name="payment-detail"),
    path("webhooks/paystack/", paystack_webhook, name="paystack-webhook"),
]
