"""Every metric family is on the first scrape of a fresh web process, with a
sample: absent()-style alerts and dashboards can tell "nothing happened" from
"not scraped", and a labelled counter starts at zero for the label values
known in advance, so its first increment is an increase (a series born at 1
shows none). Both ways a process keeps its values: in itself, and in the
multiprocess directory that ``make run`` and docker compose set."""

from __future__ import annotations

import importlib
import pkgutil
import urllib.request

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from console.metrics import _sale
from tests.support.processes import web_process
from tests.support.promtool import promtool

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

APPS = ["fairqueue", "customers", "inventory", "events", "queueing", "claims", "payments",
        "storefront", "console"]  # fmt: skip


def defined_families() -> set[str]:
    """Every fairqueue_ family any module of the project defines (each module
    imported, so that none is missed), and those computed at scrape time."""
    for app in APPS:
        package = importlib.import_module(app)
        for module in pkgutil.walk_packages(package.__path__, f"{app}."):
            if ".migrations" not in module.name:
                importlib.import_module(module.name)
    names = {family.name for family in REGISTRY.collect() if family.name.startswith("fairqueue_")}
    return names | {family.name for family in _sale.collect()}


def scrape(base: str) -> bytes:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:  # noqa: S310
        return response.read()


def value(samples: list, **labels: str) -> float | None:
    for s in samples:
        counted = s.name.endswith(("_total", "_count"))
        if counted and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


@pytest.mark.parametrize("multiprocess", [True, False], ids=["multiprocess", "in-process"])
def test_a_fresh_process_exposes_every_family(tmp_path, multiprocess):
    defined = defined_families()
    assert len(defined) >= 20, sorted(defined)  # the import found them all
    extra = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)} if multiprocess else {}

    with web_process(**extra) as base:
        text = scrape(base)

    checked = promtool("check", "metrics", stdin=text)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    families = {f.name: f.samples for f in text_string_to_metric_families(text.decode())}
    assert {name for name in defined if not families.get(name)} == set()
    # Label values known in advance start at zero.
    assert value(families["fairqueue_redis_errors"], operation="InventoryStore.reserve") == 0
    assert value(families["fairqueue_claims"], result="sold_out") == 0
    assert value(families["fairqueue_claims"], result="not_enough_tickets") == 0
    assert value(families["fairqueue_webhooks"], outcome="invalid_signature") == 0
    assert value(families["fairqueue_reconcile_heals"], kind="inventory_divergence") == 0
    assert value(families["fairqueue_web_lane_wait_seconds"], lane="waiting") == 0
    # Where the values come only as they happen (routes, events, tasks): one
    # zero without them.
    assert value(families["fairqueue_task_duration_seconds"], task="") == 0
