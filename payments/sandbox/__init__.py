"""The sandbox payment gateway (see ``payments.sandbox.app``)."""

from payments.sandbox.app import SandboxGateway
from payments.sandbox.server import SandboxServer, serve

__all__ = ["SandboxGateway", "SandboxServer", "serve"]
