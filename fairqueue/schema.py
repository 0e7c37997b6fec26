"""OpenAPI: the error answers every operation can give, documented once.

Views document the answers of their own services (``sold_out``,
``admission_expired``, ...). The answers that come from the plumbing around a
view are the same everywhere and are added here, from what each operation
has, so they cannot be forgotten on a new endpoint:

- a customer token in its security: 401 (missing, malformed, expired token);
- a path parameter: 404 (no such resource, or a malformed id);
- a request body: 400 (not JSON), 413 (too large), 415 (not
  ``application/json``), 422 (not an object, unknown or invalid fields);
- the ``Idempotency-Key`` header: 409 (a request with the key is still
  running), 422 (bad key, or the key was used with another body);
- a throttle on the view that applies to the method: 429 (with
  ``Retry-After``); a throttle class may say which methods of which views it
  counts (``throttles(view_class, method)``), else it counts them all.

Every error answer is the one envelope of ``fairqueue/errors.py``.

And a request body says what its serializer refuses beyond the types, so a
client made from the schema knows it too: one parsed by a
``StrictSerializer`` (``fairqueue/api.py``) refuses fields it does not know
(``additionalProperties: false``), and a text field is trimmed and must
not be blank or hold U+0000 (a ``pattern``). Both are drf-spectacular
``POSTPROCESSING_HOOKS`` entries (config/openapi.py).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ComponentRegistry
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.views import APIView

from fairqueue.api import StrictSerializer
from fairqueue.errors import ErrorCode

# The customer token's security scheme (customers/schema.py registers it) and
# the idempotency header (customers/idempotency.py reads it), named here so the
# hook below knows which operations carry them.
CUSTOMER_SCHEME = "customerToken"
IDEMPOTENCY_HEADER = "Idempotency-Key"


class ErrorBodySerializer(serializers.Serializer):
    # Every code the API can answer with (the schema's ErrorCodeEnum).
    code = serializers.ChoiceField(choices=[(c.value, c.name) for c in ErrorCode])
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorEnvelopeSerializer(serializers.Serializer):
    """The one error shape of the API (see fairqueue/errors.py)."""

    error = ErrorBodySerializer()


def error(description: str) -> OpenApiResponse:
    """An error answer of a view (for ``extend_schema(responses=...)``): the
    envelope, with the codes it can carry in ``description``."""
    return OpenApiResponse(ErrorEnvelopeSerializer, description=description)


UNAUTHENTICATED = (
    f"{ErrorCode.NOT_AUTHENTICATED}, {ErrorCode.INVALID_TOKEN}, {ErrorCode.TOKEN_EXPIRED} or "
    f"{ErrorCode.TOKEN_REVOKED}: no valid customer token."
)
NOT_FOUND = (
    f"{ErrorCode.NOT_FOUND} (or a more precise *_not_found): no such resource, or a malformed id."
)
MALFORMED = f"{ErrorCode.MALFORMED_REQUEST}: the body is not valid JSON."
TOO_LARGE = f"{ErrorCode.PAYLOAD_TOO_LARGE}: the body is over the size limit (details.max_bytes)."
UNSUPPORTED = f"{ErrorCode.UNSUPPORTED_MEDIA_TYPE}: the body is not application/json."
INVALID = (
    f"{ErrorCode.VALIDATION_ERROR}: the body is not a JSON object, has unknown fields "
    "(details.unknown_fields) or invalid ones (details.fields)."
)
IDEMPOTENCY_BUSY = (
    f"{ErrorCode.IDEMPOTENCY_IN_PROGRESS}: a request with this Idempotency-Key is still "
    "running; see the Retry-After header."
)
IDEMPOTENCY_INVALID = (
    f"{ErrorCode.INVALID_IDEMPOTENCY_KEY}, or {ErrorCode.IDEMPOTENCY_MISMATCH}: the key was used "
    "with another request."
)
THROTTLED = f"{ErrorCode.RATE_LIMITED}: too many requests; see the Retry-After header."


def operation_errors(
    operation: dict[str, Any], *, throttled: bool, security_scheme: str
) -> dict[str, str]:
    """The plumbing's error answers for one operation: {status: description}."""
    errors: dict[str, list[str]] = {}

    def add(status: int, description: str) -> None:
        errors.setdefault(str(status), []).append(description)

    if any(security_scheme in requirement for requirement in operation.get("security", [])):
        add(401, UNAUTHENTICATED)
    parameters = operation.get("parameters", [])
    if any(p.get("in") == "path" for p in parameters):
        add(404, NOT_FOUND)
    if "requestBody" in operation:
        add(400, MALFORMED)
        add(413, TOO_LARGE)
        add(415, UNSUPPORTED)
        add(422, INVALID)
    if any(p.get("in") == "header" and p.get("name") == IDEMPOTENCY_HEADER for p in parameters):
        add(409, IDEMPOTENCY_BUSY)
        add(422, IDEMPOTENCY_INVALID)
    if throttled:
        add(429, THROTTLED)
    return {status: "; or ".join(texts) for status, texts in errors.items()}


def envelope_components() -> tuple[dict[str, str], dict[str, Any]]:
    """The envelope's ``$ref`` and its component schemas, made from
    ``ErrorEnvelopeSerializer`` as a view's ``responses=`` would make them."""
    view = APIView()
    view.request = None  # type: ignore[assignment]  # made outside any request, like spectacular's
    view.format_kwarg = None
    auto = AutoSchema()
    auto.view, auto.registry, auto.method, auto.path = view, ComponentRegistry(), "GET", "/"
    ref = auto.resolve_serializer(ErrorEnvelopeSerializer, "response").ref
    return ref, auto.registry.build({})["schemas"]


def _counts(throttle: Any, view_class: Any, method: str) -> bool:
    decides = getattr(throttle, "throttles", None)
    return True if decides is None else bool(decides(view_class, method))


def throttled_operations(generator: Any) -> set[tuple[str, str]]:
    """(path, method) of the operations a throttle of their view counts."""
    found = set()
    for path, _regex, method, callback in generator.endpoints or []:
        view_class = getattr(callback, "cls", None)
        if view_class is not None and any(
            _counts(throttle, view_class, method) for throttle in view_class.throttle_classes
        ):
            found.add((path, method.lower()))
    return found


def document_error_answers(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: adds the plumbing's error answers
    (see the module docstring) to every operation, keeping the ones a view
    documented itself."""
    envelope_ref, envelope_schemas = envelope_components()
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in envelope_schemas.items():
        schemas.setdefault(name, schema)
    throttled = throttled_operations(generator)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            answers = operation_errors(
                operation,
                throttled=(path, method) in throttled,
                security_scheme=CUSTOMER_SCHEME,
            )
            responses = operation["responses"]
            for status, description in answers.items():
                responses.setdefault(
                    status,
                    {
                        "content": {"application/json": {"schema": envelope_ref}},
                        "description": description,
                    },
                )
    return result


def _ranges(codes: list[int]) -> str:
    """A regex character class's inside for ``codes`` (ascending), in ranges."""
    runs: list[list[int]] = []
    for code in codes:
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in runs)


# A DRF CharField trims its text and refuses a blank one and any U+0000: as
# a JSON Schema pattern, at least one character that str.strip() keeps and
# no U+0000 anywhere (or only the latter, where blank text is allowed).
_WHITESPACE = _ranges([code for code in range(0x10000) if chr(code).isspace()])
NO_NUL_PATTERN = "^[^\\u0000]*$"
TEXT_PATTERN = f"^[^\\u0000]*[^\\u0000{_WHITESPACE}][^\\u0000]*$"


def _serializer_of(generator: Any, component_name: str) -> serializers.Serializer | None:
    """The serializer a component was made from, as drf-spectacular's
    registry of this run says (a class is instantiated for its fields)."""
    try:
        made_from = generator.registry[(component_name, "schemas")].object
    except (AttributeError, KeyError):
        return None
    if isinstance(made_from, type) and issubclass(made_from, serializers.Serializer):
        return made_from()
    return made_from if isinstance(made_from, serializers.Serializer) else None


def _text_rules(field: serializers.Field, prop: dict[str, Any]) -> None:
    if isinstance(field, serializers.ListField):
        if isinstance(prop.get("items"), dict):
            _text_rules(field.child, prop["items"])
        return
    plain = prop.get("type") == "string" and not {"format", "pattern", "enum"} & set(prop)
    if isinstance(field, serializers.CharField) and plain:
        prop["pattern"] = (
            TEXT_PATTERN if field.trim_whitespace and not field.allow_blank else NO_NUL_PATTERN
        )


def describe_request_bodies(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: a request body component says what
    its serializer refuses beyond the types. Made from a ``StrictSerializer``:
    ``additionalProperties: false`` (other serializers ignore unknown fields).
    Its text fields: the pattern of what a CharField takes (``TEXT_PATTERN``)."""
    schemas = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for media in operation.get("requestBody", {}).get("content", {}).values():
                name = media.get("schema", {}).get("$ref", "").rsplit("/", 1)[-1]
                serializer = _serializer_of(generator, name) if name in schemas else None
                if serializer is None:
                    continue
                component = schemas[name]
                if isinstance(serializer, StrictSerializer):
                    component["additionalProperties"] = False
                properties = component.get("properties", {})
                for field_name, field in serializer.fields.items():
                    if isinstance(properties.get(field_name), dict) and not field.read_only:
                        _text_rules(field, properties[field_name])
    return result
