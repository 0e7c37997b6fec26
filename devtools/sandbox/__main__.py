"""``python -m devtools.sandbox --port 8002``: run the sandbox gateway.

Environment: ``PAYSTACK_SECRET_KEY`` (checks the Bearer key and signs the
webhooks; the app uses the same variable), ``SANDBOX_WEBHOOK_URL`` (where
webhooks go; default the local app), ``SANDBOX_PUBLIC_URL`` (base of
``authorization_url`` when the sandbox sits behind a proxy),
``SANDBOX_CONTROL_TOKEN`` (the ``X-Sandbox-Token`` the ``/_sandbox/*``
control API requires; unset = control API off). The control API's
``webhook_retry_scale`` compresses Paystack's webhook retry schedule.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os

from devtools.sandbox.server import serve


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m devtools.sandbox", description=__doc__)
    parser.add_argument("--host", default=os.environ.get("SANDBOX_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("SANDBOX_PORT", "8002")))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        serve(host=args.host, port=args.port)


if __name__ == "__main__":
    main()
