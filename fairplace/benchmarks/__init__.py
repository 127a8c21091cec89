"""Benchmarks for ``fairplace bench``: one module per area, each exposing ``CASES``.

``CASES`` maps a benchmark name to ``(run, target_seconds)`` where ``run(quick: bool) -> dict`` returns at
least ``{"seconds": float}`` (plus any detail worth printing). Speed targets live here, never in tests.
"""
