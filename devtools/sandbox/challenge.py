"""The sandbox's test verifier for the bot challenge: the shape of
Cloudflare Turnstile's siteverify API, and a stand-in widget script, so the
challenge runs end to end with no internet (``make run`` points
CHALLENGE_VERIFY_URL and CHALLENGE_SCRIPT_URL here).

- ``POST /challenge/siteverify`` (form or JSON: ``secret``, ``response``,
  ``remoteip``) -> ``{"success": bool, "error-codes": [...], "hostname",
  "action"}``. A token the stand-in widget made
  (``sandbox-pass.<random>.<action>.<hostname>``: the widget's
  ``data-action`` and the page's host, which the real verifier reports the
  same way) passes once, a second use is ``timeout-or-duplicate``;
  Cloudflare's documented dummy token (``XXXX.DUMMY.TOKEN.XXXX``) always
  passes, on ``example.com`` with no action, as with Cloudflare's test keys;
  anything else is ``invalid-input-response``.
  Cloudflare's test secrets behave as documented: ``2x000...AA`` always
  fails, ``3x000...AA`` always answers ``timeout-or-duplicate``.
- ``GET /challenge/api.js``: a ``window.turnstile`` that draws a checkbox in
  every ``.cf-turnstile`` element and, once ticked, puts a fresh token in a
  hidden ``cf-turnstile-response`` input, as the real widget does.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any
from urllib.parse import parse_qs

from devtools.sandbox.http import Response, fail, json_response
from devtools.sandbox.state import SandboxState

ALWAYS_FAILS_SECRET = "2x0000000000000000000000000000000AA"  # noqa: S105 - Cloudflare's test secret
ALWAYS_SPENT_SECRET = "3x0000000000000000000000000000000AA"  # noqa: S105 - Cloudflare's test secret
DUMMY_TOKEN = "XXXX.DUMMY.TOKEN.XXXX"  # noqa: S105 - Cloudflare's documented test token
SANDBOX_TOKEN_PREFIX = "sandbox-pass."  # noqa: S105 - not a secret

WIDGET_JS = """(function () {
  "use strict";
  function token(box) {
    var bytes = new Uint8Array(12);
    window.crypto.getRandomValues(bytes);
    return "SANDBOX_TOKEN_PREFIX" + Array.prototype.map.call(bytes, function (b) {
      return (b < 16 ? "0" : "") + b.toString(16);
    }).join("") + "." + (box.getAttribute("data-action") || "") + "." + window.location.hostname;
  }
  function draw(box) {
    box.textContent = "";
    var label = document.createElement("label");
    var tick = document.createElement("input");
    var field = document.createElement("input");
    tick.type = "checkbox";
    field.type = "hidden";
    field.name = "cf-turnstile-response";
    tick.addEventListener("change", function () { field.value = tick.checked ? token(box) : ""; });
    label.appendChild(tick);
    label.appendChild(document.createTextNode(" I am not a robot (sandbox check)"));
    box.appendChild(label);
    box.appendChild(field);
  }
  function all() { return document.querySelectorAll(".cf-turnstile"); }
  window.turnstile = {
    render: function (box) { draw(typeof box === "string" ? document.querySelector(box) : box); },
    reset: function () { Array.prototype.forEach.call(all(), draw); },
    getResponse: function () {
      var field = document.querySelector("[name=cf-turnstile-response]");
      return field ? field.value : "";
    },
  };
  window.turnstile.reset();
})();
""".replace("SANDBOX_TOKEN_PREFIX", SANDBOX_TOKEN_PREFIX)


def _form(gateway: SandboxState, environ: dict[str, Any]) -> dict[str, str]:
    if "json" in environ.get("CONTENT_TYPE", ""):
        body = gateway.json_body(environ)
        return {k: str(v) for k, v in body.items()} if isinstance(body, dict) else {}
    raw = gateway.raw_body(environ).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(raw).items()}


# Tokens already used, per gateway (its own state stays the payments' alone).
_spent_tokens: weakref.WeakKeyDictionary[SandboxState, set[str]] = weakref.WeakKeyDictionary()
_spent_lock = threading.Lock()


def _spent(gateway: SandboxState) -> tuple[threading.Lock, set[str]]:
    with _spent_lock:
        return _spent_lock, _spent_tokens.setdefault(gateway, set())


def siteverify(gateway: SandboxState, environ: dict[str, Any]) -> Response:
    form = _form(gateway, environ)
    secret, token = form.get("secret", ""), form.get("response", "")
    codes: list[str] = []
    if not secret:
        codes.append("missing-input-secret")
    if not token:
        codes.append("missing-input-response")
    if not codes:
        lock, spent = _spent(gateway)
        with lock:
            if secret == ALWAYS_FAILS_SECRET:
                codes.append("invalid-input-response")
            elif secret == ALWAYS_SPENT_SECRET or token in spent:
                codes.append("timeout-or-duplicate")
            elif token.startswith(SANDBOX_TOKEN_PREFIX):
                spent.add(token)
            elif token != DUMMY_TOKEN:
                codes.append("invalid-input-response")
    body: dict[str, Any] = {"success": not codes, "error-codes": codes}
    if not codes:
        # Where and for what the widget was solved, as the real verifier says.
        solved = token.removeprefix(SANDBOX_TOKEN_PREFIX).partition(".")[2]
        action, _, hostname = solved.partition(".")
        body["hostname"], body["action"] = (
            ("example.com", "") if token == DUMMY_TOKEN else (hostname, action)
        )
    return json_response("200 OK", body)


def challenge(
    gateway: SandboxState, method: str, parts: list[str], environ: dict[str, Any]
) -> Response:
    """The ``/challenge/...`` routes."""
    if parts == ["siteverify"] and method == "POST":
        return siteverify(gateway, environ)
    if parts == ["api.js"] and method == "GET":
        return "200 OK", [("Content-Type", "text/javascript; charset=utf-8")], WIDGET_JS.encode()
    return fail("404 Not Found", "Not found")
