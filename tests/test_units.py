"""Pure-Python parsing: identifiers, schemas, transforms, durations, sizes, timestamps, configs."""

from datetime import UTC, datetime, timedelta

import pytest

from lakecat.errors import ConfigError, InvalidArgumentError, UnsupportedOperationError
from lakecat.formats.delta.partitioning import delta_generated_columns, describe_delta_partitioning
from lakecat.formats.iceberg.adapter import iceberg_transform_word
from lakecat.identifiers import TableIdent, parse_columns
from lakecat.partitioning import parse_partition_spec
from lakecat.schema import parse_schema
from lakecat.units import parse_duration, parse_size, parse_timestamp


@pytest.mark.parametrize("bad", ["orders", "a.b.c", "shop.x; DROP TABLE y", "1a.b", "a.`b`", "", "a.", ".b", "a-b.c"])
def test_identifiers_reject(bad):
    with pytest.raises(InvalidArgumentError, match="invalid table name"):
        TableIdent.parse(bad)


def test_identifier_quoting():
    ident = TableIdent.parse("sales.orders_2")
    assert ident.quoted == "`sales`.`orders_2`"
    assert str(ident) == "sales.orders_2"
    assert parse_columns("a, b ,c") == ["a", "b", "c"]
    with pytest.raises(InvalidArgumentError):
        parse_columns("a, b c")


def test_schema_parsing():
    cols = parse_schema(
        "id long not null, ts TIMESTAMP, price decimal(10, 2), tags ARRAY<string>, "
        "m MAP<STRING, INT>, s STRUCT<a: INT, b STRING> COMMENT 'it''s'"
    )
    assert [(c.name, c.type, c.nullable) for c in cols] == [
        ("id", "BIGINT", False), ("ts", "TIMESTAMP", True), ("price", "DECIMAL(10,2)", True),
        ("tags", "ARRAY<STRING>", True), ("m", "MAP<STRING, INT>", True), ("s", "STRUCT<`a`: INT, `b`: STRING>", True),
    ]  # fmt: skip
    assert cols[0].ddl() == "`id` BIGINT NOT NULL"


@pytest.mark.parametrize(
    "bad, msg",
    [("", "empty"), ("id BIGINTY", "unknown type"), ("id BIGINT, id INT", "twice"), ("id", "ended early"),
     ("id BIGINT; DROP TABLE x", "unexpected"), ("x-y INT", "expected"), ("id DECIMAL(50,2)", "out of range")],
)  # fmt: skip
def test_schema_errors(bad, msg):
    with pytest.raises(InvalidArgumentError, match=msg):
        parse_schema(bad)


def test_partition_specs():
    cols = parse_schema("id BIGINT, ts TIMESTAMP, d DATE, region STRING")
    fields = parse_partition_spec("days(ts), region, bucket(16, id), truncate(2, region), years(d)", cols)
    assert [str(f) for f in fields] == ["days(ts)", "region", "bucket(16, id)", "truncate(2, region)", "years(d)"]
    assert parse_partition_spec(["day(ts)"], cols)[0].transform == "days"
    for bad, msg in [("days(region)", "not a date"), ("hours(d)", "needs a timestamp"), ("nope", "no column"),
                     ("weeks(ts)", "invalid partition transform"), ("days(ts), days(ts)", "twice")]:  # fmt: skip
        with pytest.raises(InvalidArgumentError, match=msg):
            parse_partition_spec(bad, cols)


def test_delta_mapping_and_back():
    cols = parse_schema("id BIGINT, ts TIMESTAMP, region STRING, n INT")
    fields = parse_partition_spec(
        "years(ts), months(ts), days(ts), hours(ts), region, truncate(3, region), truncate(10, n)", cols
    )
    extra, names = delta_generated_columns(fields, cols)
    assert names == ["ts_year", "ts_month", "ts_day", "ts_hour", "region", "region_trunc", "n_trunc"]
    generation = {
        n: e.split("GENERATED ALWAYS AS (", 1)[1][:-1]
        for n, e in zip([x for x in names if x != "region"], extra, strict=True)
    }
    assert describe_delta_partitioning(names, generation) == [
        "years(ts)",
        "months(ts)",
        "days(ts)",
        "hours(ts)",
        "region",
        "truncate(3, region)",
        "truncate(10, n)",
    ]
    with pytest.raises(UnsupportedOperationError, match="not supported for delta"):
        delta_generated_columns(parse_partition_spec("bucket(4, id)", cols), cols)
    assert iceberg_transform_word("bucket[16]", "id") == "bucket(16, id)"
    assert iceberg_transform_word("day", "ts") == "days(ts)"


def test_durations_sizes_timestamps():
    assert parse_duration("30m") == timedelta(minutes=30)
    assert parse_duration("2w") == timedelta(weeks=2)
    assert parse_size("128MB") == 128_000_000
    assert parse_size("1GiB") == 2**30
    assert parse_timestamp("2026-01-31T12:00:00") == datetime(2026, 1, 31, 12, tzinfo=UTC)
    assert parse_timestamp("2026-01-31T13:00:00+01:00") == datetime(2026, 1, 31, 12, tzinfo=UTC)
    for fn, bad in [
        (parse_duration, "7 days"),
        (parse_duration, "-1d"),
        (parse_size, "12XB"),
        (parse_timestamp, "yesterday"),
    ]:
        with pytest.raises(InvalidArgumentError):
            fn(bad)


def test_config_resolution(tmp_path, monkeypatch, lakecat_home):
    from lakecat.config import bundled_conf_dir, load_config_file, resolve_config

    default = resolve_config(None)
    assert default.name == "local"
    assert default.warehouse_path == lakecat_home / "warehouse"
    assert default.metastore.sqlite_path == lakecat_home / "catalog.db"
    assert load_config_file(bundled_conf_dir() / "local.toml") == default  # local.toml *is* the default

    conf = tmp_path / "team.toml"
    conf.write_text('name = "team"\nwarehouse = "${WH}"\nmetastore = "postgresql://lake:${PGPW}@db:5432/meta"\n')
    monkeypatch.setenv("WH", "s3a://bucket/wh")
    with pytest.raises(ConfigError, match="PGPW is not set"):
        resolve_config(str(conf))
    monkeypatch.setenv("PGPW", "s3cret")
    cfg = resolve_config(str(conf))
    assert cfg.metastore.jdbc() == ("jdbc:postgresql://db:5432/meta", {"user": "lake", "password": "s3cret"})
    assert "s3cret" not in str(cfg.to_dict())
    monkeypatch.setenv("LAKECAT_CONF_DIR", str(tmp_path))
    assert resolve_config("team").name == "team"
    monkeypatch.setenv("LAKECAT_CATALOG", "team")
    assert resolve_config(None).name == "team"
    with pytest.raises(ConfigError, match="unknown catalog"):
        resolve_config("nope")
    (tmp_path / "broken.toml").write_text("name = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        resolve_config("broken")


def test_bundled_example_configs_parse(monkeypatch):
    """Every shipped catalog config is valid TOML with the keys lakecat needs, once its env is set."""
    from lakecat.config import bundled_conf_dir, load_config_file
    from lakecat.spark import catalog_spark_conf as iceberg_catalog_conf

    for var in ("PGPASSWORD", "LAKECAT_WAREHOUSE", "LAKECAT_BUCKET", "ICEBERG_REST_CREDENTIAL"):
        monkeypatch.setenv(var, "x")
    files = sorted(p for p in bundled_conf_dir().glob("*.toml") if "plan" not in p.name)
    assert {p.stem for p in files} >= {"local", "team-postgres", "cluster", "object-storage", "rest"}
    for path in files:
        cfg = load_config_file(path)
        conf = iceberg_catalog_conf(cfg)
        assert conf[f"spark.sql.catalog.{cfg.name}"] == "org.apache.iceberg.spark.SparkCatalog"
    rest = load_config_file(bundled_conf_dir() / "rest.toml")
    assert iceberg_catalog_conf(rest)["spark.sql.catalog.rest.type"] == "rest"
    from lakecat.catalog import catalog_kinds
    from lakecat.formats import all_formats

    for path in files:  # every [iceberg] section passes the adapter's check
        for adapter in all_formats():
            adapter.check_config(load_config_file(path))
    kinds = {p.stem: catalog_kinds(load_config_file(p))["iceberg"] for p in files}
    assert (
        kinds["rest"] == "rest"
        and kinds["hive"] == "hive"
        and kinds["glue"] == "glue"
        and kinds["local"] == "metastore"
    )
    hive = iceberg_catalog_conf(load_config_file(bundled_conf_dir() / "hive.toml"))
    assert hive["spark.sql.catalog.hive.type"] == "hive" and hive["spark.sql.catalog.hive.uri"].startswith("thrift://")


def test_rest_spark_settings(tmp_path, monkeypatch):
    """The Spark catalog of a REST config: Iceberg's RESTCatalog with the section's keys; secrets from the environment,
    an unset one left out; the REST catalog picks the warehouse unless [iceberg] names one."""
    from lakecat.config import load_config_file
    from lakecat.spark import catalog_spark_conf

    monkeypatch.setenv("RC_CREDENTIAL", "id:secret")
    monkeypatch.delenv("RC_TOKEN", raising=False)
    path = tmp_path / "rc.toml"
    path.write_text(f'name = "rc"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/m.db"\n[iceberg]\ntype = "rest"\n'
                    'uri = "https://cat.example.com/api/catalog"\ncredential = "${RC_CREDENTIAL}"\ntoken = "${RC_TOKEN:-}"\n'
                    'scope = "PRINCIPAL_ROLE:ALL"\n')  # fmt: skip
    conf = {k.removeprefix("spark.sql.catalog.rc."): v for k, v in catalog_spark_conf(load_config_file(path)).items()
            if k.startswith("spark.sql.catalog.rc.")}  # fmt: skip
    assert conf == {"cache-enabled": "false", "type": "rest", "uri": "https://cat.example.com/api/catalog",
                    "credential": "id:secret", "scope": "PRINCIPAL_ROLE:ALL"}  # fmt: skip


def test_catalogs_lists_only_catalog_configs(cli):
    import json

    code, out, _ = cli("catalogs", "--json")
    names = {c["name"] for c in json.loads(out)}
    assert code == 0 and "local" in names and "team-postgres" in names
    assert not any("plan" in n for n in names)  # the maintenance plan example is not a catalog


def test_durations_are_bounded():
    """Found by the fuzzer: a window longer than the calendar made `expire --older-than` an internal error."""
    with pytest.raises(InvalidArgumentError, match="1000 years"):
        parse_duration("17759048h")
    assert parse_duration("52w").days == 364


def test_delta_conflicts_raised_as_python_classes_are_commit_conflicts():
    """delta-spark raises its own Python exception classes, whose text lacks the class name: a concurrent append
    during a MERGE must be a (retried) commit conflict, never an internal error (exit 4) — found by the soak."""
    from delta.exceptions import ConcurrentAppendException

    from lakecat.engine import spark_errors
    from lakecat.errors import CommitConflictError

    with pytest.raises(CommitConflictError, match="commit conflict"), spark_errors("upsert into"):
        raise ConcurrentAppendException("[DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT] Transaction conflict detected.")
    with pytest.raises(KeyError), spark_errors("upsert into"):  # not an engine error: a bug stays a bug
        raise KeyError("x")


def test_a_py4j_call_error_names_its_cause():
    """An error through Py4J shows the Java cause, not Py4J's "An error occurred while calling o2139.sql." (the
    classification of such errors: tests/test_engine_errors.py, with the real errors)."""
    from lakecat.engine import first_line

    assert first_line("An error occurred while calling o7.collectToPython.\n") == "unknown error"
    assert first_line("An error occurred while calling o2.sql.\n: java.io.IOException: x") == "java.io.IOException: x"


def test_kafka_consumer_defaults_and_overrides():
    """lakecat's reader default (a short fetch wait, see CONSUMER_DEFAULTS) unless the user's options name it; such
    Java-consumer settings never reach librdkafka's admin client, which has no such names."""
    from lakecat.sources.kafka import KafkaSource

    plain = KafkaSource("localhost:9092", "orders")
    assert plain.consumer_options() == {"kafka.fetch.max.wait.ms": "10"}
    own = KafkaSource("localhost:9092", "orders", options={"fetch.max.wait.ms": 300, "kafka.security.protocol": "SSL"})
    assert own.consumer_options() == {"kafka.fetch.max.wait.ms": "300", "kafka.security.protocol": "SSL"}
    assert own.admin_conf()["security.protocol"] == "SSL" and "fetch.max.wait.ms" not in own.admin_conf()


def test_local_paths_in_every_spelling_spark_uses():
    """A local location as a path, as ``file:///x`` and as Hadoop's ``file:/x`` (Spark's and Delta's ``DESCRIBE
    DETAIL``) is the same local path; object storage is none."""
    from pathlib import Path

    from lakecat.adopt import absolute_location
    from lakecat.files import local_path

    for spelling in ("/tmp/wh/t", "file:///tmp/wh/t", "file:/tmp/wh/t", "file:/tmp/wh/t/"):
        assert local_path(spelling) in (Path("/tmp/wh/t"), Path("/tmp/wh/t/")), spelling
        assert absolute_location(spelling) == absolute_location("/tmp/wh/t"), spelling
    assert local_path("file:/tmp/a%20b") == Path("/tmp/a b")
    assert local_path("s3://bucket/t") is None and local_path("s3a://bucket/t") is None


def test_the_file_list_reads_pause_the_cyclic_collector_and_restore_it():
    """``no_cyclic_gc`` (the table's file list read in bulk) pauses Python's cyclic collector and puts back the state
    it found, also when the read fails, and leaves a collector the caller had paused paused."""
    import gc

    from lakecat.files import no_cyclic_gc

    assert gc.isenabled()
    with no_cyclic_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(OSError), no_cyclic_gc():
        raise OSError("a manifest that cannot be read")
    assert gc.isenabled()
    gc.disable()
    try:
        with no_cyclic_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_library_messages_name_parameters_and_the_command_line_its_options():
    """A library error speaks Python (``where=``, ``full=True``); the CLI says the same as its options."""
    from lakecat.errors import InvalidArgumentError, invalid

    cases = {
        "invalid columns='a,,b': give column names separated by commas":
            "invalid --columns 'a,,b': give column names separated by commas",
        "dedupe_key= needs watermark= (how long to remember keys, e.g. '1h')":
            "--dedupe-key needs --watermark (how long to remember keys, e.g. '1h')",
        "full=True reclusters a clustered table": "--full reclusters a clustered table",
        "read t without a JVM: no; use engine='spark'": "read t without a JVM: no; use --engine spark",
        "since=5 is after until=3": "--since 5 is after --until 3",
        "alter(widen, rewrite=True) on a table with NOT NULL columns": "alter --widen --rewrite on a table with NOT NULL columns",
        "event_time=: column ts of table a.b is STRING": "--event-time: column ts of table a.b is STRING",
        # not options: a property, a setting, key=value
        "set delta.enableChangeDataFeed=true or format-version=2; give key=value": None,
    }  # fmt: skip
    for python, cli in cases.items():
        e = InvalidArgumentError(python)
        assert str(e) == python and e.cli_message() == (cli or python), (python, e.cli_message())
    pair = invalid("invalid every: must be longer than 0s", "invalid --every: must be longer than 0s")
    assert str(pair) == "invalid every: must be longer than 0s" and pair.cli_message().startswith("invalid --every")
