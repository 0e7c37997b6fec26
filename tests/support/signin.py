"""Sign-in (one-time codes) in tests."""

from __future__ import annotations

import re

from customers.emails import email_normalize

REQUEST_URL = "/api/v1/auth/otp/request/"
VERIFY_URL = "/api/v1/auth/otp/verify/"


def code_from(message) -> str:
    """The code in a sign-in email."""
    match = re.search(r"code is (\d{6})\b", message.body)
    assert match, message.body
    return match.group(1)


def other_code(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"


def sign_in(api, mailoutbox, address: str) -> str:
    """Sign ``address`` in through the API (request, then verify the emailed
    code); the customer id it signs in as."""
    requested = api.post(REQUEST_URL, {"email": address}, format="json")
    assert requested.status_code == 202, requested.content
    assert mailoutbox[-1].to == [email_normalize(address)]  # mail goes where it was typed
    verified = api.post(
        VERIFY_URL,
        {"email": address, "code": code_from(mailoutbox[-1]), "nonce": requested.json()["nonce"]},
        format="json",
    )
    assert verified.status_code == 200, verified.content
    return verified.json()["customer_id"]
