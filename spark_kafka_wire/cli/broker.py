"""``kafkawire broker``: a local Kafka-compatible broker in the foreground, for trying
kafkawire (and any Kafka client) without a cluster.

It is the broker ``make demo`` and the tests start (Tansu, ``cli/local_broker.py``), printed
with the address clients use, and stopped by Ctrl-C (or SIGTERM), which ends the command with
status 0. If Tansu itself exits, the command says so with the end of its log and status 1.

A storage URL may hold a password, and a command line is readable by every local user
(``ps``): ``--storage-engine`` falls back to the environment variable STORAGE_ENV, which only
this user can read (issue 45).
"""

from __future__ import annotations

import re
import time

import click

from spark_kafka_wire.cli.commands import BOOTSTRAP_ENV, summary
from spark_kafka_wire.cli.local_broker import MEMORY_STORAGE, LocalBroker, shown_storage
from spark_kafka_wire.cli.output import error_line
from spark_kafka_wire.cli.signals import stopped_by_signals
from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError

#: Kafka's own default port, which clients try when given only a host.
DEFAULT_PORT = 9092
#: How much of Tansu's log an unexpected exit shows.
LOG_TAIL_BYTES = 2000
#: The environment variable ``--storage-engine`` falls back to (a URL with a password stays
#: out of the process list).
STORAGE_ENV = "KAFKAWIRE_STORAGE_ENGINE"


def _last_line(path: str, storage_engine: str) -> str:
    """The last line of Tansu's log (its error, when it exits), without colour codes and
    without the storage URL's password (Tansu logs the URL)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
            lines = f.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return "(no log)"
    if not lines:
        return "(empty)"
    line = re.sub(r"\x1b\[[0-9;]*m", "", lines[-1])
    return line.replace(storage_engine, shown_storage(storage_engine))


@click.command(short_help=summary("broker"))
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=DEFAULT_PORT,
              show_default=True, help="Port to listen on; 0 picks a free one.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on and to advertise to clients.")
@click.option("--storage-engine", metavar="URL", default=MEMORY_STORAGE, show_default=True,
              envvar=STORAGE_ENV, show_envvar=True,
              help="Tansu's storage: memory://tansu/ (lost when the broker stops), "
              "s3://BUCKET/ (with the AWS_* environment), or any URL the installed Tansu "
              f"takes. A URL with a password: give it in {STORAGE_ENV}, which other users "
              "cannot read, unlike the command line.")
def broker(port: int, host: str, storage_engine: str) -> None:
    """Run a local Kafka-compatible broker (Tansu, the broker of `make demo`) in the
    foreground until Ctrl-C.

    \b
    Then, in another shell:
      export KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092
      kafkawire topics create orders --partitions 3
    """
    local = LocalBroker(port or None, host=host, storage_engine=storage_engine)
    try:
        local.start()
    except RuntimeError as exc:
        raise ConfigurationError.of(
            CONFIGURATION, "LOCAL_BROKER_NOT_STARTED", exc=str(exc),
            log_path=_last_line(local.log_path, storage_engine)) from None
    # Ctrl-C and SIGTERM stop it, a background job (`kafkawire broker &`) too
    memory = storage_engine.startswith("memory:")
    with stopped_by_signals():
        try:
            click.echo(f"kafkawire broker: Tansu listening on {local.bootstrap_servers} "
                       f"(storage {shown_storage(storage_engine)}"
                       f"{': records are lost when it stops' if memory else ''}; log "
                       f"{local.log_path})")
            click.echo(f"  export {BOOTSTRAP_ENV}={local.bootstrap_servers}")
            click.echo("Press Ctrl-C to stop it.")
            process = local.process
            assert process is not None
            while process.poll() is None:
                time.sleep(0.2)
            click.echo(error_line(RuntimeError(
                f"the broker exited with status {process.returncode}; its log ends: "
                f"{_last_line(local.log_path, storage_engine)}")), err=True)
            raise click.exceptions.Exit(1)
        except KeyboardInterrupt:
            local.stop()
            click.echo("kafkawire broker: stopped")
        finally:
            local.stop()
