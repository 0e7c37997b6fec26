"""A small threaded WSGI server for the sandbox gateway (standard library)."""

from __future__ import annotations

import logging
import os
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from devtools.sandbox.app import DEFAULT_WEBHOOK_URL, SandboxGateway

logger = logging.getLogger("devtools.sandbox")

# Same default as config.settings, so the sandbox and the app agree out of the box.
DEFAULT_SECRET_KEY = "sk_test_fairqueue_sandbox"  # noqa: S105 - a public test key


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


class SandboxServer:
    """The sandbox on a TCP port; ``port=0`` picks a free one (tests)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        secret_key: str | None = None,
        webhook_url: str | None = None,
        public_url: str | None = None,
        control_token: str | None = None,
        webhook_retry_scale: float = 1.0,
    ) -> None:
        self.app = SandboxGateway(
            secret_key=secret_key or os.environ.get("PAYSTACK_SECRET_KEY") or DEFAULT_SECRET_KEY,
            webhook_url=webhook_url or os.environ.get("SANDBOX_WEBHOOK_URL") or DEFAULT_WEBHOOK_URL,
            control_token=(
                control_token
                if control_token is not None
                else os.environ.get("SANDBOX_CONTROL_TOKEN", "")
            ),
            webhook_retry_scale=webhook_retry_scale,
        )
        self.httpd = make_server(
            host, port, self.app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
        )
        self.host, self.port = host, self.httpd.server_port
        fixed = public_url or os.environ.get("SANDBOX_PUBLIC_URL")
        self.app.public_url = (fixed or f"http://{host}:{self.port}").rstrip("/")
        # Listening on every interface with no public URL: show the checkout
        # on the host the customer used (SandboxGateway.checkout_base).
        self.app.follow_host = not fixed and host in ("0.0.0.0", "::")  # noqa: S104
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> SandboxServer:
        """Serve in a background thread (tests)."""
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.app.stopped = True  # pending webhook retries give up
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def serve_forever(self) -> None:
        logger.info("sandbox gateway on %s (webhooks to %s)", self.url, self.app.webhook_url)
        if not self.app.control_token:
            logger.warning("sandbox control API off: SANDBOX_CONTROL_TOKEN is not set")
        try:
            self.httpd.serve_forever()
        finally:
            self.httpd.server_close()


def serve(*, host: str = "127.0.0.1", port: int = 8002) -> None:
    SandboxServer(host=host, port=port).serve_forever()
