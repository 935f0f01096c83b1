"""Streaming ingest: Kafka (or landed files) into an Iceberg or Delta table, exactly once.

One pipeline for every source. Spark Structured Streaming reads the source; each record is parsed against the
table's schema and validated in the same projection; ``foreachBatch`` writes the good rows to the table and the bad
ones to a dead-letter table, each write idempotent per batch (``target``). The application id is derived from the
checkpoint, so a restart with the same checkpoint (the default: one per table and source) resumes where the last
committed batch ended and rewrites nothing, whether the previous run finished, was stopped or was killed.

The modules, each one job: ``options`` (what the caller asks for), ``parse`` (JSON against the table's columns),
``modes`` (plain, merge-schema, change events), ``plan`` (the streaming plan, the dedupe stage), ``batch`` (the batch
writer), ``dead_letters``, ``evolve`` (new columns), ``remote`` (batches in a Spark Connect engine) and ``reports``
(their counters), ``checkpoint``, ``pipeline``, ``handle`` (a running ingest), ``metrics`` and ``progress`` (its
figures), ``start`` (the checks, then the stream).
"""

from .checkpoint import default_checkpoint
from .dead_letters import DEAD_LETTER_REASONS, DLQ_COLUMNS, DLQ_SCHEMA
from .handle import IngestHandle
from .options import UNKNOWN_MODES, IngestOptions, Trigger
from .start import ProgressCallback, run_ingest, start_ingest
from .state import BatchStats

__all__ = [
    "DEAD_LETTER_REASONS",
    "DLQ_COLUMNS",
    "DLQ_SCHEMA",
    "UNKNOWN_MODES",
    "BatchStats",
    "IngestHandle",
    "IngestOptions",
    "ProgressCallback",
    "Trigger",
    "default_checkpoint",
    "run_ingest",
    "start_ingest",
]
