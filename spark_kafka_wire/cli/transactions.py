"""``kafkawire transactions``: list transactional ids, describe one, abort what a dead producer
left open (``client.transaction_states``).

An open transaction holds every read_committed reader of its partitions at its first offset
(the last stable offset) until it ends or ``transaction.timeout.ms`` passes; a job killed
between its writes and its commit leaves one (docs/exactly-once.md). ``abort`` ends it
now: InitProducerId with the id aborts it and fences the producer that held it (a producer
still running with that id fails at its next request), on any Kafka 0.11+; where the broker
offers DescribeTransactions (Kafka 3.0+) the state is shown before and after.
"""

from __future__ import annotations

import time

import click

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.output import print_table
from spark_kafka_wire.cli.settings import GlobalOptions, connected
from spark_kafka_wire.cli.times import format_ms
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer.settings import ProduceSettings
from spark_kafka_wire.client.producer.transaction_states import (
    ONGOING,
    TransactionState,
    describe_transaction,
    list_transactions,
)
from spark_kafka_wire.client.producer.transactions import init_transactions
from spark_kafka_wire.protocol.messages import DESCRIBE_TRANSACTIONS

#: States in which a transaction still holds its partitions (KIP-664's names).
OPEN_STATES = (ONGOING, "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


@click.group(short_help=summary("transactions"), invoke_without_command=True)
@click.option("--state", "states", multiple=True,
              help="With no command: only ids in this state (repeatable).")
@click.pass_context
def transactions(ctx: click.Context, states: tuple[str, ...]) -> None:
    """List transactional ids; describe one; abort the transaction a dead producer left open.

    \b
    kafkawire transactions                          every transactional id and its state
    kafkawire transactions --state Ongoing          only those with a transaction open
    kafkawire transactions describe orders-copy-job-0
    kafkawire transactions abort orders-copy-job-0
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command, states=states)


@transactions.command("list")
@click.option("--state", "states", multiple=True,
              help="Only ids in this state (repeatable): Ongoing, Empty, CompleteCommit, ...")
@click.pass_context
def list_command(ctx: click.Context, states: tuple[str, ...] = ()) -> None:
    """Every transactional id of the cluster, its producer id and state (Kafka 3.0+)."""
    g = ctx.find_object(GlobalOptions)
    assert g is not None, "the kafkawire group sets the global options"
    with connected(g.client_config(), "kafkawire transactions") as client:
        found = list_transactions(client, list(states))
    print_table(("transactional id", "producer id", "state", "coordinator"),
                [(t.transactional_id, t.producer_id, t.state, t.coordinator) for t in found])


def show(state: TransactionState, title: str) -> None:
    open_since = format_ms(state.start_time_ms) if state.start_time_ms >= 0 else None
    print_table(("transactional id", "state", "producer id", "epoch", "timeout ms",
                 "open since", "partitions"),
                [(state.transactional_id, state.state, state.producer_id, state.producer_epoch,
                  state.timeout_ms, open_since,
                  ", ".join(f"{t}-{p}" for t, p in state.partitions) or None)],
                title=title)


def can_describe(client: KafkaClient) -> bool:
    return DESCRIBE_TRANSACTIONS.key in client.any_connection().api_versions


@transactions.command("describe")
@click.argument("transactional_id")
@click.pass_obj
def describe(g: GlobalOptions, transactional_id: str) -> None:
    """The state of TRANSACTIONAL_ID: open or not, since when, on which partitions."""
    with connected(g.client_config(), "kafkawire transactions describe") as client:
        state = describe_transaction(client, transactional_id)
    show(state, f"transactional id {transactional_id} at {state.coordinator}")


@transactions.command("abort")
@click.argument("transactional_id", required=False)
@click.option("--transactional-id", "option_id", metavar="ID", default=None,
              help="The transactional id (or give it as the argument).")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=30.0,
              show_default=True,
              help="Seconds to wait for the abort markers to be written (Kafka 3.0+ shows it).")
@click.pass_obj
def abort(g: GlobalOptions, transactional_id: str | None, option_id: str | None,
          wait_s: float) -> None:
    """Abort the open transaction of TRANSACTIONAL_ID and fence its producer."""
    tid = transactional_id or option_id
    if not tid or (transactional_id and option_id and transactional_id != option_id):
        raise click.UsageError("give the transactional id once, as the argument or "
                               "--transactional-id")
    with connected(g.client_config(), "kafkawire transactions abort") as client:
        before = describe_transaction(client, tid) if can_describe(client) else None
        if before is not None and before.state not in OPEN_STATES:
            click.echo(f"transactional id {tid} has no open transaction ({before.state}); "
                       "nothing aborted")
            return
        timeout_ms = before.timeout_ms if before is not None \
            else ProduceSettings().transaction_timeout_ms
        identity = init_transactions(client, tid, timeout_ms)
        after = before
        deadline = time.monotonic() + wait_s
        while before is not None:
            after = describe_transaction(client, tid)
            if after.state not in OPEN_STATES or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    held = "" if before is None else \
        f" (held {', '.join(f'{t}-{p}' for t, p in before.partitions) or 'no partitions'})"
    now = "" if after is None else f"; now {after.state}"
    click.echo(f"transaction of {tid} aborted{held}: producer id {identity.producer_id} fenced "
               f"at epoch {identity.epoch}{now}")
