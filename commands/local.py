"""`lakecat local kafka|rest|engine start|stop|status`: a real Kafka broker, a real Iceberg REST catalog server
and a warm local Spark engine, for development and tests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lakecat.local import LocalServer, is_loopback, lakecat_home, local_server

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect, connect_config
from ._output import Output, run

app = typer.Typer(
    help="Local development services (a Kafka broker, an Iceberg REST catalog server, a warm Spark engine).",
    no_args_is_help=True,
)
kafka = typer.Typer(
    help="A single-node KRaft Kafka broker from Maven Central jars (no Maven, no Docker).", no_args_is_help=True
)
app.add_typer(kafka, name="kafka")

PortOpt = Annotated[int, typer.Option("--port", help="Port the broker listens on (127.0.0.1).")]
DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="Broker state and logs (default: $LAKECAT_HOME/kafka).")
]


class _Status(dict):  # type: ignore[type-arg]
    def to_dict(self) -> dict[str, Any]:
        return dict(self)


def _broker(port: int, data_dir: Path | None):  # type: ignore[no-untyped-def]
    from lakecat.local import LocalKafka

    return LocalKafka(data_dir=(data_dir or lakecat_home() / "kafka").expanduser(), port=port)


@kafka.command("start")
def start(
    port: PortOpt = 9092, data_dir: DataDirOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False
) -> None:
    """Start the broker (or find it running) and wait until it accepts connections."""
    out = Output(json_, verbose)

    def api() -> _Status:
        broker = _broker(port, data_dir)
        with out.status("starting Kafka (a first start fetches the broker jars into lakecat's jar cache)"):
            bootstrap = broker.start()
        return _Status(broker.status(), bootstrap=bootstrap)

    run(
        out,
        api,
        lambda c, s: c.print(
            f"Kafka {s['version']} listening on {s['bootstrap']} (pid {s['pid']}, data in {s['data_dir']})"
        ),
    )


@kafka.command("stop")
def stop(
    port: PortOpt = 9092, data_dir: DataDirOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False
) -> None:
    """Stop the broker cleanly."""
    out = Output(json_, verbose)

    def api() -> _Status:
        broker = _broker(port, data_dir)
        return _Status(stopped=broker.stop(), **broker.status())

    run(out, api, lambda c, s: c.print("Kafka stopped" if s["stopped"] else "Kafka was not running"))


@kafka.command("status")
def status(
    port: PortOpt = 9092, data_dir: DataDirOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False
) -> None:
    """Tell whether the broker runs and where it listens."""
    out = Output(json_, verbose)
    run(
        out,
        lambda: _Status(_broker(port, data_dir).status()),
        lambda c, s: c.print(
            f"Kafka running on {s['bootstrap']} (pid {s['pid']})" if s["running"] else "Kafka is not running"
        ),
    )


rest = typer.Typer(
    help="Apache Iceberg's REST catalog server over this catalog's metastore, from Maven Central jars "
    "(development only: no authentication).",
    no_args_is_help=True,
)
app.add_typer(rest, name="rest")

RestPortOpt = Annotated[int, typer.Option("--port", help="Port the REST catalog server listens on.")]
RestDataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="Server state and log (default: $LAKECAT_HOME/rest).")
]
RestHostOpt = Annotated[
    str,
    typer.Option("--host", help="Address to listen on. The server has no authentication: anything but loopback "
                                "lets whoever reaches it create and drop the catalog's tables."),
]  # fmt: skip


def _rest_server(port: int, data_dir: Path | None, catalog: str | None = None, *, host: str = "127.0.0.1",
                 serve: bool = False) -> LocalServer:  # fmt: skip
    return local_server("rest")(data_dir=(data_dir or lakecat_home() / "rest").expanduser(), port=port, host=host,
                                catalog=connect(catalog) if serve else None)  # fmt: skip


def exposure_warning(host: str) -> str:
    """What to tell a user whose REST catalog server listens beyond loopback."""
    return (f"warning: the REST catalog server listens on {host} with no authentication: whoever can reach this "
            "machine can create and drop the catalog's tables; development only (in production run a REST catalog "
            "with authentication, e.g. Apache Polaris or Lakekeeper)")  # fmt: skip


@rest.command("start")
def rest_start(port: RestPortOpt = 8181, data_dir: RestDataDirOpt = None, catalog: CatalogOpt = None,
               host: RestHostOpt = "127.0.0.1", json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:  # fmt: skip
    """Start the REST catalog server over the catalog's metastore (or find it running) and wait until it answers.

    It listens on 127.0.0.1 unless --host names another address (then it warns: the server has no authentication).
    """
    out = Output(json_, verbose)

    def api() -> _Status:
        server = _rest_server(port, data_dir, catalog, host=host, serve=True)
        with out.status("starting the REST catalog server (a first start fetches its jars into lakecat's jar cache)"):
            uri = server.start()
        status = _Status(server.status(), uri=uri)
        if status.get("host") and not is_loopback(status["host"]):
            out.err.print(exposure_warning(status["host"]), markup=False, highlight=False)
        return status

    run(out, api, lambda c, s: c.print(f"Iceberg REST catalog {s['version']} serving catalog {s['catalog']} on {s['uri']} "
                                       f"(pid {s['pid']}, development only: no authentication)"))  # fmt: skip


@rest.command("stop")
def rest_stop(port: RestPortOpt = 8181, data_dir: RestDataDirOpt = None, json_: JsonOpt = False,
              verbose: VerboseOpt = False) -> None:  # fmt: skip
    """Stop the REST catalog server cleanly."""
    out = Output(json_, verbose)

    def api() -> _Status:
        server = _rest_server(port, data_dir)
        return _Status(stopped=server.stop(), **server.status())

    run(
        out,
        api,
        lambda c, s: c.print("REST catalog server stopped" if s["stopped"] else "REST catalog server was not running"),
    )


@rest.command("status")
def rest_status(port: RestPortOpt = 8181, data_dir: RestDataDirOpt = None, json_: JsonOpt = False,
                verbose: VerboseOpt = False) -> None:  # fmt: skip
    """Tell whether the REST catalog server runs, where, and which catalog it serves."""
    out = Output(json_, verbose)
    run(
        out,
        lambda: _Status(_rest_server(port, data_dir).status()),
        lambda c, s: c.print(
            f"REST catalog server serving {s['catalog']} on {s['uri']} (pid {s['pid']})"
            if s["running"]
            else "REST catalog server is not running"
        ),
    )


engine = typer.Typer(
    help="A warm local Spark engine (a Spark Connect server with lakecat's jars and catalog settings): while it runs, "
    "Spark-path commands on its catalog use it instead of starting a JVM each.",
    no_args_is_help=True,
)
app.add_typer(engine, name="engine")
EnginePortOpt = Annotated[int, typer.Option("--port", help="Port the engine listens on (127.0.0.1).")]


def _engine(catalog: str | None, port: int = 15002):  # type: ignore[no-untyped-def]
    from lakecat.local import LocalEngine

    return LocalEngine(connect_config(catalog), port=port)


@engine.command("start")
def engine_start(port: EnginePortOpt = 15002, catalog: CatalogOpt = None, json_: JsonOpt = False,
                 verbose: VerboseOpt = False) -> None:  # fmt: skip
    """Start the engine for the catalog (or find it running) and wait until it accepts connections."""
    out = Output(json_, verbose)

    def api() -> _Status:
        server = _engine(catalog, port)
        with out.status("starting the Spark engine"):
            server.start()
        return _Status(server.status())

    run(
        out,
        api,
        lambda c, s: c.print(
            f"Spark engine listening on {s['url']} for catalog {s['catalog']} (pid {s['pid']}, log {s['log']})"
        ),
    )


@engine.command("stop")
def engine_stop(catalog: CatalogOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """Stop the engine cleanly."""
    out = Output(json_, verbose)

    def api() -> _Status:
        server = _engine(catalog)
        return _Status(stopped=server.stop(), **server.status())

    run(out, api, lambda c, s: c.print("Spark engine stopped" if s["stopped"] else "Spark engine was not running"))


@engine.command("status")
def engine_status(catalog: CatalogOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """Tell whether the engine runs, where, and for which catalog."""
    out = Output(json_, verbose)
    run(
        out,
        lambda: _Status(_engine(catalog).status()),
        lambda c, s: c.print(
            f"Spark engine running on {s['url']} for catalog {s['catalog']} (pid {s['pid']}"
            + (f"; stops after {s['idle_stop'] / 60:g} min idle)" if s["idle_stop"] else ")")
            if s["running"]
            else "Spark engine is not running"
        ),
    )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="local")
