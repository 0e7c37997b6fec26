"""bench/floor.py: how busy the machine was beside the floor."""

from __future__ import annotations

import os

import pytest

from bench.floor import busy_share


def test_busy_share_is_the_cpu_spent_over_all_cores_until_the_mark():
    cores = os.cpu_count() or 1
    timeline = [
        {"t": 0.0},  # before the stack's CPU was first read
        {"t": 1.0, "cpu": 10.0},
        {"t": 11.0, "cpu": 10.0 + 5.0 * cores},  # half of every core for 10 s
        {"t": 21.0, "cpu": 10.0 + 15.0 * cores},  # all of them, after the mark
    ]
    share, span = busy_share(timeline, until=11.0)
    assert span == 10.0
    assert share == pytest.approx(0.5)
    share, span = busy_share(timeline, until=None)
    assert span == 20.0
    assert share == pytest.approx(0.75)


def test_busy_share_needs_two_readings():
    assert busy_share([{"t": 1.0, "cpu": 3.0}], until=None) is None
    assert busy_share([], until=None) is None
