"""The cookie middleware of pages and the admin, skipped for the JSON API.

API calls authenticate with a bearer token and never carry a session cookie,
so sessions, CSRF (DRF views are CSRF-exempt anyway), ``request.user`` and
messages would only cost time on the hottest endpoints: about a quarter of a
position read's CPU (docs/BENCHMARKS.md). Subclasses rather than a wrapper,
so Django still calls their ``process_view`` and the admin's system checks
still find them.
"""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.cache import patch_cache_control

API_PREFIX = "/api/"


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


class PagesOnly:
    """Mixin for a ``MiddlewareMixin`` subclass: the request goes straight
    through when it is an API call."""

    get_response: Callable[[HttpRequest], Any]

    def __call__(self, request: HttpRequest) -> Any:
        if is_api(request):
            return self.get_response(request)  # a coroutine when Django runs async
        return super().__call__(request)  # type: ignore[misc]  # MiddlewareMixin's, mixed in

    def process_view(self, request: HttpRequest, *args: Any) -> Any:
        if is_api(request):
            return None
        parent = getattr(super(), "process_view", None)
        return parent(request, *args) if parent else None


class PagesSessionMiddleware(PagesOnly, SessionMiddleware):
    pass


class PagesCsrfViewMiddleware(PagesOnly, CsrfViewMiddleware):
    pass


class PagesAuthenticationMiddleware(PagesOnly, AuthenticationMiddleware):
    pass


class PagesMessageMiddleware(PagesOnly, MessageMiddleware):
    pass


class PrivateAnswersMiddleware:
    """An answer to a request that carries credentials (a customer token, or
    the admin session on the API: the door's check-in) is that person's
    (their place, their tickets and codes): never stored by the browser or
    anything between. Pages that show a code mark themselves (never_cache).
    An answer its view declared public (the line state: the same bytes for
    everyone) depends on no credentials and stays cacheable."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if _declared_public(response):
            return response
        if "HTTP_AUTHORIZATION" in request.META or (
            is_api(request) and settings.SESSION_COOKIE_NAME in request.COOKIES
        ):
            patch_cache_control(response, private=True, no_store=True)
        return response


def _declared_public(response: HttpResponseBase) -> bool:
    directives = response.get("Cache-Control", "")
    return "public" in (part.strip() for part in directives.split(","))
