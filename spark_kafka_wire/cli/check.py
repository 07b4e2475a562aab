"""``kafkawire check``: can kafkawire work with this cluster, with these security settings?

Connects the way a query would (TLS and SASL from ``--command-config``), then to every broker
the metadata names, and prints per broker the API version ranges it offers beside the ones
kafkawire implements and the version it will use, as Kafka's ``kafka-broker-api-versions``
does. The exit status is 0 when reads and writes can work: every broker is reachable and
offers a common version of Metadata, ListOffsets, Fetch and Produce.

Kafka's protocol does not carry a broker's release; what can be said is which release's API
versions it speaks at least, from a few versions each release introduced (below).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import click

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.output import output_format, print_table
from spark_kafka_wire.cli.settings import GlobalOptions, connected
from spark_kafka_wire.client.config import ClientConfig, format_address
from spark_kafka_wire.client.metadata.cluster import ClusterMetadata, KafkaClient
from spark_kafka_wire.client.producer.transactions import transaction_v2_level
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.protocol.errors import KafkaWireError
from spark_kafka_wire.protocol.messages import (
    ALL_APIS,
    API_VERSIONS,
    CLASSIC_MAX_VERSION,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    TRANSACTION_V2_FROM,
    TRANSACTION_VERSION_FEATURE,
)
from spark_kafka_wire.protocol.versions import choose_version

#: The columns of a broker's API table (and the keys of its rows under ``--output json``).
API_COLUMNS = ("api", "key", "broker", "kafkawire", "uses")
REQUIRED = (METADATA.key, LIST_OFFSETS.key, FETCH.key, PRODUCE.key)
# What each optional API is for, shown where a broker lacks it.
NEEDED_FOR = {
    "CreateTopics": "createTopic=true",
    "OffsetCommit": "commitOffsets=kafka",
    "OffsetFetch": "lag, startingOffsets=group",
    "FindCoordinator": "commitOffsets=kafka, lag",
    "InitProducerId": "idempotent writes",
    "SaslHandshake": "SASL",
    "SaslAuthenticate": "SASL",
}
# (API key, version, release): the release that introduced that API version, so a broker
# offering it speaks at least that release's protocol. Each from the KIP that added it:
# ApiVersions v0 (KIP-35, 0.10.0), ListOffsets v1 (KIP-79, 0.10.1), Produce v3 (KIP-98 record
# batches, 0.11.0), Produce v7 (KIP-110 zstd, 2.1), ApiVersions v3 (KIP-511, 2.4).
RELEASE_MARKERS = (
    (API_VERSIONS.key, 3, "2.4"),
    (PRODUCE.key, 7, "2.1"),
    (PRODUCE.key, 3, "0.11.0"),
    (LIST_OFFSETS.key, 1, "0.10.1"),
    (API_VERSIONS.key, 0, "0.10.0"),
)


def release_floor(conn: BrokerConnection, config: ClientConfig) -> str:
    if not config.api_version_request:
        return f"pinned to {config.broker_version_fallback} (api.version.request=false)"
    for key, version, release in RELEASE_MARKERS:
        if conn.api_versions.get(key, (0, -1))[1] >= version:
            return f"speaks the API versions of Kafka >= {release}"
    return "release unknown"


@dataclass
class BrokerReport:
    node_id: int
    address: str
    rows: list[tuple[str, int, str, str, str]]
    missing: list[str]  # required APIs without a common version
    release: str = ""
    error: str | None = None


def api_rows(conn: BrokerConnection) -> tuple[list[tuple[str, int, str, str, str]], list[str]]:
    """(api, key, broker's versions, kafkawire's, the one used) per API we implement."""
    rows, missing = [], []
    for key, spec in sorted(ALL_APIS.items()):
        theirs = conn.api_versions.get(key)
        offered = f"{theirs[0]}-{theirs[1]}" if theirs else "-"
        try:
            chosen = choose_version(spec, conn.api_versions, conn.name)
            use = f"v{chosen}"
            if key in CLASSIC_MAX_VERSION:  # the v2 versions only in v2 transactions
                use = f"v{min(chosen, CLASSIC_MAX_VERSION[key])}"
                if chosen >= TRANSACTION_V2_FROM[key] and transaction_v2_level(conn):
                    use += f" (v{chosen} in transactions: {TRANSACTION_VERSION_FEATURE} 2)"
        except KafkaWireError:
            use = "none" + (f" (needed for {NEEDED_FOR[spec.name]})"
                            if spec.name in NEEDED_FOR else "")
            if key in REQUIRED:
                missing.append(spec.name)
        rows.append((spec.name, key, offered, f"{spec.min_version}-{spec.max_version}", use))
    return rows, missing


def broker_report(client: KafkaClient, node_id: int, address: tuple[str, int]) -> BrokerReport:
    where = format_address(*address)
    try:
        conn = client.broker(node_id)
    except KafkaWireError as exc:
        return BrokerReport(node_id, where, [], [], error=str(exc))
    rows, missing = api_rows(conn)
    return BrokerReport(node_id, where, rows, missing, release_floor(conn, client.config))


def security_line(config: ClientConfig) -> str:
    """What the connection uses; the password and key never (their reprs hide them too)."""
    parts = [config.security_protocol]
    if config.sasl is not None:
        parts.append(f"SASL {config.sasl.mechanism} as {config.sasl.username!r}")
    if config.tls is not None:
        cas = "system CAs" if config.tls.cadata is None else "the configured CA"
        parts.append(f"TLS verified against {cas}"
                     + ("" if config.tls.check_hostname else ", hostname not checked")
                     + (", client certificate" if config.tls.cert_chain else ""))
    return ", ".join(parts)


@click.command(short_help=summary("check"))
@click.pass_obj
def check(g: GlobalOptions) -> None:
    """Connect with the given settings and show what kafkawire can use on each broker."""
    config = g.client_config()
    with connected(config, "kafkawire check (it compares the brokers' ApiVersions, which "
                   "Kafka 0.7 has not)") as client:
        md = client.fetch_metadata()
        reports = [broker_report(client, node, addr) for node, addr in sorted(md.brokers.items())]
    servers = ",".join(format_address(h, p) for h, p in config.bootstrap_servers)
    problems = []
    for r in reports:
        if r.error is not None:
            problems.append(f"broker {r.node_id} is unreachable")
        problems += [f"broker {r.node_id} has no common {name} version" for name in r.missing]
    if output_format() == "json":
        click.echo(json.dumps(check_document(servers, security_line(config), md, reports,
                                             problems), ensure_ascii=False))
    else:
        click.echo(f"bootstrap: {servers} ({security_line(config)}): connected")
        click.echo(f"cluster: id {md.cluster_id or '-'}, controller {md.controller_id}, "
                   f"{len(md.brokers)} broker(s), {len(md.topics)} topic(s)")
        for r in reports:
            if r.error is not None:
                click.echo(f"broker {r.node_id} at {r.address}: unreachable: {r.error}")
                continue
            click.echo(f"broker {r.node_id} at {r.address}: {r.release}")
            print_table(API_COLUMNS, r.rows)
        if problems:
            click.echo("not usable: " + "; ".join(problems))
        else:
            click.echo("usable: kafkawire can read and write through this cluster")
    if problems:
        raise click.exceptions.Exit(1)


def check_document(servers: str, security: str, md: ClusterMetadata,
                   reports: list[BrokerReport], problems: list[str]) -> dict[str, Any]:
    """What ``check`` found as one JSON object (``--output json``): the lines above and each
    broker's API table (its rows keyed by API_COLUMNS, as ``print_table`` keys JSON rows), so
    a program reads one document instead of text around tables."""
    return {
        "bootstrap": servers, "security": security, "cluster_id": md.cluster_id,
        "controller": md.controller_id, "brokers_count": len(md.brokers),
        "topics_count": len(md.topics),
        "brokers": [{"node_id": r.node_id, "address": r.address,
                     "release": r.release if r.error is None else None, "error": r.error,
                     "apis": [dict(zip(API_COLUMNS, row, strict=True)) for row in r.rows]}
                    for r in reports],
        "usable": not problems, "problems": problems,
    }
