"""Where an ingest reads from: every source implements ``lakecat.sources.base.Source``."""

from .base import Source, StreamOptions
from .files import FILE_FORMATS, FileSource
from .kafka import KAFKA_METADATA_COLUMNS, KafkaSource

__all__ = ["FILE_FORMATS", "KAFKA_METADATA_COLUMNS", "FileSource", "KafkaSource", "Source", "StreamOptions"]
