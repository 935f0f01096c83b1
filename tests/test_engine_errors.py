"""Engine errors are translated by Spark's error conditions, SQLSTATEs and exception classes, not by their messages.

Each error here is the real one, raised by real Spark on a real table of each format (a conflict through the format's
own Java API in Spark's JVM, so that it happens every time), and the test asserts lakecat's error type and exit code.
"""

from __future__ import annotations

import shutil

import pytest

from lakecat.engine import engine_facts, is_connect, spark_errors
from lakecat.errors import (
    CommitConflictError,
    EngineOutOfMemoryError,
    InvalidArgumentError,
    LakecatError,
    TableAlreadyExistsError,
    TableNotFoundError,
    VersionNotFoundError,
)
from lakecat.files import local_path


@pytest.fixture
def jvm(spark):
    if is_connect(spark):
        pytest.skip("these errors are raised through the in-process session's JVM (Py4J)")
    return spark._jvm


@pytest.fixture
def table(catalog, spark, ns, table_format):
    t = catalog.create_table(f"{ns}.t", schema="id BIGINT, s STRING", format=table_format)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a'), (2, 'b')").collect()
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (3, 'c')").collect()
    return t


def _iceberg_table(spark, jvm, t):
    """The Iceberg table ``t`` as Spark's catalog loads it (org.apache.iceberg.Table)."""
    namespace = spark.sparkContext._gateway.new_array(jvm.java.lang.String, 1)
    namespace[0] = t.entry.ident.namespace
    ident = jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, t.entry.ident.name)
    catalog_name = t.spark_name.split(".")[0].strip("`")
    return spark._jsparkSession.sessionState().catalogManager().catalog(catalog_name).loadTable(ident).table()


def _conflicts(spark, jvm, t):
    """The format's commit conflicts, each raised for real: a callable per conflict."""
    if t.format == "delta":

        def concurrent_delete():  # Delta: a transaction that read the table commits after a DELETE removed a file
            log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, t.location)
            txn = log.startTransaction()
            txn.filterFiles()
            spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 1").collect()
            nothing = jvm.scala.jdk.javaapi.CollectionConverters.asScala(jvm.java.util.ArrayList()).toSeq()
            loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
            update = jvm.java.lang.Class.forName(
                "org.apache.spark.sql.delta.DeltaOperations$ManualUpdate$", True, loader
            )
            txn.commit(nothing, update.getField("MODULE$").get(None))

        return [concurrent_delete]
    itable = _iceberg_table(spark, jvm, t)
    expressions = jvm.org.apache.iceberg.expressions.Expressions

    def conflicting_files():  # Iceberg's validation: an overwrite planned before an append commits after it
        base = itable.currentSnapshot().snapshotId()
        spark.sql(f"INSERT INTO {t.spark_name} VALUES (4, 'd')").collect()
        itable.refresh()
        overwrite = itable.newOverwrite().overwriteByRowFilter(expressions.alwaysTrue()).validateFromSnapshot(base)
        overwrite.conflictDetectionFilter(expressions.alwaysTrue()).validateNoConflictingData().commit()

    def commit_failed():  # Iceberg's catalog refuses a commit whose base metadata moved on
        ops = itable.operations()
        stale = ops.refresh()
        spark.sql(f"INSERT INTO {t.spark_name} VALUES (5, 'e')").collect()
        props = jvm.java.util.Collections.singletonMap("k", "v")
        ops.commit(stale, jvm.org.apache.iceberg.TableMetadata.buildFrom(stale).setProperties(props).build())

    return [conflicting_files, commit_failed]


def test_commit_conflicts(spark, jvm, table):
    for conflict in _conflicts(spark, jvm, table):
        with pytest.raises(CommitConflictError, match="commit conflict") as e, spark_errors("upsert into"):
            conflict()
        assert e.value.exit_code == 1


def test_a_validation_that_is_no_conflict_is_not_retried(spark, jvm, catalog, ns):
    """Iceberg raises ValidationException for much else than a conflict: only one from a commit's validation is."""
    t = catalog.create_table(f"{ns}.v", schema="id BIGINT NOT NULL", format="iceberg")
    itable = _iceberg_table(spark, jvm, t)
    with pytest.raises(LakecatError) as e, spark_errors("alter"):
        itable.updateSpec().addField("nosuch").commit()  # Iceberg validates the change itself
    assert not isinstance(e.value, CommitConflictError)


def test_missing_table(spark, table):
    if table.format == "iceberg":
        spark.sql(f"DROP TABLE {table.spark_name}").collect()  # dropped behind the table object's back
    else:
        shutil.rmtree(local_path(table.location) / "_delta_log")
    with pytest.raises(TableNotFoundError) as e:
        table.to_spark()
    assert e.value.exit_code == 1


def test_table_already_exists(spark, table):
    using = "iceberg" if table.format == "iceberg" else "delta"
    with pytest.raises(TableAlreadyExistsError) as e, spark_errors("create", table.entry.ident):
        spark.sql(f"CREATE TABLE {table.spark_name} (id BIGINT) USING {using}").collect()
    assert e.value.exit_code == 1


def test_missing_column_is_a_usage_error(spark, table):
    with pytest.raises(InvalidArgumentError, match="nosuch") as e, spark_errors("read", table.entry.ident):
        spark.sql(f"SELECT nosuch FROM {table.spark_name}").collect()
    assert e.value.exit_code == 2


def test_a_version_the_table_does_not_have(spark, table):
    from lakecat.versions import _engine_errors

    with pytest.raises(VersionNotFoundError) as e, _engine_errors("timetravel", table, 999999):
        spark.sql(f"SELECT * FROM {table.spark_name} VERSION AS OF 999999").collect()
    assert e.value.exit_code == 1


def test_a_version_whose_files_were_removed(spark, table):
    """A data file of the version gone (an expiry or vacuum elsewhere): Spark's FAILED_READ_FILE, by its condition."""
    old = table.history().entries[1].version  # the first insert's
    frame = spark.sql(f"SELECT * FROM {table.spark_name} VERSION AS OF {old}")
    files = {
        r.f for r in spark.sql(f"SELECT input_file_name() AS f FROM {table.spark_name} VERSION AS OF {old}").collect()
    }
    assert files
    for path in files:
        local_path(path).unlink()
    from lakecat.versions import _engine_errors

    with pytest.raises(VersionNotFoundError, match="files were removed"), _engine_errors("timetravel", table, old):
        frame.collect()


def test_out_of_memory(jvm):
    """A real java.lang.OutOfMemoryError thrown in Spark's JVM and raised through Py4J (an array larger than the JVM
    allows: nothing is allocated)."""
    with pytest.raises(EngineOutOfMemoryError, match="spark.driver.memory") as e, spark_errors("compact"):
        jvm.java.lang.reflect.Array.newInstance(jvm.java.lang.Long.TYPE, 2147483647)
    assert e.value.exit_code == 1
    facts = engine_facts(e.value.__cause__)
    assert facts is not None and facts.has("java.lang.OutOfMemoryError")


def test_a_delta_log_truncated_under_an_operation_is_a_conflict(jvm, tmp_path):
    """An expiry truncated a Delta log between an operation's listing of it and its read (found by the soak): a retried
    conflict. A data file gone is none. The real java.io.FileNotFoundException, raised in the JVM through Py4J."""
    log = tmp_path / "t" / "_delta_log"
    with pytest.raises(CommitConflictError, match="log was truncated"), spark_errors("merge into"):
        jvm.java.io.FileInputStream(str(log / "00000000000000000003.json"))
    with pytest.raises(LakecatError) as e, spark_errors("merge into"):
        jvm.java.io.FileInputStream(str(tmp_path / "t" / "part-00000.parquet"))
    assert not isinstance(e.value, CommitConflictError)
    assert str(e.value).startswith("merge into failed: java.io.FileNotFoundException")


def test_a_python_error_stays_a_bug():
    with pytest.raises(KeyError), spark_errors("upsert into"):
        raise KeyError("x")


def test_a_conflict_raised_inside_a_streaming_batch_is_a_conflict(spark, tmp_path):
    """A format's conflict raised in a foreachBatch function reaches the caller as a StreamingQueryException that
    carries the Python traceback as text only: still a commit conflict."""
    from delta.exceptions import ConcurrentAppendException

    if is_connect(spark):
        pytest.skip("foreachBatch runs on the engine's own Python worker there")

    def batch(_df, _batch_id):
        raise ConcurrentAppendException("Files were added to the root of the table by a concurrent update.")

    stream = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    query = stream.writeStream.foreachBatch(batch).option("checkpointLocation", str(tmp_path / "cp")).start()
    with pytest.raises(CommitConflictError), spark_errors("ingest into"):
        query.awaitTermination(120)
    query.stop()
