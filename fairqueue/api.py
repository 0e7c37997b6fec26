"""Small shared pieces of the REST interface."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from fairqueue.errors import InvalidInput

# The JSON types each kind of field takes. DRF alone would coerce (0 for
# false, 12 for "12", 5 for a UUID): a strict body takes what its OpenAPI
# schema says, and nothing the schema calls invalid.
_JSON_TYPES: tuple[tuple[type[serializers.Field], tuple[type, ...], str], ...] = (
    (serializers.BooleanField, (bool,), "true or false"),
    (serializers.IntegerField, (int, float), "an integer"),
    (serializers.FloatField, (int, float), "a number"),
    (serializers.CharField, (str,), "a string"),
    (serializers.UUIDField, (str,), "a string"),
    (serializers.ListField, (list,), "a list"),
    (serializers.DictField, (dict,), "an object"),
)


def _json_type_error(field: serializers.Field, value: Any) -> str | None:
    """Why ``value`` is not of the JSON type ``field`` takes, or None. A null
    is left to the field's own rule."""
    if value is None:
        return None
    for kind, types, name in _JSON_TYPES:
        if not isinstance(field, kind):
            continue
        # (bool is an int to Python, not to JSON; 1.5 for an integer is DRF's to refuse)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return f"Must be {name}."
        if isinstance(field, serializers.ListField) and isinstance(value, list):
            for item in value:
                error = _json_type_error(field.child, item)
                if error:
                    return f"Each item: {error[0].lower()}{error[1:]}"
        return None
    return None


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know (422), so a typo is an error rather
    than a silently ignored option, and values of another JSON type than
    the field's (422), rather than guessing what they meant."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise InvalidInput("The request body must be a JSON object.")
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise InvalidInput(
                "Unknown fields in the request body.", details={"unknown_fields": unknown}
            )
        wrong = {
            name: [error]
            for name, value in data.items()
            if (error := _json_type_error(self.fields[name], value))
        }
        if wrong:
            raise serializers.ValidationError(wrong)
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
