"""Benchmarks and fault-injection scenarios, run against a live stack.

``python bench/flashsale.py --help`` is the flash sale (50,000 customers for
5,000 tickets by default); ``python bench/fuzz.py --help`` fuzzes the API from
its OpenAPI schema. Figures go to ``bench/out/`` and into docs/BENCHMARKS.md.
"""
