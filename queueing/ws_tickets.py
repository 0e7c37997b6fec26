"""Single-use tickets for opening the queue WebSocket, in Redis.

A browser cannot set headers on a WebSocket, so whatever authenticates the
socket travels in its URL, and URLs end up in proxy access logs. So the URL
carries a ticket that is worth nothing once used or after
WS_TICKET_TTL_SECONDS (at most 60 s), never the 24-hour customer token.

Key: ``fq:{<event_id>}:wsticket:<sha256(ticket)>`` -> customer id, with the
ticket's TTL; a ticket only opens the socket of the event it was made for.
Redis is shared by every daphne process, so a ticket made through any web
process opens a socket on any daphne. Only the hash is stored. Redeeming is
one ``GETDEL``: two sockets racing with one ticket, one wins.
"""

from __future__ import annotations

import hashlib

from fairqueue.redis import RedisStore, event_key, required


class WsTicketStore(RedisStore):
    @staticmethod
    def key(event_id: object, ticket: str) -> str:
        return event_key(event_id, "wsticket", hashlib.sha256(ticket.encode()).hexdigest())

    @required
    def put(self, *, event_id: object, ticket: str, customer_id: object, ttl_s: int) -> None:
        self.r.set(self.key(event_id, ticket), str(customer_id), ex=ttl_s)

    @required
    def take(self, *, event_id: object, ticket: str) -> str | None:
        """The customer id of the ticket, deleting it; None when unknown,
        used or expired."""
        customer_id = self.r.getdel(self.key(event_id, ticket))
        return None if customer_id is None else str(customer_id)


_store: WsTicketStore | None = None


def ws_ticket_store() -> WsTicketStore:
    global _store
    if _store is None:
        _store = WsTicketStore()
    return _store
