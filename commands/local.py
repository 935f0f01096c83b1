"""`lakecat local kafka|engine start|stop|status`: a real single-node KRaft broker, a warm local Spark engine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lakecat.config import lakecat_home

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect_config
from ._output import Output, run

app = typer.Typer(help="Local development services (a Kafka broker, a warm Spark engine).", no_args_is_help=True)
kafka = typer.Typer(help="A single-node KRaft Kafka broker from Maven Central jars (no Maven, no Docker).", no_args_is_help=True)
app.add_typer(kafka, name="kafka")

PortOpt = Annotated[int, typer.Option("--port", help="Port the broker listens on (127.0.0.1).")]
DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="Broker state and logs (default: $LAKECAT_HOME/kafka).")
]


class _Status(dict):  # type: ignore[type-arg]
    def to_dict(self) -> dict[str, Any]:
        return dict(self)


def _broker(port: int, data_dir: Path | None):  # type: ignore[no-untyped-def]
    from lakecat.kafka_local import LocalKafka

    return LocalKafka(data_dir=(data_dir or lakecat_home() / "kafka").expanduser(), port=port)


@kafka.command("start")
def start(port: PortOpt = 9092, data_dir: DataDirOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """Start the broker (or find it running) and wait until it accepts connections."""
    out = Output(json_, verbose)

    def api() -> _Status:
        broker = _broker(port, data_dir)
        with out.status("starting Kafka (a first start fetches the broker jars into lakecat's jar cache)"):
            bootstrap = broker.start()
        return _Status(broker.status(), bootstrap=bootstrap)

    run(out, api, lambda c, s: c.print(f"Kafka {s['version']} listening on {s['bootstrap']} (pid {s['pid']}, data in {s['data_dir']})"))


@kafka.command("stop")
def stop(port: PortOpt = 9092, data_dir: DataDirOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """Stop the broker cleanly."""
    out = Output(json_, verbose)

    def api() -> _Status:
        broker = _broker(port, data_dir)
        return _Status(stopped=broker.stop(), **broker.status())

    run(out, api, lambda c, s: c.print("Kafka stopped" if s["stopped"] else "Kafka was not running"))


@kafka.command("status")
def status(port: PortOpt = 9092, data_dir: DataDirOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """Tell whether the broker runs and where it listens."""
    out = Output(json_, verbose)
    run(
        out,
        lambda: _Status(_broker(port, data_dir).status()),
        lambda c, s: c.print(f"Kafka running on {s['bootstrap']} (pid {s['pid']})" if s["running"] else "Kafka is not running"),
    )


engine = typer.Typer(
    help="A warm local Spark engine (a Spark Connect server with lakecat's jars and catalog settings): while it runs, "
    "Spark-path commands on its catalog use it instead of starting a JVM each.",
    no_args_is_help=True,
)
app.add_typer(engine, name="engine")
EnginePortOpt = Annotated[int, typer.Option("--port", help="Port the engine listens on (127.0.0.1).")]


def _engine(catalog: str | None, port: int = 15002):  # type: ignore[no-untyped-def]
    from lakecat.engine_local import LocalEngine

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

    run(out, api, lambda c, s: c.print(f"Spark engine listening on {s['url']} for catalog {s['catalog']} (pid {s['pid']}, log {s['log']})"))


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
        lambda c, s: c.print(f"Spark engine running on {s['url']} for catalog {s['catalog']} (pid {s['pid']})"
                             if s["running"] else "Spark engine is not running"),
    )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="local")
