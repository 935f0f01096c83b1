"""Run a command as in a small container: ``taskset`` to a few cores and a cgroup (v1) memory limit.

    python -m benchmarks.contained --cores 1 --memory 3GiB -- python -m benchmarks --sections ingest,compact

What a container runtime does, without one: the command and everything it starts see the CPU affinity and the memory
limit lakecat sizes itself from (``lakecat doctor`` inside shows it). Needs root and a cgroup v1 memory controller
(a cgroup v2 host delegates groups through systemd: use ``systemd-run --scope -p MemoryMax=3G taskset -c 0 ...``).
Exits with the command's exit code; prints the group's peak memory and whether the kernel killed anything.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from lakecat.sizing import cgroup_dirs
from lakecat.units import parse_size


def memory_group() -> Path:
    membership = [line for line in Path("/proc/self/cgroup").read_text().splitlines() if ":memory:" in line]
    dirs = cgroup_dirs(membership, Path("/proc/self/mountinfo").read_text().splitlines())
    if not membership or not dirs or not (dirs[0] / "memory.limit_in_bytes").is_file():
        sys.exit("no cgroup v1 memory controller for this process (see --help for cgroup v2)")
    return dirs[0] / f"lakecat-bench-{uuid.uuid4().hex[:8]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cores", type=int, default=1, help="the first N CPUs of this process's affinity")
    ap.add_argument("--memory", default="3GiB", help="the memory limit, e.g. 3GiB")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("no command")
    cpus = sorted(os.sched_getaffinity(0))[: a.cores]
    group = memory_group()
    group.mkdir()
    try:
        (group / "memory.limit_in_bytes").write_text(str(parse_size(a.memory)))

        def join() -> None:  # in the child, before exec: it and everything it starts run in the group
            (group / "cgroup.procs").write_text(str(os.getpid()))
            os.sched_setaffinity(0, cpus)

        rc = subprocess.call(command, preexec_fn=join)
        peak = int((group / "memory.max_usage_in_bytes").read_text())
        oom = dict(line.split() for line in (group / "memory.oom_control").read_text().splitlines())
        print(f"contained: cpus {cpus}, limit {a.memory}, peak {peak / 2**30:.2f} GiB, "
              f"oom kills {oom.get('oom_kill', '0')}", file=sys.stderr)  # fmt: skip
    finally:
        remove_group(group)
    sys.exit(rc)


def remove_group(group: Path) -> None:
    for _ in range(50):  # the group empties once its last process is reaped
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)


if __name__ == "__main__":
    main()
