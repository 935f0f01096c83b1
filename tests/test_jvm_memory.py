"""lakecat's memory defaults for its Spark driver JVM: they reach the real JVM, and [spark.conf] overrides them.

The suite pins the driver's memory (tests/conftest.py), so lakecat's own memory options, sized from the machine, are
checked here with a simulated machine (``_sizing``); lakecat.sizing's rules have tests of their own (test_sizing.py).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from lakecat.config import load_config_file, resolve_config
from lakecat.sizing import GiB, Machine, plan
from lakecat.spark import (
    ENGINE_GC_OPTIONS,
    JAVA_GC_OPTIONS,
    JAVA_OPTIONS_KEY,
    JVM_ENVIRONMENT,
    STATUS_RETENTION,
    _jvm_environment,
    engine_spark_conf,
    jvm_environment,
    merge_java_options,
)


def _config(tmp_path, spark_conf: str = ""):
    path = tmp_path / "mem.toml"
    path.write_text(f'name = "mem"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/c.db"\n'
                    f"[spark.conf]\n{spark_conf}")  # fmt: skip
    return path


def _sizing(config, *, memory: int = 3 * GiB):
    """The sizing of a simulated 2-core machine with ``memory`` and no environment of its own."""
    return plan(Machine(cpus=2, memory=memory), master=config.spark_master, conf=config.spark_conf, env={})


def _conf(config, *, server: bool = False):
    return engine_spark_conf(config, server=server, sizing=_sizing(config))


def test_defaults_in_the_session_conf():
    config = resolve_config(None)
    conf = _conf(config)
    assert conf["spark.driver.memory"] == "1g"  # a 3 GiB machine: half of what 1 GiB for the rest leaves
    assert conf["spark.sql.shuffle.partitions"] == conf["spark.default.parallelism"] == "2"
    assert conf["spark.sql.adaptive.enabled"] == conf["spark.sql.adaptive.coalescePartitions.enabled"] == "true"
    options = shlex.split(conf[JAVA_OPTIONS_KEY])
    assert options[0].startswith("-Dlog4j2.configurationFile=")
    assert options[1:] == [*JAVA_GC_OPTIONS, "-XX:NewRatio=9", "-XX:MaxDirectMemorySize=512m"]  # relative to the heap
    assert not any(o.startswith("-Xmx") for o in options)  # spark-submit refuses -Xmx there: the heap is driver.memory
    assert "-XX:+UseParallelGC" in options and not any("G1" in o for o in options)
    big = engine_spark_conf(config, sizing=_sizing(config, memory=64 * GiB))
    assert big["spark.driver.memory"] == "31g" and "-XX:MaxDirectMemorySize=15872m" in big[JAVA_OPTIONS_KEY]


def test_the_local_engine_runs_g1_and_the_rest_alike():
    config = resolve_config(None)
    ours, server = _conf(config), _conf(config, server=True)
    options = shlex.split(server[JAVA_OPTIONS_KEY])
    assert options[-2:] == list(ENGINE_GC_OPTIONS) == ["-XX:+UseG1GC", "-XX:G1PeriodicGCInterval=60000"]
    assert "-XX:+UseParallelGC" not in options  # one collector, not two
    parallel = ("-XX:+UseParallelGC", "-XX:NewRatio=9", "-XX:+UseAdaptiveSizePolicyWithSystemGC")
    assert not set(parallel[1:]) & set(options)  # the parallel collector's tuning goes with it
    assert options[:-2] == [o for o in shlex.split(ours[JAVA_OPTIONS_KEY]) if o not in parallel]
    assert {k: v for k, v in server.items() if k != JAVA_OPTIONS_KEY} == {
        k: v for k, v in ours.items() if k != JAVA_OPTIONS_KEY
    }


def test_a_users_collector_wins_on_the_engine_too(tmp_path):
    path = _config(tmp_path, '"spark.driver.extraJavaOptions" = "-XX:+UseSerialGC"\n')
    for server in (False, True):
        options = shlex.split(_conf(load_config_file(path), server=server)[JAVA_OPTIONS_KEY])
        assert options[-1] == "-XX:+UseSerialGC"
        assert not any(o.startswith("-XX:+Use") and o != "-XX:+UseSerialGC" for o in options), options
        assert not any(o.startswith("-XX:NewRatio") for o in options), options  # tuned for the collector replaced
        assert "-XX:+UseAdaptiveSizePolicyWithSystemGC" not in options


def test_a_users_young_generation_leaves_the_collector(tmp_path):
    path = _config(tmp_path, '"spark.driver.extraJavaOptions" = "-XX:MaxNewSize=256m"\n')
    options = shlex.split(_conf(load_config_file(path))[JAVA_OPTIONS_KEY])
    assert "-XX:+UseParallelGC" in options and options[-1] == "-XX:MaxNewSize=256m"
    assert "-XX:NewRatio=9" not in options  # a size of the young generation replaces lakecat's ratio
    assert "-XX:MaxDirectMemorySize=512m" in options  # the heap is still lakecat's: so are its other sizes


def test_a_flag_named_use_gc_is_not_a_collector(tmp_path):
    # -XX:-UseAdaptiveSizePolicyWithSystemGC turns lakecat's flag off; it does not choose another collector
    path = _config(tmp_path, '"spark.driver.extraJavaOptions" = "-XX:-UseAdaptiveSizePolicyWithSystemGC"\n')
    options = shlex.split(_conf(load_config_file(path))[JAVA_OPTIONS_KEY])
    assert "-XX:+UseParallelGC" in options and "-XX:NewRatio=9" in options
    assert (
        options[-1] == "-XX:-UseAdaptiveSizePolicyWithSystemGC"
        and "-XX:+UseAdaptiveSizePolicyWithSystemGC" not in options
    )


def test_spark_conf_overrides_one_default_at_a_time(tmp_path):
    path = _config(tmp_path, '"spark.driver.memory" = "3g"\n'
                             '"spark.driver.extraJavaOptions" = "-XX:+UseSerialGC -XX:MaxDirectMemorySize=64m -Dx.y=1"\n')  # fmt: skip
    conf = _conf(load_config_file(path))
    assert conf["spark.driver.memory"] == "3g"
    options = shlex.split(conf[JAVA_OPTIONS_KEY])
    assert options[0].startswith("-Dlog4j2.configurationFile=")  # lakecat's logging stays
    assert options[-3:] == ["-XX:+UseSerialGC", "-XX:MaxDirectMemorySize=64m", "-Dx.y=1"]
    assert "-XX:+UseParallelGC" not in options and sum("MaxDirectMemorySize" in o for o in options) == 1  # replaced
    assert "-XX:MaxHeapFreeRatio=30" in options  # the defaults the user did not touch stay


def test_a_user_who_sizes_the_heap_gets_no_memory_size_of_lakecats(tmp_path):
    config = load_config_file(_config(tmp_path, '"spark.driver.memory" = "6g"\n'))
    options = shlex.split(_conf(config)[JAVA_OPTIONS_KEY])
    assert options[1:] == list(JAVA_GC_OPTIONS)  # the collector and its giving memory back stay; no size of lakecat's
    environment = plan(Machine(cpus=2, memory=3 * GiB), env={"SPARK_DRIVER_MEMORY": "2g"})  # Spark's own variable
    conf = engine_spark_conf(resolve_config(None), sizing=environment)
    assert conf["spark.driver.memory"] == "2g" and shlex.split(conf[JAVA_OPTIONS_KEY])[1:] == list(JAVA_GC_OPTIONS)


def test_with_the_ui_off_sparks_status_store_keeps_fifty_of_each_and_a_users_ui_keeps_sparks_defaults(tmp_path):
    keys = {"spark.ui.retainedJobs", "spark.ui.retainedStages", "spark.sql.ui.retainedExecutions"}
    assert set(STATUS_RETENTION) == keys and set(STATUS_RETENTION.values()) == {"50"}
    conf = _conf(resolve_config(None))
    assert conf["spark.ui.enabled"] == "false" and {k: conf[k] for k in keys} == STATUS_RETENTION
    ui = engine_spark_conf(load_config_file(_config(tmp_path, '"spark.ui.enabled" = "true"\n')))
    assert ui["spark.ui.enabled"] == "true" and not keys & set(ui)  # Spark's own 1,000 of each for the user's UI
    (tmp_path / "own").mkdir()
    own = engine_spark_conf(load_config_file(_config(tmp_path / "own", '"spark.ui.retainedJobs" = "500"\n')))
    assert own["spark.ui.retainedJobs"] == "500" and own["spark.ui.retainedStages"] == "50"


def test_merge_java_options():
    ours = ["-Dlog4j2.configurationFile=file:///l.properties", "-XX:+UseG1GC", "-XX:MaxHeapFreeRatio=30"]
    assert merge_java_options(ours, "") == shlex.join(ours)
    assert shlex.split(merge_java_options(ours, "-XX:-UseG1GC")) == [ours[0], ours[2], "-XX:-UseG1GC"]
    assert shlex.split(merge_java_options(ours, "-Dlog4j2.configurationFile=mine '-Da=b c'")) == [
        *ours[1:], "-Dlog4j2.configurationFile=mine", "-Da=b c"]  # fmt: skip


@pytest.mark.spark
def test_the_sessions_jvm_runs_with_the_defaults(spark):
    jvm = spark.sparkContext._jvm
    args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    # the suite's SPARK_DRIVER_MEMORY (tests/conftest.py), which spark-submit's launcher turned into the heap limit;
    # lakecat's own sizes of memory, relative to its heap, reach a real JVM in test_sizing.py
    assert os.environ["SPARK_DRIVER_MEMORY"] == "960m" and "-Xmx960m" in args
    for option in JAVA_GC_OPTIONS:
        assert option in args
    assert not any(a.startswith(("-XX:NewRatio", "-XX:MaxDirectMemorySize")) for a in args)  # the user sized the heap
    assert jvm.java.lang.Runtime.getRuntime().maxMemory() <= 960 * 1024**2
    hotspot = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    assert hotspot.getVMOption("ReservedCodeCacheSize").getValue() == str(240 * 1024**2)  # the JIT's, by default
    collectors = {b.getName() for b in jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()}
    assert collectors == {"PS Scavenge", "PS MarkSweep"}, collectors  # the parallel (throughput) collector
    assert hotspot.getVMOption("UseAdaptiveSizePolicyWithSystemGC").getValue() == "true"  # System.gc() resizes too

    sc = spark.sparkContext
    assert {k: sc.getConf().get(k) for k in STATUS_RETENTION} == STATUS_RETENTION
    sc.setJobGroup("lakecat-retention-test", "status store retention")
    try:
        for _ in range(60):
            sc.parallelize([1], 1).count()
    finally:
        sc.setJobGroup(None, None)  # type: ignore[arg-type]
    kept = list(sc.statusTracker().getJobIdsForGroup("lakecat-retention-test"))
    assert 1 <= len(kept) <= 50, kept  # Spark's status store dropped the oldest of the 60 finished jobs

    env = spark.sparkContext._jvm.java.lang.System.getenv
    for k, v in JVM_ENVIRONMENT.items():  # in the JVM's environment (a user's own setting wins)
        assert env(k) == os.environ.get(k, v)


def test_the_jvm_environment_is_set_while_the_jvm_starts_and_a_users_own_wins(monkeypatch):
    assert JVM_ENVIRONMENT == {"MALLOC_ARENA_MAX": "2"}
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    with _jvm_environment():
        assert os.environ["MALLOC_ARENA_MAX"] == "2"
    assert "MALLOC_ARENA_MAX" not in os.environ
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    with _jvm_environment():
        assert os.environ["MALLOC_ARENA_MAX"] == "4"
    assert os.environ["MALLOC_ARENA_MAX"] == "4"
    assert jvm_environment({"MALLOC_ARENA_MAX": "4", "A": "b"}) == {"MALLOC_ARENA_MAX": "4", "A": "b"}
    assert jvm_environment({"A": "b"}) == {"MALLOC_ARENA_MAX": "2", "A": "b"}


PRINT_JVM = """
import json, lakecat
jvm = lakecat.connect().session().sparkContext._jvm
mf = jvm.java.lang.management.ManagementFactory
print(json.dumps({"args": list(mf.getRuntimeMXBean().getInputArguments()),
                  "gc": [b.getName() for b in mf.getGarbageCollectorMXBeans()],
                  "max_heap": jvm.java.lang.Runtime.getRuntime().maxMemory()}))
"""


@pytest.mark.spark
@pytest.mark.slow
def test_a_catalog_config_overrides_them_in_the_jvm(tmp_path):
    path = _config(tmp_path, '"spark.driver.memory" = "768m"\n'
                             '"spark.driver.extraJavaOptions" = "-XX:+UseSerialGC -XX:MaxDirectMemorySize=128m"\n')  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECAT_") or k == "LAKECAT_JARS_CACHE"}
    env.update({"LAKECAT_HOME": str(tmp_path / "home"), "LAKECAT_CATALOG": str(path), "LAKECAT_ENGINE": "in-process"})
    proc = subprocess.run([sys.executable, "-c", PRINT_JVM], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "-Xmx768m" in got["args"] and got["max_heap"] <= 768 * 1024**2
    assert "-XX:+UseSerialGC" in got["args"] and "-XX:+UseParallelGC" not in got["args"]
    assert not any(name.startswith(("G1", "PS ")) for name in got["gc"]), got["gc"]
    assert [a for a in got["args"] if "MaxDirectMemorySize" in a] == ["-XX:MaxDirectMemorySize=128m"]
    assert any(a.startswith("-Dlog4j2.configurationFile=") for a in got["args"])


DELTA_RS_ALLOCATOR = """
import os, sys, lakecat.formats.delta
import deltalake, pyarrow as pa
deltalake.write_deltalake(sys.argv[1], pa.table({"id": [1, 2]}))
print(os.environ.get("_RJEM_MALLOC_CONF"), deltalake.DeltaTable(sys.argv[1]).version())
"""


@pytest.mark.parametrize("own", [None, "narenas:1"])
def test_delta_rs_allocator_gives_freed_memory_back_and_a_users_own_setting_wins(tmp_path, own):
    from lakecat.formats.delta import ALLOCATOR_ENVIRONMENT

    assert ALLOCATOR_ENVIRONMENT == {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"} | (
        {"_RJEM_MALLOC_CONF": own} if own else {}
    )
    out = subprocess.run([sys.executable, "-c", DELTA_RS_ALLOCATOR, str(tmp_path / "t")], env=env,
                         capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    assert out.stdout.split() == [own or "dirty_decay_ms:0,muzzy_decay_ms:0", "0"]
    assert "<jemalloc>" not in out.stderr, out.stderr  # jemalloc took the settings (it names any it refuses)
