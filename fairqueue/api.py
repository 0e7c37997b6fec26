"""Small shared pieces of the REST interface."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from fairqueue.errors import InvalidInput


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know (422), so a typo is an error rather
    than a silently ignored option."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise InvalidInput("The request body must be a JSON object.")
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise InvalidInput(
                "Unknown fields in the request body.", details={"unknown_fields": unknown}
            )
        return super().to_internal_value(data)


def parse(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """``data`` is ``request.data``: ``{}`` when the request has no body,
    else whatever JSON value was sent. Anything but an object (``null``, a
    list, a number, ...) is refused here, so no view can take a falsy value
    for "no body"."""
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.")
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
