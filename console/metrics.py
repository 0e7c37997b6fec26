"""``GET /metrics``: Prometheus text format.

Why two sources (see also fairqueue/metrics.py):

- **The sale, computed at scrape time** from Postgres (the truth, the last
  admission tick included) and Redis (the waiting line as customers see it):
  queue, admissions, tickets, payments. Whichever web process answers, and however
  many there are, the numbers are the same and right after any restart; a
  counter here is a count of rows that only grow (admissions, confirmed
  tickets, the append-only payment log), so it never goes back.
- **What processes did**, recorded in-process (HTTP latency by route, ticks,
  claim attempts, webhooks, heals, Redis errors, WebSockets, task runs) and
  summed over the processes of a host by prometheus-client's multiprocess
  mode. Counting those from Postgres is impossible (a refused claim or a bad
  webhook signature writes nothing), and counting them in Redis would cost a
  round trip per request and vanish with a Redis wipe.

Access: with ``METRICS_TOKEN`` set (production refuses to start without it,
config/safety.py), ``Authorization: Bearer <token>``; without it, loopback
callers only, and only with no proxy in front (``make run``, a local agent).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.samples import Sample

from console.selectors import (
    admitted_now,
    admitted_since,
    events_on_sale,
    events_reported,
    payment_totals,
    payments_attention,
    tier_numbers,
)
from queueing.selectors import admission_last_ticks, queue_length

# The classic text format, which generate_latest writes and every Prometheus
# 2.x and 3.x scraper reads.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class SaleCollector:
    """The families computed at scrape time, one set per reported event
    (live, or ended in the last day); ``event`` is the event's id, its name
    is on ``fairqueue_event_info``."""

    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        events = list(events_reported(now).prefetch_related("tiers"))
        ids = [e.pk for e in events]
        on_sale = set(events_on_sale(now).filter(pk__in=ids).values_list("pk", flat=True))

        info = GaugeMetricFamily(
            "fairqueue_event_info", "Events reported, with name and status.",
            labels=["event", "name", "status"],
        )  # fmt: skip
        selling = GaugeMetricFamily(
            "fairqueue_event_on_sale",
            "1 while the event is ACTIVE inside its sale window (admission must tick).",
            labels=["event"],
        )
        waiting = GaugeMetricFamily(
            "fairqueue_queue_waiting", "Customers waiting in line.", labels=["event"]
        )
        admitted = GaugeMetricFamily(
            "fairqueue_queue_admitted",
            "Customers holding a live admission (may claim now).",
            labels=["event"],
        )
        admitted_total = CounterMetricFamily(
            "fairqueue_admitted", "Customers admitted since the sale opened.", labels=["event"]
        )
        last_tick = GaugeMetricFamily(
            "fairqueue_admission_last_tick_timestamp_seconds",
            "When the event's last admission tick ran, whatever it admitted (absent: never).",
            labels=["event"],
        )
        available = GaugeMetricFamily(
            "fairqueue_tickets_available",
            "Tickets not held by any claim (Postgres truth).",
            labels=["event", "tier"],
        )
        inventory = GaugeMetricFamily(
            "fairqueue_tickets_inventory", "Tickets of the tier.", labels=["event", "tier"]
        )
        sold = CounterMetricFamily(
            "fairqueue_tickets_sold", "Tickets in paid (CONFIRMED) claims.",
            labels=["event", "tier"],
        )  # fmt: skip
        payments = CounterMetricFamily(
            "fairqueue_payments",
            "Payments that reached each status, and who moved them there "
            "(customer, webhook, gateway, reconcile, expiry, staff).",
            labels=["event", "status", "actor"],
        )
        attention = GaugeMetricFamily(
            "fairqueue_payments_attention",
            "Payments waiting for staff, by the staff payment list's attention filter.",
            labels=["event", "reason"],
        )

        ticks = admission_last_ticks(event_ids=ids)
        admitted_counts = admitted_now(ids, now)
        admitted_totals = admitted_since(ids)
        needs_staff = payments_attention(ids)
        for event in events:
            eid = str(event.pk)
            info.add_metric([eid, event.name, event.status], 1)
            selling.add_metric([eid], 1 if event.pk in on_sale else 0)
            waiting.add_metric([eid], queue_length(event_id=event.pk))
            admitted.add_metric([eid], admitted_counts.get(event.pk, 0))
            admitted_total.add_metric([eid], admitted_totals.get(event.pk, 0))
            tick = ticks.get(event.pk)
            if tick is not None:
                last_tick.add_metric([eid], tick.timestamp())
            for tier in tier_numbers(event):
                available.add_metric([eid, tier.name], tier.free)
                inventory.add_metric([eid, tier.name], tier.inventory)
                sold.add_metric([eid, tier.name], tier.sold)
            for reason, count in needs_staff[event.pk].items():
                attention.add_metric([eid, reason], count)
        for (event_id, status, actor), count in sorted(payment_totals(ids).items()):
            payments.add_metric([str(event_id), status, actor], count)
        families: list[Metric] = [info, selling, waiting, admitted, admitted_total, last_tick]
        families += [available, inventory, sold, payments, attention]
        for family in families:
            _zero_when_empty(family)
        yield from families


def _zero_when_empty(family: Metric) -> None:
    """A family with nothing to report (no event, no payment yet) still
    answers, with one zero without labels (for a timestamp: never), so that
    every family is on every scrape (fairqueue/metrics.py says why)."""
    if not family.samples:
        suffix = "_total" if family.type == "counter" else ""
        family.samples.append(Sample(family.name + suffix, {}, 0.0))


_sale = CollectorRegistry(auto_describe=False)
_sale.register(SaleCollector())


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def scrape(*, sale: bool = True) -> bytes:
    """The exposition: every process of this host (multiprocess mode) or
    this process, plus the sale's families unless ``sale`` is False."""
    if multiprocess_dir():
        processes = CollectorRegistry()
        MultiProcessCollector(processes)
    else:
        processes = REGISTRY
    return generate_latest(processes) + (generate_latest(_sale) if sale else b"")


def _loopback(address: str | None) -> bool:
    try:
        return ipaddress.ip_address(address or "").is_loopback
    except ValueError:
        return False


def access_refused(
    *, authorization: str, remote_addr: str | None, behind_proxy: bool
) -> int | None:
    """None when the caller may read the metrics, else the HTTP status.
    Without a token only a loopback caller may, and only with no proxy in
    front: behind one, the loopback address is the proxy's, whoever sent
    the request (and a forwarded-for header is the client's to write)."""
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, given = authorization.partition(" ")
        ok = scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)
        return None if ok else 401
    return None if _loopback(remote_addr) and not behind_proxy else 403


def metrics_view(request: HttpRequest) -> HttpResponse:
    refused = access_refused(
        authorization=request.headers.get("Authorization", ""),
        remote_addr=request.META.get("REMOTE_ADDR"),
        behind_proxy=settings.NUM_PROXIES > 0,
    )
    if refused == 401:
        response = HttpResponse("metrics need a bearer token\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if refused:
        return HttpResponse(
            "metrics are served with METRICS_TOKEN, or to loopback callers with no proxy\n",
            status=403,
        )
    return HttpResponse(scrape(), content_type=CONTENT_TYPE)


def wsgi_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The same rules as a bare WSGI app, for the Celery worker's and beat's
    own metrics port (their processes serve no HTTP otherwise, and no proxy
    stands in front of that port)."""
    refused = access_refused(
        authorization=environ.get("HTTP_AUTHORIZATION", ""),
        remote_addr=environ.get("REMOTE_ADDR"),
        behind_proxy=False,
    )
    if refused:
        start_response(f"{refused} Refused", [("Content-Type", "text/plain")])
        return [b"refused\n"]
    start_response("200 OK", [("Content-Type", CONTENT_TYPE)])
    return [scrape(sale=False)]
