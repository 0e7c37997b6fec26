"""The customer's side of the sandbox: the checkout page at
``authorization_url`` with Pay and Decline buttons. Paying sends the signed
``charge.success`` webhook; declining sends none (Paystack sends no webhook
for a failed charge: the app finds it by verify). Either way the browser
goes back to the ``callback_url`` with ``?trxref=&reference=``."""

from __future__ import annotations

import html

from devtools.sandbox import charges
from devtools.sandbox.http import Response, with_query
from devtools.sandbox.state import SandboxState

FINAL = ("success", "failed", "reversed")


def page(gateway: SandboxState, access_code: str) -> Response:
    with gateway.lock:
        reference = gateway.by_access_code.get(access_code)
        tx = dict(gateway.transactions[reference]) if reference else None
    if tx is None:
        return "404 Not Found", [("Content-Type", "text/plain")], b"Unknown checkout"
    amount = f"{tx['currency']} {tx['amount'] / 100:,.2f}"
    code = html.escape(access_code)
    buttons = (
        f"<p>This payment is <strong>{html.escape(tx['status'])}</strong>.</p>"
        if tx["status"] in FINAL
        else (
            f'<form method="post" action="/checkout/{code}/pay">'
            '<button type="submit" name="pay">Pay</button></form>'
            f'<form method="post" action="/checkout/{code}/decline">'
            '<button type="submit" name="decline">Decline</button></form>'
        )
    )
    body = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Sandbox checkout</title>"
        "<style>body{font-family:sans-serif;max-width:28rem;margin:3rem auto}"
        "form{display:inline-block;margin-right:1rem}button{font-size:1.1rem;"
        "padding:.5rem 1.5rem}</style></head><body>"
        "<h1>Sandbox checkout</h1>"
        "<p>Test gateway: no real money moves.</p>"
        f"<p>Pay <strong>{html.escape(amount)}</strong> as {html.escape(tx['email'])}</p>"
        f"<p>Reference <code>{html.escape(tx['reference'])}</code></p>"
        f"{buttons}</body></html>"
    )
    return "200 OK", [("Content-Type", "text/html; charset=utf-8")], body.encode()


def submit(gateway: SandboxState, access_code: str, action: str) -> Response:
    with gateway.lock:
        reference = gateway.by_access_code.get(access_code)
    if reference is None:
        return "404 Not Found", [("Content-Type", "text/plain")], b"Unknown checkout"
    tx = charges.settle(gateway, reference, outcome="success" if action == "pay" else "failed")
    callback = tx.get("callback_url") or ""
    if callback:
        location = with_query(callback, trxref=reference, reference=reference)
        return "303 See Other", [("Location", location), ("Content-Type", "text/plain")], b""
    return page(gateway, access_code)
