"""drf-spectacular's settings for the OpenAPI schema at /api/schema/ and the
docs pages (Swagger UI and ReDoc from drf-spectacular-sidecar's static files,
so they work offline). Static: nothing here comes from the environment."""

OPENAPI_SETTINGS = {
    "TITLE": "FairQueue API",
    "DESCRIPTION": "Virtual waiting room and ticket allocation for flash sales.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Each status field's choices under its own name (they all share "status").
    "ENUM_NAME_OVERRIDES": {
        "EventStatusEnum": "events.domain.EVENT_STATUS_CHOICES",
        "ClaimStatusEnum": "claims.domain.CLAIM_STATUS_CHOICES",
        "PaymentStatusEnum": "payments.domain.PAYMENT_STATUS_CHOICES",
        # The error envelope's code: every code the API can answer with.
        "ErrorCodeEnum": "fairqueue.errors.ErrorCode",
    },
    # The error answers every operation can give (401, 404, 400/413/415/422, ...),
    # and what request bodies refuse (unknown fields, blank text).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "fairqueue.schema.document_error_answers",
        "fairqueue.schema.describe_request_bodies",
    ],
}
