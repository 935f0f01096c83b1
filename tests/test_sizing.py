"""lakecat sizes its Spark driver for the machine (lakecat.sizing): rules on simulated machines, then real starts under
``taskset`` and inside a 3 GiB memory cgroup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from benchmarks.contained import remove_group
from lakecat.errors import ConfigError
from lakecat.sizing import (
    SOURCES,
    GiB,
    Machine,
    MiB,
    cgroup_dirs,
    cpu_quota,
    heap_for,
    memory_limit,
    plan,
    read_cgroup,
    read_machine,
)

V1_UNLIMITED = "9223372036854771712"


def _plan(cpus=2, memory=16 * GiB, cgroup=None, **kwargs):
    kwargs.setdefault("env", {})
    return plan(Machine(cpus=cpus, memory=memory, cgroup=cgroup or {}), **kwargs)


@pytest.mark.parametrize(("cpus", "master"), [(1, "local[1]"), (2, "local[2]"), (16, "local[16]")])
def test_the_master_uses_the_cpus_of_the_affinity(cpus, master):
    sizing = _plan(cpus=cpus)
    assert (sizing.master, sizing.cores, sizing.shuffle_partitions, sizing.default_parallelism) == (
        master, cpus, cpus, cpus)  # fmt: skip
    assert sizing.sources["master"] == sizing.sources["cores"] == sizing.sources["shuffle_partitions"] == "machine"
    conf = sizing.spark_conf()
    assert conf["spark.sql.shuffle.partitions"] == conf["spark.default.parallelism"] == str(cpus)
    assert conf["spark.sql.adaptive.enabled"] == conf["spark.sql.adaptive.coalescePartitions.enabled"] == "true"


@pytest.mark.parametrize(
    ("cgroup", "cores"),
    [
        ({"cpu.max": ["max 100000"]}, 8),  # v2, no quota
        ({"cpu.max": ["150000 100000"]}, 2),  # 1.5 CPUs: rounded up, as the JVM counts them
        ({"cpu.max": ["50000 100000"]}, 1),
        ({"cpu.max": ["max 100000", "300000 100000"]}, 3),  # a parent's quota applies too
        ({"cpu.cfs_quota_us": ["-1"], "cpu.cfs_period_us": ["100000"]}, 8),  # v1, no quota
        ({"cpu.cfs_quota_us": ["250000"], "cpu.cfs_period_us": ["100000"]}, 3),
        ({"cpu.cfs_quota_us": ["400000", "200000"], "cpu.cfs_period_us": ["100000", "100000"]}, 2),  # the strictest
        ({"cpu.cfs_quota_us": ["1600000"], "cpu.cfs_period_us": ["100000"]}, 8),  # a quota above the affinity
    ],
)
def test_a_cgroup_cpu_quota_limits_the_cores(cgroup, cores):
    sizing = _plan(cpus=8, cgroup=cgroup)
    assert sizing.cores == cores and sizing.master == f"local[{cores}]" and sizing.shuffle_partitions == cores


def test_cpu_quota_reads_what_the_kernel_writes():
    assert cpu_quota({}) is None
    assert cpu_quota({"cpu.max": ["max"]}) is None
    assert cpu_quota({"cpu.max": ["200000"]}) == 2  # the period left out: the kernel's default
    assert cpu_quota({"cpu.cfs_quota_us": ["garbage"], "cpu.cfs_period_us": ["100000"]}) is None


@pytest.mark.parametrize(
    ("memory", "heap"),
    [
        (1 * GiB, "512m"),  # the floor: Spark's own minimum with room to spare
        (2 * GiB, "512m"),
        (3 * GiB, "1g"),  # the small profile: 1 GiB heap, 2 GiB for Python, the JVM's own and the page cache
        (4 * GiB, "1536m"),
        (8 * GiB, "3584m"),
        (16 * GiB, "7g"),  # whole GiB from 4 GiB on
        (24 * GiB, "11g"),
        (64 * GiB, "31g"),  # the ceiling: compressed object pointers
        (1024 * GiB, "31g"),
    ],
)
def test_the_heap_is_half_of_what_the_rest_leaves_with_a_floor_and_a_ceiling(memory, heap):
    sizing = _plan(memory=memory)
    assert sizing.driver_memory == heap and sizing.sources["driver_memory"] == "machine"
    assert sizing.driver_memory_bytes == heap_for(memory) and sizing.memory == memory
    assert sizing.java_options == ("-XX:NewRatio=9", f"-XX:MaxDirectMemorySize={heap_for(memory) // 2 // MiB}m")


@pytest.mark.parametrize(
    ("cgroup", "memory"),
    [
        ({"memory.max": ["3221225472"]}, 3 * GiB),  # v2
        ({"memory.max": ["max"]}, 32 * GiB),
        ({"memory.limit_in_bytes": [V1_UNLIMITED, V1_UNLIMITED]}, 32 * GiB),  # v1 writes "none" as ~2^63
        ({"memory.limit_in_bytes": ["3221225472", V1_UNLIMITED]}, 3 * GiB),
        ({"memory.limit_in_bytes": [V1_UNLIMITED, str(4 * GiB)]}, 4 * GiB),  # a parent's limit applies too
        ({"memory.limit_in_bytes": [str(64 * GiB)]}, 32 * GiB),  # a limit above the machine's memory
    ],
)
def test_a_cgroup_memory_limit_is_the_memory_this_process_may_use(cgroup, memory):
    sizing = _plan(memory=32 * GiB, cgroup=cgroup)
    assert sizing.memory == memory and sizing.driver_memory_bytes == heap_for(memory)


def test_without_the_machines_memory_spark_s_default_heap():
    sizing = _plan(memory=None)
    assert sizing.driver_memory == "1g" and sizing.sources["driver_memory"] == "default"
    assert memory_limit({"memory.limit_in_bytes": [V1_UNLIMITED]}, None) is None


def test_the_users_master_wins_config_first_then_the_environment():
    env = {"LAKECAT_SPARK_MASTER": "local[3]"}
    assert _plan(cpus=8, env=env).master == "local[3]"
    by_env = _plan(cpus=8, env=env)
    assert (by_env.cores, by_env.shuffle_partitions) == (3, 3)  # partitions follow the cores the master has
    assert by_env.sources["master"] == by_env.sources["cores"] == by_env.sources["shuffle_partitions"] == "environment"
    by_config = _plan(cpus=8, master="local[4]", env=env)
    assert (by_config.master, by_config.cores, by_config.sources["master"]) == ("local[4]", 4, "config")
    every = _plan(cpus=8, master="local[*]")
    assert (every.cores, every.sources["master"], every.sources["cores"]) == (8, "config", "machine")
    assert _plan(cpus=8, master="local").cores == 1


def test_a_cluster_master_keeps_sparks_own_partitions():
    sizing = _plan(master="spark://host:7077")
    assert (
        sizing.cores is None and sizing.shuffle_partitions == 200 and sizing.sources["shuffle_partitions"] == "default"
    )
    conf = sizing.spark_conf()
    assert "spark.sql.shuffle.partitions" not in conf and "spark.default.parallelism" not in conf
    assert conf["spark.driver.memory"] == sizing.driver_memory  # the driver runs here
    configured = _plan(master="yarn", conf={"spark.sql.shuffle.partitions": "16"})
    assert configured.shuffle_partitions == 16 and configured.sources["shuffle_partitions"] == "config"


def test_the_users_memory_wins_and_takes_lakecats_memory_sizes_away():
    by_config = _plan(conf={"spark.driver.memory": "4g"}, env={"SPARK_DRIVER_MEMORY": "2g"})
    assert (by_config.driver_memory, by_config.driver_memory_bytes) == ("4g", 4 * GiB)
    assert by_config.sources["driver_memory"] == by_config.sources["driver_memory_bytes"] == "config"
    assert by_config.java_options == ()
    by_env = _plan(env={"SPARK_DRIVER_MEMORY": "2048"})  # a bare number is MiB, as Spark reads it
    assert (by_env.driver_memory_bytes, by_env.sources["driver_memory"], by_env.java_options) == (
        2 * GiB,
        "environment",
        (),
    )
    assert _plan(conf={"spark.driver.memory": "1536mb"}).driver_memory_bytes == 1536 * MiB
    assert _plan(conf={"spark.driver.memory": "100t"}).driver_memory_bytes == 100 << 40
    with pytest.raises(ConfigError, match="spark.driver.memory"):
        _plan(conf={"spark.driver.memory": "lots"})
    with pytest.raises(ConfigError, match="spark.sql.shuffle.partitions"):
        _plan(conf={"spark.sql.shuffle.partitions": "many"})


def test_the_users_partitions_win():
    sizing = _plan(cpus=4, conf={"spark.sql.shuffle.partitions": "64", "spark.default.parallelism": "8"})
    assert (sizing.shuffle_partitions, sizing.default_parallelism, sizing.sources["shuffle_partitions"]) == (
        64,
        8,
        "config",
    )
    assert sizing.spark_conf()["spark.default.parallelism"] == "8"


def test_every_value_says_where_it_came_from():
    keys = {"master", "cores", "driver_memory", "driver_memory_bytes", "shuffle_partitions"}
    for sizing in (_plan(), _plan(memory=None, master="yarn"), _plan(conf={"spark.driver.memory": "2g"})):
        assert set(sizing.sources) == keys and set(sizing.sources.values()) <= set(SOURCES)


# /proc/self/cgroup and /proc/self/mountinfo of a cgroup v1 host (like this CI machine), a v1 container and v2.
V1_CGROUP = ["4:memory:/process_api/abc", "1:cpu:/", "0::/"]
V1_MOUNTS = [
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
    "23 1 0:21 / /proc rw - proc proc rw",
]


def test_the_cgroup_directories_of_this_process_and_its_ancestors():
    dirs = [str(d) for d in cgroup_dirs(V1_CGROUP, V1_MOUNTS)]
    assert dirs == ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/memory/process_api/abc", "/sys/fs/cgroup/memory/process_api",
                    "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified"]  # fmt: skip
    container = ["5:cpu,cpuacct:/docker/x", "4:memory:/docker/x"]  # the mounts show the container's own cgroup
    mounts = ["1 0 0:1 /docker/x /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory",
              "2 0 0:2 /docker/x /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct"]  # fmt: skip
    assert [str(d) for d in cgroup_dirs(container, mounts)] == ["/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu,cpuacct"]
    v2 = cgroup_dirs(["0::/user.slice/app"], ["9 1 0:9 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate"])
    assert [str(d) for d in v2] == ["/sys/fs/cgroup/user.slice/app", "/sys/fs/cgroup/user.slice", "/sys/fs/cgroup"]


def test_read_cgroup_reads_the_limits_along_the_hierarchy(tmp_path):
    root = tmp_path / "cgroup"
    own = root / "memory" / "outer" / "inner"
    own.mkdir(parents=True)
    (own / "memory.limit_in_bytes").write_text(V1_UNLIMITED + "\n")
    (own.parent / "memory.limit_in_bytes").write_text(f"{3 * GiB}\n")
    (root / "cpu").mkdir()
    (root / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    (root / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text("4:memory:/outer/inner\n1:cpu:/\n")
    (proc / "mountinfo").write_text(f"35 31 0:32 / {root}/memory rw - cgroup cgroup rw,memory\n"
                                    f"32 31 0:29 / {root}/cpu rw - cgroup cgroup rw,cpu\n")  # fmt: skip
    found = read_cgroup(proc)
    assert found == {"memory.limit_in_bytes": [V1_UNLIMITED, str(3 * GiB)], "cpu.cfs_quota_us": ["50000"],
                     "cpu.cfs_period_us": ["100000"]}  # fmt: skip
    sizing = plan(Machine(cpus=4, memory=32 * GiB, cgroup=found), env={})
    assert (sizing.master, sizing.driver_memory) == ("local[1]", "1g")
    assert read_cgroup(tmp_path / "nowhere") == {}


def test_this_machine_is_read():
    machine = read_machine()
    assert machine.cpus == len(os.sched_getaffinity(0)) and machine.memory and machine.memory > GiB


# Real starts: the sizing of a `lakecat` process as the machine gives it (the suite's own pins removed).
def _unpinned_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LAKECAT_SPARK_MASTER", "SPARK_DRIVER_MEMORY")}
    return {**env, "LAKECAT_HOME": str(home), "LAKECAT_ENGINE": "in-process"}


def _taskset() -> str:
    taskset = shutil.which("taskset")
    if taskset is None or 0 not in os.sched_getaffinity(0):
        pytest.skip("needs taskset (util-linux) and CPU 0 in this process's affinity")
    return taskset


def _doctor(env: dict[str, str], prefix: tuple[str, ...] = (), preexec=None) -> dict:
    proc = subprocess.run([*prefix, sys.executable, "-m", "lakecat.commands.main", "doctor", "--json"], env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=preexec)  # fmt: skip
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)["spark"]


def test_doctor_under_taskset_sizes_for_one_core_and_for_every_core_without(tmp_path):
    taskset = _taskset()
    env = _unpinned_env(tmp_path / "home")
    one = _doctor(env, (taskset, "-c", "0"))
    assert (one["master"], one["cores"], one["shuffle_partitions"]) == ("local[1]", 1, 1)
    assert set(one["sources"].values()) == {"machine"}
    every = _doctor(env)
    cores = len(os.sched_getaffinity(0))
    assert (every["master"], every["cores"], every["shuffle_partitions"]) == (f"local[{cores}]", cores, cores)
    assert every["driver_memory_bytes"] == one["driver_memory_bytes"] == read_machine_heap()
    assert f"-XX:MaxDirectMemorySize={one['driver_memory_bytes'] // 2 // MiB}m" in one["java_options"]


def read_machine_heap() -> int:
    return plan(read_machine(), env={}).driver_memory_bytes


PRINT_SESSION = """
import json, lakecat
spark = lakecat.connect().session()
jvm = spark.sparkContext._jvm
mf = jvm.java.lang.management.ManagementFactory
hotspot = mf.getPlatformMXBean(jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
print(json.dumps({"master": spark.conf.get("spark.master"), "parallelism": spark.sparkContext.defaultParallelism,
                  "partitions": spark.conf.get("spark.sql.shuffle.partitions"),
                  "processors": jvm.java.lang.Runtime.getRuntime().availableProcessors(),
                  "args": list(mf.getRuntimeMXBean().getInputArguments()),
                  "gc": sorted(b.getName() for b in mf.getGarbageCollectorMXBeans()),
                  "max_new": int(hotspot.getVMOption("MaxNewSize").getValue()),
                  "max_heap": int(hotspot.getVMOption("MaxHeapSize").getValue()),
                  "code_cache": int(hotspot.getVMOption("ReservedCodeCacheSize").getValue())}))
"""


@pytest.mark.spark
@pytest.mark.slow
def test_a_session_under_taskset_runs_on_one_core_with_lakecats_sizes(tmp_path):
    taskset = _taskset()
    proc = subprocess.run([taskset, "-c", "0", sys.executable, "-c", PRINT_SESSION], env=_unpinned_env(tmp_path / "home"),
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (got["master"], got["parallelism"], got["partitions"], got["processors"]) == ("local[1]", 1, "1", 1)
    heap = read_machine_heap()
    assert f"-Xmx{heap // GiB}g" in got["args"] or f"-Xmx{heap // MiB}m" in got["args"], got["args"]
    assert "-XX:NewRatio=9" in got["args"] and f"-XX:MaxDirectMemorySize={heap // 2 // MiB}m" in got["args"]
    assert abs(got["max_new"] - got["max_heap"] / 10) < got["max_heap"] / 100  # a tenth of the heap is young
    assert got["gc"] == ["PS MarkSweep", "PS Scavenge"]  # lakecat's collector, also where the JVM would pick Serial
    assert got["code_cache"] == 240 * MiB  # the JIT's code cache: the JVM's own default, also on one core


def _memory_cgroup() -> Path:
    """This process's cgroup v1 memory directory, where a child group may be made (root on a v1 host)."""
    if os.geteuid() != 0:
        pytest.skip("making a memory cgroup needs root")
    try:
        membership = [line for line in Path("/proc/self/cgroup").read_text().splitlines() if ":memory:" in line]
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        pytest.skip("no /proc/self/cgroup")
    dirs = cgroup_dirs(membership, mounts)
    if not membership or not dirs or not (dirs[0] / "memory.limit_in_bytes").is_file():
        pytest.skip("no cgroup v1 memory controller here (cgroup v2 hosts delegate groups through systemd)")
    return dirs[0]


@pytest.mark.spark
@pytest.mark.slow
def test_every_command_works_in_a_3_gib_cgroup_without_an_oom_kill(tmp_path):
    parent = _memory_cgroup()
    group = parent / f"lakecat-test-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
        (group / "memory.limit_in_bytes").write_text(str(3 * GiB))
    except OSError as e:
        pytest.skip(f"cannot make a memory cgroup under {parent}: {e}")
    env = _unpinned_env(tmp_path / "home")
    landing = tmp_path / "landing"
    landing.mkdir()
    for n in range(3):
        rows = (json.dumps({"id": n * 1000 + i, "region": "eu" if i % 2 else "us"}) for i in range(1000))
        (landing / f"{n}.json").write_text("\n".join(rows) + "\n")

    def join() -> None:  # in the child, before exec: the command and everything it starts run in the group
        (group / "cgroup.procs").write_text(str(os.getpid()))

    def lakecat(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "lakecat.commands.main", *args, "--json"], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=600, preexec_fn=join)  # fmt: skip
        assert proc.returncode == 0, (args, proc.returncode, proc.stderr[-2000:])
        return json.loads(proc.stdout)

    try:
        inside = _doctor(env, preexec=join)
        assert (inside["driver_memory"], inside["sources"]["driver_memory"]) == ("1g", "machine")  # the small profile
        lakecat("create", "sized.events", "--format", "iceberg", "--schema", "id BIGINT, region STRING")
        assert (
            lakecat("ingest", "sized.events", "--files", str(landing), "--file-format", "json")["rows_written"] == 3000
        )
        lakecat("compact", "sized.events")
        oom = dict(line.split() for line in (group / "memory.oom_control").read_text().splitlines())
        peak = int((group / "memory.max_usage_in_bytes").read_text())
        assert oom.get("oom_kill", "0") == "0", f"OOM kill in the group (peak {peak / GiB:.2f} GiB)"
        assert peak <= 3 * GiB
    finally:
        remove_group(group)
    outside = _doctor(env)
    assert outside["driver_memory_bytes"] > inside["driver_memory_bytes"]  # more memory outside, on this machine
    assert outside["cores"] == inside["cores"] == len(os.sched_getaffinity(0))


def test_doctor_shows_the_users_settings_and_where_they_came_from(cli, tmp_path, monkeypatch):
    conf = tmp_path / "sized.toml"
    conf.write_text(f'name = "sized"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/c.db"\n'
                    '[spark]\nmaster = "local[3]"\n[spark.conf]\n"spark.driver.memory" = "3g"\n'
                    '"spark.driver.extraJavaOptions" = "-XX:+UseSerialGC"\n')  # fmt: skip
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "5g")  # the config's own value wins, as in spark-submit
    code, out, err = cli("doctor", "--catalog", conf, "--json")
    spark = json.loads(out)["spark"]
    assert {k: spark[k] for k in ("master", "cores", "driver_memory", "driver_memory_bytes", "shuffle_partitions")} == {
        "master": "local[3]", "cores": 3, "driver_memory": "3g", "driver_memory_bytes": 3 * GiB, "shuffle_partitions": 3}  # fmt: skip
    assert set(spark["sources"].values()) == {"config"} and len(spark["sources"]) == 6
    assert spark["java_options"][-1] == "-XX:+UseSerialGC" and "-XX:+UseParallelGC" not in spark["java_options"]
    code, out, err = cli("doctor", "--catalog", conf)
    assert (
        "spark: master local[3] (config), 3 cores (config), driver memory 3g (config), 3 shuffle partitions (config)"
        in out
    )
    assert "spark java options (config): " in out and out.strip().splitlines()[-1] in (
        "all checks passed",
        "1 check failed",
    )

    monkeypatch.delenv("SPARK_DRIVER_MEMORY")
    conf.write_text(conf.read_text().replace('"3g"', '"lots"'))
    code, out, err = cli("doctor", "--catalog", conf, "--json")
    report = json.loads(out)
    assert code == 1 and report["spark"] is None
    failed = next(c for c in report["checks"] if c["name"] == "spark")
    assert not failed["ok"] and "'lots' is not a memory size" in failed["detail"]
