"""Delta Lake: Spark (delta-spark) for writes, delta-rs (``deltalake``) for metadata reads."""

from .adapter import DeltaFormat

__all__ = ["DeltaFormat"]
