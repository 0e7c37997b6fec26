from django.urls import path

from customers.authentication import token_signed
from customers.views import LogoutView, MeView, OtpRequestView, OtpVerifyView
from fairqueue.lanes import WAITING, declare

urlpatterns = [
    path("otp/request/", OtpRequestView.as_view(), name="otp-request"),
    path("otp/verify/", OtpVerifyView.as_view(), name="otp-verify"),
    path("me/", declare(MeView.as_view(), WAITING, proof=token_signed), name="me"),
    path("logout/", declare(LogoutView.as_view(), WAITING, proof=token_signed), name="logout"),
]
