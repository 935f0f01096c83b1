"""The benchmark suite (``python -m lakecat.bench``): lakecat against the plain jobs a user would write.

Not part of the importable core: nothing in ``lakecat`` imports it, and it imports nothing from ``tests/``.
``suite.py`` runs the sections and renders the README's Performance section; ``cdc.py`` is the Debezium
benchmark it runs as a subprocess (``python -m lakecat.bench.cdc``).
"""

from .suite import FULL, QUICK, SECTIONS, failed_sections, main, run_suite

__all__ = ["FULL", "QUICK", "SECTIONS", "failed_sections", "main", "run_suite"]
