"""Live queue pushes over WebSocket: ``ws/events/<id>/queue/?ticket=...``.

Thin: checks from where and who (a single-use ticket from
``POST /api/v1/events/<id>/queue/ws-ticket/``; the long-lived customer token
is not accepted in a URL), joins two groups (the event's status news, and
this customer's own news outside a tick), joins this process's registry of
the event's sockets (``queueing.line_sockets``: the tick's news and the
line's movement), sends a snapshot, then forwards what the services
broadcast (``queue.push`` messages). Close codes: 4401 missing, used, expired or
foreign ticket, 4403 origin not allowed, 4404 unknown event, 4503 tickets
cannot be checked right now (retry). The handshake is accepted before
closing so browsers see the code (a refused handshake is a bare 403).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

from asgiref.sync import sync_to_async
from autobahn.exception import Disconnected
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.http.request import validate_host

from fairqueue.broadcast import PUSH_TYPE, customer_group, event_group
from fairqueue.errors import AppError
from queueing.domain import QueueStatus
from queueing.line_sockets import LineSockets, line_sockets
from queueing.selectors import event_snapshot
from queueing.serializers import position_body
from queueing.services import PositionResult, queue_position, ws_ticket_redeem

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_BAD_ORIGIN = 4403
CLOSE_UNKNOWN_EVENT = 4404
CLOSE_TRY_AGAIN = 4503


DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin or site URL; None when it names
    none (``null``, another scheme, user info, junk)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc:
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def origin_allowed(origin: str | None) -> bool:
    """No Origin header: not a browser (scripts, load tests), allowed; the
    ticket is still required. A browser's Origin is compared whole (scheme,
    host and port) with WEBSOCKET_ALLOWED_ORIGINS, or when that is empty
    with the site's own: PUBLIC_BASE_URL's origin (production requires it).
    Without one (development) the pages are plain HTTP on PORT, on whatever
    allowed host the browser used: a phone on the LAN opens
    ``http://192.168.1.20:8000`` and its socket on WS_PORT."""
    if origin is None:
        return True
    given = _origin(origin)
    if given is None:
        return False
    listed = settings.WEBSOCKET_ALLOWED_ORIGINS
    if listed:
        return "*" in listed or given in {_origin(o) for o in listed}
    if settings.PUBLIC_BASE_URL:
        return given == _origin(settings.PUBLIC_BASE_URL)
    scheme, host, port = given
    return (
        scheme == "http" and port == settings.PORT and validate_host(host, settings.ALLOWED_HOSTS)
    )


def _position(event_id: Any, customer_id: Any) -> tuple[PositionResult, dict[str, Any]]:
    """The customer's snapshot and its body (with their draw key)."""
    result = queue_position(event_id=event_id, customer_id=customer_id)
    return result, position_body(result, event_id=event_id, customer_id=customer_id)


def _ticket(scope: dict) -> str:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return (query.get("ticket") or [""])[0]


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class QueueConsumer(AsyncJsonWebsocketConsumer):
    groups_joined: list[str]
    line: LineSockets | None = None

    async def connect(self) -> None:
        self.groups_joined = []
        await self.accept()
        ticket = _ticket(self.scope)
        if not ticket:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        # Before the ticket is spent: a page on a foreign origin burns nothing.
        if not origin_allowed(_header(self.scope, b"origin")):
            await self.close(code=CLOSE_BAD_ORIGIN)
            return
        event_id = self.scope["url_route"]["kwargs"]["event_id"]
        if await database_sync_to_async(event_snapshot)(event_id=event_id) is None:
            await self.close(code=CLOSE_UNKNOWN_EVENT)
            return
        try:
            customer_id = await sync_to_async(ws_ticket_redeem, thread_sensitive=False)(
                event_id=event_id, ticket=ticket
            )
        except AppError:  # Redis cannot say: the client gets a new ticket and retries
            await self.close(code=CLOSE_TRY_AGAIN)
            return
        if customer_id is None:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.event_id, self.customer_id = event_id, customer_id
        for group in (event_group(event_id), customer_group(event_id, customer_id)):
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups_joined.append(group)
        # Before the snapshot: a tick between the two reaches this socket.
        self.line = line_sockets(self.channel_layer, event_id)
        await self.line.add(self)
        await self.send_json(await self._snapshot())

    async def _snapshot(self) -> dict[str, Any]:
        try:
            result, body = await database_sync_to_async(_position)(self.event_id, self.customer_id)
        except AppError as exc:  # not in the queue (yet): say so, stay connected
            self._place(None)
            return {"type": "position", "status": None, "position": None, "code": exc.code}
        self._place(result)
        return {"type": "position", "event_id": str(self.event_id), **body}

    def _place(self, result: PositionResult | None) -> None:
        """Where the registry counts this socket from (its page counts the
        same way): position + served at this snapshot."""
        if self.line is None:
            return
        if result is None or result.status != QueueStatus.WAITING:
            self.line.place(self, waiting=False, number=None, epoch=None)
            return
        number = None
        if result.position is not None and result.served is not None:
            number = result.position + result.served
        self.line.place(self, waiting=True, number=number, epoch=result.epoch)

    async def send_text(self, text: str) -> None:
        """A frame from the registry (encoded once for every socket)."""
        try:
            await self.send(text_data=text)
        except Disconnected:  # closed meanwhile: its disconnect cleans up
            logger.debug("queue push to a closed socket dropped")

    async def disconnect(self, code: int) -> None:
        if self.line is not None:
            await self.line.remove(self)
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        try:
            return await super().decode_json(text_data)
        except ValueError:  # a malformed frame is ignored, not a crash
            return None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients may ask for a fresh snapshot: {"type": "position"}."""
        if isinstance(content, dict) and content.get("type") == "position":
            await self.send_json(await self._snapshot())

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Pushes skip channels' per-message database cleanup (it runs in one
        shared thread, so an event-wide push to thousands of sockets queued
        there); a push never touches the database. Everything else goes the
        usual way."""
        if message.get("type") == PUSH_TYPE:
            await self.queue_push(message)
            return
        await super().dispatch(message)

    async def queue_push(self, event: dict[str, Any]) -> None:
        # The client may have left while the push was on its way (daphne
        # raises; thousands of times per sale as buyers close the page): the
        # disconnect message that follows cleans up; a push is best effort.
        if event.get("out_of_line"):  # admitted or expired outside a tick
            self._place(None)
        if "text" in event:  # encoded once by the sender (queueing.pushes)
            await self.send_text(event["text"])
            return
        try:
            await self.send_json(event["message"])
        except Disconnected:
            logger.debug("queue push to a closed socket dropped")
