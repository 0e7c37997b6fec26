"""OpenAPI description of the customer token (drf-spectacular extension)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from fairqueue.schema import CUSTOMER_SCHEME


class CustomerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "customers.authentication.CustomerTokenAuthentication"
    name = CUSTOMER_SCHEME

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "Customer token from POST /api/v1/auth/otp/verify/ (24 h).",
        }
