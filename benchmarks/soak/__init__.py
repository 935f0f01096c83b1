"""The chaos soak, ``python -m benchmarks.soak`` from the checkout's root (see ``run.py``)."""
