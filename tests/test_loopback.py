"""Spark started by lakecat listens on this machine only: the in-process session's JVM and the local engine bind
their driver, block-manager, UI and Spark Connect ports to loopback, unless a cluster master or the user's own settings
say otherwise."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import pytest

from lakecat.config import load_config_file, resolve_config
from lakecat.engine import is_connect
from lakecat.spark import LOOPBACK, engine_spark_conf, jvm_environment, loopback_only


def _listening(pid: int) -> list[tuple[str, int]]:
    """The (address, port) of every TCP socket process ``pid`` listens on, read from /proc (no tool needed)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("tcp", 4), ("tcp6", 16)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            hex_addr, hex_port = local.split(":")
            raw = bytes.fromhex(hex_addr)
            # /proc prints the address as 32-bit words in the host's (little-endian) order
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, width, 4))
            found.append((str(ipaddress.ip_address(raw)), int(hex_port, 16)))
    return found


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return ip.is_loopback or (
        isinstance(ip, ipaddress.IPv6Address) and bool(ip.ipv4_mapped and ip.ipv4_mapped.is_loopback)
    )


def test_the_in_process_session_listens_on_loopback_only(spark):
    if is_connect(spark):
        pytest.skip("a Spark Connect session has no JVM in this process")
    pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    sockets = _listening(pid)
    driver_port = int(spark.conf.get("spark.driver.port"))
    block_manager_port = int(spark.sparkContext._jsc.sc().env().blockManager().blockManagerId().port())
    assert {driver_port, block_manager_port} <= {port for _, port in sockets}, sockets
    assert sockets and all(_loopback(address) for address, _ in sockets), sockets
    assert spark.conf.get("spark.driver.host") == LOOPBACK


def test_the_local_engine_listens_on_loopback_only_with_its_ui_on(tmp_path):
    """The warm engine with Spark's UI on (a user's [spark.conf]): its Spark Connect, driver, block-manager and UI
    ports are all on loopback."""
    from lakecat.engine_local import LocalEngine
    from lakecat.processes import free_port

    ui_port = free_port()
    path = tmp_path / "ui.toml"
    path.write_text(f'name = "ui"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/c.db"\n'
                    f'[spark.conf]\n"spark.ui.enabled" = "true"\n"spark.ui.port" = "{ui_port}"\n')  # fmt: skip
    engine = LocalEngine(load_config_file(path), port=free_port(), data_dir=tmp_path / "engine")
    engine.start()
    try:
        sockets = _listening(engine.status()["pid"])
        ports = {port for _, port in sockets}
        assert {engine.port, ui_port} <= ports, sockets
        assert len(sockets) >= 4, sockets  # Spark Connect, UI, driver RPC, block manager
        assert all(_loopback(address) for address, _ in sockets), sockets
    finally:
        engine.stop()


def test_a_cluster_master_or_the_users_own_network_settings_are_left_alone(tmp_path, monkeypatch):
    for var in ("SPARK_LOCAL_IP", "SPARK_LOCAL_HOSTNAME"):
        monkeypatch.delenv(var, raising=False)
    local = resolve_config(None)
    assert loopback_only(local, "local[2]", environ={})
    conf = engine_spark_conf(local)
    assert conf["spark.driver.bindAddress"] == conf["spark.driver.host"] == LOOPBACK
    assert jvm_environment({}, loopback=True)["SPARK_LOCAL_IP"] == LOOPBACK
    assert jvm_environment({"SPARK_LOCAL_IP": "10.0.0.5"}, loopback=True)["SPARK_LOCAL_IP"] == "10.0.0.5"
    for master in ("spark://10.0.0.1:7077", "yarn", "k8s://https://10.0.0.1:6443"):
        assert not loopback_only(local, master, environ={})
    assert not loopback_only(local, "local[2]", environ={"SPARK_LOCAL_IP": "10.0.0.5"})
    path = tmp_path / "own.toml"
    path.write_text(f'name = "own"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/c.db"\n'
                    '[spark.conf]\n"spark.driver.host" = "10.0.0.5"\n')  # fmt: skip
    own = load_config_file(path)
    assert not loopback_only(own, "local[2]", environ={})
    conf = engine_spark_conf(own)
    assert conf["spark.driver.host"] == "10.0.0.5" and "spark.driver.bindAddress" not in conf
