"""OpenAPI description of the organizer's session (drf-spectacular extension)."""

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension

ORGANIZER_SCHEME = "organizerSession"


class OrganizerSessionScheme(OpenApiAuthenticationExtension):
    target_class = "events.authentication.OrganizerSessionAuthentication"
    name = ORGANIZER_SCHEME

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": settings.SESSION_COOKIE_NAME,
            "description": (
                "The Django admin session of a member of the event's organizer (sign in at "
                "/admin/), with the csrftoken cookie's value in an X-CSRFToken header."
            ),
        }
