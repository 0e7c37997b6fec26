from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

from fairqueue.errors import api_not_found
from fairqueue.health import healthz

api_v1 = [
    path("auth/", include("customers.urls")),
    path("", include("storefront.urls")),
    path("", include("queueing.urls")),
    path("", include("claims.urls")),
    path("", include("payments.urls")),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("", include("console.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    re_path(r"^api/", api_not_found),
    path("", include("storefront.pages")),
]

handler400 = "fairqueue.errors.handler400"
handler404 = "fairqueue.errors.handler404"
handler500 = "fairqueue.errors.handler500"
