"""The product's settings with bench/floor_urls.py's floor views mounted beside
the real API: the settings of bench/queue_bench.py's server only."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor_urls"
