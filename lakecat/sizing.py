"""How large lakecat's Spark driver is: sized at every start for the cores and memory this process may use.

Counted as the JVM's container support counts them: the cores are the CPUs of the process's affinity (``taskset``, a
container's cpuset), further limited by a cgroup CPU quota, rounded up (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``); the memory is the lowest cgroup memory limit of the process's cgroup and its ancestors (v2
``memory.max``, v1 ``memory.limit_in_bytes``), else the machine's physical memory. ``plan`` is a pure function of
what was read, so that tests give it simulated machines; ``read_machine`` reads this one.

A catalog config's ``[spark] master`` and ``[spark.conf]`` win over the environment (``LAKECAT_SPARK_MASTER``,
Spark's own ``SPARK_DRIVER_MEMORY``), which wins over the machine.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError

MiB = 1 << 20
GiB = 1 << 30
#: Memory the heap leaves to the rest of the process tree: Python (pyspark, pyarrow, delta-rs) and the JVM's own
#: (class metadata, compiled code, threads, direct buffers, the collector's tables).
RESERVED = 1 * GiB
#: The heap's share of what remains: the parallel collector fills the heap to its limit before a full collection, so
#: the limit is most of the JVM's peak, and the memory outside the heap grows with the work too.
HEAP_SHARE = 0.5
#: Spark refuses a driver heap below about 450 MiB (1.5 times the 300 MiB it reserves for itself).
HEAP_FLOOR = 512 * MiB
#: Below 32 GiB the JVM keeps object pointers compressed (4 bytes instead of 8); above, a larger heap holds less.
HEAP_CEILING = 31 * GiB
#: Spark's own heap when the machine's memory cannot be read.
SPARK_DRIVER_MEMORY = "1g"
#: Spark's own shuffle partitions, which lakecat leaves to a cluster master.
SPARK_SHUFFLE_PARTITIONS = 200
#: The young generation's share of the heap (1 of NewRatio + 1): a small one leaves the old generation room for what a
#: job keeps, e.g. the keys of a --dedupe-key ingest.
NEW_RATIO = 9
MASTER_ENV = "LAKECAT_SPARK_MASTER"
MEMORY_ENV = "SPARK_DRIVER_MEMORY"
MEMORY_KEY = "spark.driver.memory"
PARTITIONS_KEY = "spark.sql.shuffle.partitions"
PARALLELISM_KEY = "spark.default.parallelism"
#: Where each value of a plan came from.
SOURCES = ("machine", "default", "config", "environment")


@dataclass(frozen=True)
class Machine:
    """What this process may use, as the OS reports it (``read_machine``) or as a test describes it."""

    #: The CPUs of the process's affinity mask.
    cpus: int
    #: Physical memory in bytes; None where the OS does not say.
    memory: int | None
    #: Cgroup files' contents by file name (``cpu.max``, ``memory.limit_in_bytes``, ...): one entry a level, the
    #: process's own cgroup first, then its ancestors'. ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us`` come in pairs.
    cgroup: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class SparkSizing:
    """The Spark driver lakecat starts: its master, cores, heap and partitions, and where each came from."""

    master: str
    #: The cores of a local master (the driver is the executor too); None for a cluster master.
    cores: int | None
    driver_memory: str
    driver_memory_bytes: int
    shuffle_partitions: int
    default_parallelism: int | None
    #: lakecat's JVM options that size memory, relative to the heap; none when the user sized the memory.
    java_options: tuple[str, ...]
    #: ``master``, ``cores``, ``driver_memory``, ``driver_memory_bytes``, ``shuffle_partitions`` -> one of ``SOURCES``.
    sources: dict[str, str]
    #: The memory this process may use (a cgroup limit, else physical memory); None where it cannot be read.
    memory: int | None = None

    def spark_conf(self) -> dict[str, str]:
        """The Spark settings of this plan (a catalog config's ``[spark.conf]`` is applied after them)."""
        conf = {
            MEMORY_KEY: self.driver_memory,
            # Partitions follow the cores; adaptive execution merges a shuffle's small partitions after the fact.
            "spark.sql.adaptive.enabled": "true",
            "spark.sql.adaptive.coalescePartitions.enabled": "true",
        }
        if self.cores is not None:  # a cluster's own defaults count its executors' cores
            conf[PARTITIONS_KEY] = str(self.shuffle_partitions)
            conf[PARALLELISM_KEY] = str(self.default_parallelism or self.cores)
        return conf


def cpu_quota(cgroup: Mapping[str, Sequence[str]]) -> int | None:
    """The cores the strictest cgroup CPU quota allows, rounded up as the JVM does; None without a quota."""
    pairs = [
        tuple((text.split() + ["100000"])[:2]) for text in cgroup.get("cpu.max", ())
    ]  # "max 100000", "50000 100000"
    pairs += zip(cgroup.get("cpu.cfs_quota_us", ()), cgroup.get("cpu.cfs_period_us", ()), strict=False)  # "-1": none
    counts = []
    for quota, period in pairs:
        try:
            q, p = int(quota), int(period)
        except ValueError:
            continue
        if q > 0 and p > 0:
            counts.append(math.ceil(q / p))
    return min(counts) if counts else None


def memory_limit(cgroup: Mapping[str, Sequence[str]], physical: int | None) -> int | None:
    """The strictest cgroup memory limit below the machine's memory; None without one."""
    limits = [
        int(t) for name in ("memory.max", "memory.limit_in_bytes") for t in cgroup.get(name, ()) if t.strip().isdigit()
    ]
    # v1 writes "no limit" as the largest page count it can (about 2^63); v2 writes "max"
    limits = [n for n in limits if n < (physical if physical is not None else 1 << 62)]
    return min(limits) if limits else None


def usable_cores(machine: Machine) -> int:
    quota = cpu_quota(machine.cgroup)
    return max(1, min(machine.cpus, quota) if quota is not None else machine.cpus)


def usable_memory(machine: Machine) -> int | None:
    limit = memory_limit(machine.cgroup, machine.memory)
    return limit if limit is not None else machine.memory


def heap_for(memory: int) -> int:
    """The driver heap for ``memory`` bytes: ``HEAP_SHARE`` of what ``RESERVED`` leaves, floored and capped; whole GiB
    from 4 GiB on, else 64 MiB steps."""
    heap = min(max(int((memory - RESERVED) * HEAP_SHARE), HEAP_FLOOR), HEAP_CEILING)
    step = GiB if heap >= 4 * GiB else 64 * MiB
    return max(heap // step * step, HEAP_FLOOR)


def spark_size(n: int) -> str:
    """``n`` bytes as Spark reads a size: ``6g``, ``1536m``."""
    return f"{n // GiB}g" if n % GiB == 0 else f"{n // MiB}m"


_SIZE = re.compile(r"(\d+)\s*([kmgtp]?)(b?)", re.IGNORECASE)


def size_bytes(text: str, *, where: str) -> int:
    """A Spark memory size in bytes, read as Spark reads ``spark.driver.memory`` (a bare number is MiB)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise ConfigError(f"{where}: {text!r} is not a memory size like 4g or 1536m")
    number, unit, b = m.groups()
    if not unit and not b:
        unit = "m"
    return int(number) << (10 * "bkmgtp".index(unit.lower() or "b"))


_LOCAL = re.compile(r"local(?:\[(\*|\d+)(?:\s*,\s*\d+)?\])?")


def local_cores(master: str, machine_cores: int) -> int | None:
    """The cores of a local master (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``); None for any other."""
    m = _LOCAL.fullmatch(master.strip())
    if not m:
        return None
    n = m.group(1)
    return 1 if n is None else machine_cores if n == "*" else max(1, int(n))


def memory_java_options(heap: int) -> tuple[str, ...]:
    """lakecat's JVM options that size memory, relative to the heap."""
    return (
        f"-XX:NewRatio={NEW_RATIO}",
        # NIO and Netty off-heap buffers (the JVM's default: as large as the heap)
        f"-XX:MaxDirectMemorySize={heap // 2 // MiB}m",
    )


def plan(
    machine: Machine,
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> SparkSizing:
    """Size the driver for ``machine``: ``master`` is the catalog config's ``[spark] master`` (None when it names
    none), ``conf`` its ``[spark.conf]``, ``env`` the environment (default: this process's)."""
    conf = conf or {}
    env = os.environ if env is None else env
    machine_cores = usable_cores(machine)
    master, source = _master(master, env, machine_cores)
    sources = {"master": source}
    cores = local_cores(master, machine_cores)
    sources["cores"] = "machine" if master == "local[*]" else source
    memory = usable_memory(machine)
    if MEMORY_KEY in conf:
        given, sources["driver_memory"] = conf[MEMORY_KEY], "config"
    elif env.get(MEMORY_ENV, "").strip():
        given, sources["driver_memory"] = env[MEMORY_ENV], "environment"
    elif memory is not None:
        given, sources["driver_memory"] = spark_size(heap_for(memory)), "machine"
    else:
        given, sources["driver_memory"] = SPARK_DRIVER_MEMORY, "default"
    heap = size_bytes(given, where=f"{MEMORY_KEY} ({sources['driver_memory']})")
    sources["driver_memory_bytes"] = sources["driver_memory"]
    if PARTITIONS_KEY in conf:
        partitions, sources["shuffle_partitions"] = _count(conf[PARTITIONS_KEY], PARTITIONS_KEY), "config"
    elif cores is not None:
        partitions, sources["shuffle_partitions"] = cores, sources["cores"]
    else:
        partitions, sources["shuffle_partitions"] = SPARK_SHUFFLE_PARTITIONS, "default"
    parallelism = _count(conf[PARALLELISM_KEY], PARALLELISM_KEY) if PARALLELISM_KEY in conf else cores
    user_sized = sources["driver_memory"] in ("config", "environment")
    return SparkSizing(master=master, cores=cores, driver_memory=given.strip(), driver_memory_bytes=heap,
                       shuffle_partitions=partitions, default_parallelism=parallelism,
                       java_options=() if user_sized else memory_java_options(heap), sources=sources, memory=memory)  # fmt: skip


def _master(master: str | None, env: Mapping[str, str], machine_cores: int) -> tuple[str, str]:
    """The master and its source: the config's, else ``LAKECAT_SPARK_MASTER``, else ``local[N]`` for the machine."""
    if master and master.strip():
        return master.strip(), "config"
    if env.get(MASTER_ENV, "").strip():
        return env[MASTER_ENV].strip(), "environment"
    return f"local[{machine_cores}]", "machine"


def _count(text: str, key: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"[spark.conf] {key} must be a whole number, not {text!r}") from None


_CGROUP_FILES = ("cpu.max", "memory.max", "memory.limit_in_bytes")


def read_machine() -> Machine:
    """This process's affinity, the machine's physical memory and the limits of the cgroups it runs in."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    try:
        memory: int | None = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        memory = None
    return Machine(cpus=cpus, memory=memory, cgroup=read_cgroup())


def read_cgroup(proc: Path = Path("/proc/self")) -> dict[str, list[str]]:
    """The limit files of this process's cgroups (v1 and v2), its own cgroup first, then its ancestors'."""
    try:
        membership = (proc / "cgroup").read_text().splitlines()
        mounts = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return {}
    found: dict[str, list[str]] = {}
    for directory in cgroup_dirs(membership, mounts):
        for name in _CGROUP_FILES:
            text = _read(directory / name)
            if text is not None:
                found.setdefault(name, []).append(text)
        quota, period = _read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")
        if quota is not None and period is not None:
            found.setdefault("cpu.cfs_quota_us", []).append(quota)
            found.setdefault("cpu.cfs_period_us", []).append(period)
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cgroup_dirs(membership: Sequence[str], mounts: Sequence[str]) -> list[Path]:
    """The directories of this process's cpu and memory cgroups (v1) and its v2 cgroup, each followed by its
    ancestors' up to the mount, from ``/proc/self/cgroup`` and ``/proc/self/mountinfo`` lines."""
    paths: dict[str, str] = {}  # controller ("" for v2) -> the process's cgroup
    for line in membership:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                paths[controller] = parts[2]
    dirs: list[Path] = []
    for line in mounts:
        fields = line.split()
        if "-" not in fields[5:]:
            continue
        sep = fields.index("-", 5)
        root, point, fstype, options = fields[3], fields[4], fields[sep + 1], fields[sep + 3].split(",")
        if fstype == "cgroup2":
            key: str | None = ""
        elif fstype == "cgroup":
            key = next((c for c in ("cpu", "memory") if c in options), None)
        else:
            continue
        if key is None or key not in paths:
            continue
        # A container's mount shows its own cgroup as the root: the process's path is then relative to it, or is it.
        path = paths[key]
        relative = path[len(root) :] if path.startswith(root) else ""
        base = Path(point)
        directory = base / relative.strip("/")
        while True:
            dirs.append(directory)
            if directory == base or base not in directory.parents:
                break
            directory = directory.parent
    return dirs


def this_machine(*, master: str | None, conf: Mapping[str, str]) -> SparkSizing:
    """``plan`` for this machine and this process's environment."""
    return plan(read_machine(), master=master, conf=conf, env=os.environ)


def this_master(master: str | None) -> str:
    """The master ``plan`` gives on this machine, without reading the rest of it."""
    return _master(master, os.environ, usable_cores(read_machine()))[0]
