"""Run by tests/test_wheel.py with the Python of a fresh virtualenv that has lakecat installed from its wheel, in an
empty directory, with a Java runtime that has no compiler: one Spark session, both formats.

Prints one JSON document: where lakecat was imported from, the extension's state, and per format the rows Spark read
at each version and the rows the independent readers (pyiceberg, deltalake) read.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import lakecat
from lakecat import jvm

out: dict = {"lakecat": lakecat.__file__, "extension_jar": str(jvm.extension_jar()), "problem": jvm.problem()}
cat = lakecat.connect()
spark = cat.spark
out["extension_in_session"] = jvm.available(spark)
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import LongType, StringType, StructField, StructType  # noqa: E402

schema = StructType([StructField("id", LongType()), StructField("_corrupt", StringType())])
parsed = spark.range(1).select(jvm.from_json(F.lit('{"id": 7}'), schema, "_corrupt", fast=True).alias("p"))
out["parsed_by_extension"] = parsed.collect()[0]["p"]["id"]


def read_now(fmt: str, location: str) -> list[dict]:
    """The table's rows as the format's own library reads them."""
    if fmt == "iceberg":
        from pyiceberg.catalog.sql import SqlCatalog

        config = cat.config
        pyi = SqlCatalog(config.name, uri=f"sqlite:///{config.metastore.sqlite_path}", warehouse=config.warehouse_uri)
        return pyi.load_table(("smoke", f"t_{fmt}")).scan().to_arrow().to_pylist()
    from deltalake import DeltaTable

    return DeltaTable(location).to_pyarrow_table().to_pylist()


data = Path(sys.argv[1])
for fmt in ("iceberg", "delta"):
    name = f"smoke.t_{fmt}"
    t = cat.create_table(name, schema="id BIGINT NOT NULL, v STRING", format=fmt)
    (data / f"{fmt}-1.json").write_text('{"id": 1, "v": "a"}\n{"id": 2, "v": "b"}\n')
    (data / f"{fmt}-2.json").write_text('{"id": 2, "v": "B"}\n{"id": 3, "v": "c"}\n')
    t.upsert(str(data / f"{fmt}-1.json"), key=["id"], file_format="json")
    first = t.history(limit=1)[0].version
    t.upsert(str(data / f"{fmt}-2.json"), key=["id"], file_format="json")
    at_first = t.as_of(version=first, engine="spark")
    rows = sorted((r["id"], r["v"]) for r in at_first.to_spark().collect())
    now = read_now(fmt, t.location)
    out[fmt] = {
        "first_version": str(first),
        "spark_at_first": rows,
        "reader_now": sorted((r["id"], r["v"]) for r in now),
    }
print(json.dumps(out), flush=True)
# Arrow's scanners are released while Arrow is whole: one whose native threads outlive it into the interpreter's
# teardown aborts the process after its work is done (apache/arrow#34314)
gc.collect()
