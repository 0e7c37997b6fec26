from typing import Any

from django.core.validators import EmailValidator
from rest_framework import serializers

from customers.emails import mailbox_validator
from customers.services import CODE_DIGITS
from fairqueue.api import StrictSerializer


class MailboxField(serializers.EmailField):
    """An address sign-in accepts: Django's email check without quoted local
    parts, address literals or dotless domains (customers/emails.py)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        kept = [v for v in self.validators if not isinstance(v, EmailValidator)]
        self.validators = [*kept, mailbox_validator]


class OtpRequestSerializer(StrictSerializer):
    email = MailboxField(max_length=254)
    nonce = serializers.CharField(
        required=False,
        max_length=64,
        help_text="To resend: the nonce of this client's last request (its code is replaced).",
    )


class OtpVerifySerializer(StrictSerializer):
    email = MailboxField(max_length=254)
    nonce = serializers.CharField(
        max_length=64,
        help_text="The nonce the request answered with: the code only works for that client.",
    )
    code = serializers.RegexField(
        rf"^\d{{{CODE_DIGITS}}}$",
        help_text=f"The {CODE_DIGITS}-digit code from the email.",
        error_messages={"invalid": f"The code is {CODE_DIGITS} digits."},
    )


class OtpSentSerializer(serializers.Serializer):
    status = serializers.CharField(help_text='Always "sent", whether or not the address is known.')
    expires_in = serializers.IntegerField(help_text="Seconds the code stays valid.")
    resend_after = serializers.IntegerField(help_text="Seconds before another code may be asked.")
    nonce = serializers.CharField(
        help_text="Send it with the code to otp/verify/ (and to otp/request/ to resend)."
    )


class SignInSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Customer token: send as 'Authorization: Bearer'.")
    customer_id = serializers.UUIDField()
    expires_at = serializers.DateTimeField()


class MeSerializer(serializers.Serializer):
    customer_id = serializers.UUIDField()
    email = serializers.EmailField()


class LogoutSerializer(StrictSerializer):
    everywhere = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Sign out every token of this customer, not only this one.",
    )
