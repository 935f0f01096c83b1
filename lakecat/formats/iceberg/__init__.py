"""Apache Iceberg: Spark's JdbcCatalog (or REST) for writes, pyiceberg for metadata reads."""

from .adapter import IcebergFormat

__all__ = ["IcebergFormat"]
