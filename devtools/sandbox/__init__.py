"""The sandbox payment gateway (see ``devtools.sandbox.app``)."""

from devtools.sandbox.app import SandboxGateway
from devtools.sandbox.server import SandboxServer, serve

__all__ = ["SandboxGateway", "SandboxServer", "serve"]
