"""Fixtures of the benchmarks' tests: the suite's own (tests/support/plugin.py), also
when these tests run alone (`pytest bench/tests`)."""

pytest_plugins = ["tests.support.plugin"]
