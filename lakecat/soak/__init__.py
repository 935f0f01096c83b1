"""The chaos soak, ``python -m lakecat.soak`` (a harness outside the core; see ``run.py``)."""
