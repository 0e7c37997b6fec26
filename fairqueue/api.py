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

    @classmethod
    def quick(cls, data: dict[str, Any]) -> dict[str, Any] | None:
        """The validated data of a well-formed body of the common shape,
        without building the serializer, or None to let the serializer decide.

        A serializer deep-copies its fields per request and a CharField checks
        a token character by character in Python: about a fifth of a claim's
        CPU. A hot endpoint's serializer overrides this with checks that accept
        only bodies the serializer accepts too, giving the same data; anything
        else (every refusal among it) goes through the serializer."""
        return None


def parse(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """``data`` is ``request.data``: ``{}`` when the request has no body,
    else whatever JSON value was sent. Anything but an object (``null``, a
    list, a number, ...) is refused here, so no view can take a falsy value
    for "no body"."""
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.")
    if issubclass(serializer_class, StrictSerializer):
        quick = serializer_class.quick(data)
        if quick is not None:
            return quick
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
