import re

import pytest

REQUEST_URL = "/api/v1/auth/otp/request/"
VERIFY_URL = "/api/v1/auth/otp/verify/"


def code_from(message) -> str:
    match = re.search(r"code is (\d{6})\b", message.body)
    assert match, message.body
    return match.group(1)


def other_code(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"


@pytest.fixture
def request_code(api, mailoutbox):
    """Ask for a code through the API; returns the code that was emailed."""

    def _request(email: str) -> str:
        sent_before = len(mailoutbox)
        response = api.post(REQUEST_URL, {"email": email}, format="json")
        assert response.status_code == 202, response.content
        assert len(mailoutbox) == sent_before + 1
        return code_from(mailoutbox[-1])

    return _request


@pytest.fixture
def closed_port() -> int:
    """A local TCP port nothing listens on (a dependency that is down)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
