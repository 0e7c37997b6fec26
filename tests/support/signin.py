"""Sign-in (one-time codes) in tests."""

from __future__ import annotations

import re

REQUEST_URL = "/api/v1/auth/otp/request/"
VERIFY_URL = "/api/v1/auth/otp/verify/"


def code_from(message) -> str:
    """The code in a sign-in email."""
    match = re.search(r"code is (\d{6})\b", message.body)
    assert match, message.body
    return match.group(1)


def other_code(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"
