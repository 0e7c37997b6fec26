"""Tools for developing and testing FairQueue, outside the product.

- ``devtools.sandbox``: a sandbox payment gateway (the part of Paystack's API
  FairQueue uses, and a Turnstile test verifier): ``python -m devtools.sandbox``.
- ``devtools.devstack``: embedded PostgreSQL and Redis and the runner behind
  ``make run`` / ``make test``: ``python -m devtools.devstack run|test|services``.

The product (the apps, ``config``, ``fairqueue``) never imports this package
(an import-linter contract in pyproject.toml), and the production image leaves
it out (Dockerfile); the demo's sandbox has an image of its own (the Dockerfile's
``sandbox`` stage).
"""
