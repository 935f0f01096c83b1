"""lakecat's benchmarks, soak and experiments: the lab beside the product, run from the checkout's root.

- ``python -m benchmarks``: the benchmark suite (``suite.py``; one module per section), every figure next to the
  hand-written baseline of each format (``baselines/``) measured in the same run;
- ``python -m benchmarks.soak``: the chaos soak (exactly once under kill -9, a broker restart and maintenance);
- ``python -m benchmarks.cdc``: the Debezium benchmark the suite's ``cdc`` section runs;
- ``benchmarks/experiments/``: single-purpose scripts over the suite (``python -m benchmarks.experiments.compact``).

Not part of the ``lakecat`` wheel: ``benchmarks`` imports ``lakecat``, nothing under ``lakecat/`` imports it.
"""
