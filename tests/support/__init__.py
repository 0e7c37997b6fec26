"""Shared test support, registered once as a pytest plugin
(``pytest_plugins = ["tests.support.plugin"]`` in tests/conftest.py).

- ``factories``: factory-boy factories for the models;
- ``races``: the one helper for concurrency tests (real threads, one start);
- ``sales``: events on sale, queue entries, admitted customers, claims;
- ``payments``: the sandbox gateway driver, payments made through the API,
  a small sale paid through the API (``make_paid_sale``);
- ``invariants``: the invariant check's failures as a test asserts them;
- ``processes``: what tests that start other processes share (the child's
  settings, the health probe);
- ``plugin``: the fixtures every test directory may use.

Tests import helpers from here, never from another directory's conftest.
"""
