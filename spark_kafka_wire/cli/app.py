"""The ``kafkawire`` command: global options, the commands, and how failures end.

The group imports no command module until a command runs (``commands``): ``kafkawire --help``
and ``--version`` load click and this package's lightest modules only.

A failure the package knows (a ``KafkaWireError``: unreachable broker, unknown topic, refused
login, bad option) ends the command with one line on stderr and a non-zero status: 2 for a
configuration the command cannot use (as click does for bad usage), 1 for everything else.
``--debug`` prints the traceback as well, and the package's INFO log lines. Messages are the
package's own, which never carry a password or a key.
"""

from __future__ import annotations

import importlib
import logging
import traceback
from typing import Any

import click

from spark_kafka_wire import __version__
from spark_kafka_wire.cli.commands import BOOTSTRAP_ENV, COMMANDS, OUTPUTS

EXIT_FAILURE = 1
EXIT_CONFIGURATION = 2  # click's status for bad usage: a bad option is the same mistake
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader (``| head``) went away


class KafkawireGroup(click.Group):
    """Commands from ``commands.COMMANDS``, imported when used; the package's errors turned
    into one line and an exit status (see the module doc)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return super().get_command(ctx, cmd_name)
        command = getattr(importlib.import_module(entry.module), entry.attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{entry.module}.{entry.attribute} is not a click command")
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:  # ``kafkawire -C -t orders``: kcat's habits
            raise with_kcat_equivalent(exc) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # the table's summaries, so that listing the commands imports none of them
        rows = [(name, COMMANDS[name].summary if name in COMMANDS
                 else self.commands[name].get_short_help_str())
                for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        # imported here, not at the top: only a command that runs needs them
        from spark_kafka_wire.cli.output import EchoHandler  # noqa: PLC0415
        from spark_kafka_wire.client.errors import ConfigurationError  # noqa: PLC0415
        from spark_kafka_wire.protocol.errors import KafkaWireError  # noqa: PLC0415

        debug = bool(ctx.params.get("debug"))
        handler = EchoHandler(logging.INFO if debug else logging.WARNING)
        package_log = logging.getLogger("spark_kafka_wire")
        saved_level = package_log.level
        package_log.addHandler(handler)
        package_log.setLevel(handler.level)
        # kazoo logs every failed ZooKeeper connection attempt (Python's last-resort handler
        # prints them): the one error line says what failed; --debug shows its log as ours
        kazoo_log = logging.getLogger("kazoo")
        saved_kazoo = (kazoo_log.level, kazoo_log.propagate)
        kazoo_log.setLevel(logging.INFO if debug else logging.CRITICAL + 1)
        kazoo_log.propagate = False
        if debug:
            kazoo_log.addHandler(handler)
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as exc:  # a command's options: ``kafkawire consume -J``
            raise with_kcat_equivalent(exc) from None
        except KafkaWireError as exc:
            self._fail(ctx, exc, debug,
                       EXIT_CONFIGURATION if isinstance(exc, ConfigurationError) else EXIT_FAILURE)
        except KeyboardInterrupt:
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            ctx.exit(EXIT_BROKEN_PIPE)
        finally:
            package_log.removeHandler(handler)
            package_log.setLevel(saved_level)
            kazoo_log.removeHandler(handler)
            kazoo_log.setLevel(saved_kazoo[0])
            kazoo_log.propagate = saved_kazoo[1]

    @staticmethod
    def _fail(ctx: click.Context, exc: BaseException, debug: bool, code: int) -> None:
        from spark_kafka_wire.cli.output import error_line  # noqa: PLC0415

        if debug:
            click.echo("".join(traceback.format_exception(exc)).rstrip(), err=True)
        click.echo(error_line(_for_the_command_line(ctx, exc)), err=True)
        ctx.exit(code)


def _for_the_command_line(ctx: click.Context, exc: BaseException) -> BaseException:
    """``exc`` as the CLI's user should read it: where a message tells a query's author to
    check an option (``kafka.bootstrap.servers``), the flag, variable or file that gave the
    value here."""
    from spark_kafka_wire.client.errors import NoBrokersAvailableError  # noqa: PLC0415

    if isinstance(exc, NoBrokersAvailableError):
        return exc.naming(_servers_given_by(ctx.find_root()))
    return exc


def _servers_given_by(root: click.Context) -> str:
    """Where this run's bootstrap servers came from, in the words of the CLI's options."""
    from click.core import ParameterSource  # noqa: PLC0415

    flag = "--bootstrap-server (-b)"
    overridden = "which -b HOST:PORT overrides"
    source = root.get_parameter_source("bootstrap_server")
    if source is ParameterSource.ENVIRONMENT:
        return f"{BOOTSTRAP_ENV} ({overridden})"
    if source is ParameterSource.COMMANDLINE:
        return flag
    given = root.obj
    zookeeper = getattr(given, "zookeeper", None)
    if zookeeper:
        return f"the brokers registered in the ZooKeeper of --zookeeper {zookeeper}"
    config = getattr(given, "command_config", None)
    if config:
        return f"bootstrap.servers in {config} ({overridden})"
    return flag


def with_kcat_equivalent(exc: click.NoSuchOption) -> click.NoSuchOption:
    """click's error for an unknown option, with what does it in kafkawire when it is one of
    kcat's (``cli/kcat_habits.py``)."""
    from spark_kafka_wire.cli.kcat_habits import kcat_equivalent  # noqa: PLC0415

    equivalent = kcat_equivalent(exc.option_name)
    if equivalent is None:
        return exc
    return click.NoSuchOption(exc.option_name, f"{exc.message} {equivalent}.", ctx=exc.ctx)


@click.group(cls=KafkawireGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", "-b", metavar="HOST:PORT[,HOST:PORT]",
              envvar=BOOTSTRAP_ENV, show_envvar=True,
              help="Brokers to start from [default: bootstrap.servers of --command-config].")
@click.option("--command-config", "-F", metavar="FILE",
              type=click.Path(exists=True, dir_okay=False),
              help="Kafka client .properties (security.protocol, ssl.*, sasl.*, ...), as the "
              "kafkaConfigFile option reads it: ${env:NAME}, ${file:PATH:KEY} and "
              "${dir:PATH:FILE} through the providers it declares (config.providers).")
@click.option("--zookeeper", metavar="HOST:PORT[,HOST:PORT][/CHROOT]", default=None,
              help="Find the brokers registered in this ZooKeeper (zookeeper.connect, as in "
              "queries and the brokers' own config) instead of --bootstrap-server; the way to "
              "reach a Kafka 0.7 cluster [default: zookeeper.connect of --command-config].")
@click.option("--output", type=click.Choice(OUTPUTS), default="table", show_default=True,
              help="json: every table as JSON lines, one object per row keyed by column.")
@click.option("--debug", is_flag=True, help="Show tracebacks and the client's log.")
@click.version_option(__version__, "--version", "-V", prog_name="kafkawire",
                      message="%(prog)s (spark-kafka-wire) %(version)s")
@click.pass_context
def cli(ctx: click.Context, bootstrap_server: str | None, command_config: str | None,
        zookeeper: str | None, output: str, debug: bool) -> None:
    """Look at Kafka topics and write to them from the shell, over kafkawire's own Kafka
    client (no Spark, no JVM)."""
    from spark_kafka_wire.cli.settings import GlobalOptions  # noqa: PLC0415 (see module doc)

    ctx.obj = GlobalOptions(bootstrap_server, command_config, debug, zookeeper)


def main() -> None:
    """The console script's entry point (``kafkawire``; ``python -m spark_kafka_wire``)."""
    cli(prog_name="kafkawire")
