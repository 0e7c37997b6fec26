from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from fairqueue.errors import api_not_found

# Django tries the patterns in order and a sale's requests are nearly all
# joins, position reads and claims: those come first (about a tenth of a
# position read's CPU went to trying the console's and storefront's patterns).
api_v1 = [
    path("", include("queueing.urls")),
    path("", include("claims.urls")),
    path("", include("payments.urls")),
    path("auth/", include("customers.urls")),
    path("", include("events.urls")),
    path("", include("storefront.urls")),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("", include("console.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Its start-up script from its own URL (?script), not inline: the CSP allows no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
    # ReDoc's search runs in a worker it makes from a blob: URL: this page only.
    # Its sidebar asks Redocly's CDN for their logo (no option turns it off):
    # the policy refuses it, so the page loads nothing from elsewhere and
    # works offline; the logo then removes itself, "API docs by Redocly" stays.
    path(
        "api/redoc/",
        csp_update({"worker-src": ["'self'", "blob:"]})(
            SpectacularRedocView.as_view(url_name="schema")
        ),
        name="redoc",
    ),
    re_path(r"^api/", api_not_found),
    path("", include("storefront.pages")),
]

handler400 = "fairqueue.errors.handler400"
handler403 = "fairqueue.errors.handler403"
handler404 = "fairqueue.errors.handler404"
handler500 = "fairqueue.errors.handler500"
