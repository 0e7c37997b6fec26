"""Read what this process recorded for Prometheus (tests run without
PROMETHEUS_MULTIPROC_DIR, so the values live in the default registry)."""

from __future__ import annotations

from prometheus_client import REGISTRY


def sample(name: str, **labels: str) -> float:
    """The current value of one sample, 0 when it was never recorded."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def heals(kind: str) -> float:
    return sample("fairqueue_reconcile_heals_total", kind=kind)
