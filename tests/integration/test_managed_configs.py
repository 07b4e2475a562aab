"""Every options block of the "Connecting to managed Kafka" section (docs/security.md) works.

Each block follows a ``<!-- managed:NAME -->`` marker and assigns a dict literal to
``options``. This test reads the blocks from docs/security.md, swaps their placeholders, host names and
file paths for a test broker's (and adds the test CA where a block relies on the system's CAs),
then kafkawire writes and reads records that librdkafka reads and writes, through the same
broker. So a block that names a wrong option, a wrong mechanism or a JAAS line the parser does
not take fails here. A marker without a case below, or a case without a marker, fails too.
"""

from __future__ import annotations

import ast
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.options import SOURCE, client_config, lower_keys
from tests.support.docs_pages import page
from tests.support.kafkawire_io import read_records, write_records
from tests.support.librdkafka import consume, produce
from tests.support.sasl_mechanisms import Credentials
from tests.support.security_env import (
    AWS_KEYS,
    AWS_REGION,
    OAUTH_CLIENT_ID,
    OAUTH_CLIENT_SECRET,
    SASL_USERS,
)

pytestmark = pytest.mark.broker

DOCS_PAGE = page("security.md")  # the section moved there from the README
SECTION = "## Connecting to managed Kafka"
RECORDS = [(f"k{i}".encode(), f"managed-{i}".encode() * (1 + i % 3)) for i in range(25)]
USER = "alice"
EVENT_HUBS_USER = "$ConnectionString"


def readme_blocks() -> dict[str, dict[str, str]]:
    """{marker name: the options dict of the python block after it}, from the section."""
    text = DOCS_PAGE.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:end if end >= 0 else None]
    blocks = {}
    for m in re.finditer(r"<!-- managed:([\w-]+) -->\s*```python\n(.*?)```", section, re.S):
        tree = ast.parse(m.group(2))
        assigns = [n for n in tree.body if isinstance(n, ast.Assign)
                   and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["options"]]
        assert len(assigns) == 1, f"block {m.group(1)}: expected one 'options = {{...}}'"
        blocks[m.group(1)] = ast.literal_eval(assigns[0].value)
    return blocks


@dataclass
class Target:
    """Where a block is tried: a broker, what replaces the block's placeholders and paths, and
    librdkafka's settings for the same broker."""

    broker: Any  # a front (SaslBroker, TlsBroker) or Apache Kafka's listener (KafkaListener)
    replace: dict[str, str]
    librdkafka: dict[str, str]


def _substitute(options: dict[str, str], target: Target, pki) -> dict[str, str]:
    out = {}
    for key, value in options.items():
        if key == "kafka.bootstrap.servers":
            value = target.broker.bootstrap_servers
        else:
            for old, new in target.replace.items():
                value = value.replace(old, new)
            assert not re.search(r"<[A-Z_]+>", value), f"{key}: placeholder left in {value!r}"
        out[key] = value
    protocol = out.get("kafka.security.protocol", "PLAINTEXT")
    trust = {"kafka.ssl.truststore.location", "kafka.ssl.ca.location",
             "kafka.ssl.truststore.certificates"}
    if protocol in ("SSL", "SASL_SSL") and not trust & out.keys():
        out["kafka.ssl.ca.location"] = pki.ca_pem  # stands in for the system's public CAs
    return out


def _rdkafka_tls(pki, client_cert: bool = False) -> dict[str, str]:
    conf = {"ssl.ca.location": pki.ca_pem}
    if client_cert:
        conf.update({"ssl.certificate.location": pki.client.cert_pem,
                     "ssl.key.location": pki.client.key_pem})
    return conf


def _sasl(protocol: str, mechanism: str, user: str = USER,
          password: str | None = None) -> dict[str, str]:
    return {"security.protocol": protocol, "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": SASL_USERS[user] if password is None else password}


USER_PASSWORD = {"<USER>": USER, "<PASSWORD>": SASL_USERS[USER]}
EVENT_HUBS_CONNECTION = ("Endpoint=sb://kafkawire-test.servicebus.windows.net/;"
                         "SharedAccessKeyName=RootManageSharedAccessKey;"
                         "SharedAccessKey=s3cr3t/With+Base64=")


def _event_hubs_broker(sasl_broker_factory, pki):
    return sasl_broker_factory(pki=pki, creds=Credentials(
        users={EVENT_HUBS_USER: EVENT_HUBS_CONNECTION}), mechanisms=("PLAIN",))


CASES: dict[str, Callable[..., Target]] = {
    "sasl-plaintext": lambda f: Target(
        f["sasl_broker"], USER_PASSWORD, _sasl("SASL_PLAINTEXT", "SCRAM-SHA-256")),
    "ssl-private-ca": lambda f: Target(
        f["tls_broker"], {"/etc/kafka/truststore.p12": f["pki"].ca_p12,
                          "<TRUSTSTORE_PASSWORD>": f["pki"].store_password},
        {"security.protocol": "SSL", **_rdkafka_tls(f["pki"])}),
    "confluent-cloud": lambda f: Target(
        f["sasl_ssl_broker"], {"<API_KEY>": USER, "<API_SECRET>": SASL_USERS[USER]},
        {**_sasl("SASL_SSL", "PLAIN"), **_rdkafka_tls(f["pki"])}),
    "msk-scram": lambda f: Target(
        f["sasl_ssl_broker"], USER_PASSWORD,
        {**_sasl("SASL_SSL", "SCRAM-SHA-512"), **_rdkafka_tls(f["pki"])}),
    "msk-mtls": lambda f: Target(
        f["mtls_broker"], {"/dbfs/certs/kafka.client.keystore.p12": f["pki"].client.p12,
                           "<KEYSTORE_PASSWORD>": f["pki"].store_password},
        {"security.protocol": "SSL", **_rdkafka_tls(f["pki"], client_cert=True)}),
    "event-hubs": lambda f: Target(
        _event_hubs_broker(f["sasl_broker_factory"], f["pki"]),
        {"<NAMESPACE>": "kafkawire-test", "<KEY_NAME>": "RootManageSharedAccessKey",
         "<KEY>": "s3cr3t/With+Base64="},
        {**_sasl("SASL_SSL", "PLAIN", EVENT_HUBS_USER, EVENT_HUBS_CONNECTION),
         **_rdkafka_tls(f["pki"])}),
    "aiven": lambda f: Target(
        f["mtls_broker"], {"/etc/aiven/ca.pem": f["pki"].ca_pem,
                           "/etc/aiven/service.cert": f["pki"].client.cert_pem,
                           "/etc/aiven/service.key": f["pki"].client.key_pem},
        {"security.protocol": "SSL", **_rdkafka_tls(f["pki"], client_cert=True)}),
    "redpanda-cloud": lambda f: Target(
        f["sasl_ssl_broker"], USER_PASSWORD,
        {**_sasl("SASL_SSL", "SCRAM-SHA-256"), **_rdkafka_tls(f["pki"])}),
    "confluent-cloud-oauth": lambda f: Target(
        f["sasl_ssl_broker"].signed_tokens,
        {"https://<IDP_HOST>/oauth2/token": f["token_endpoint"].url,
         "<CLIENT_ID>": OAUTH_CLIENT_ID, "<CLIENT_SECRET>": OAUTH_CLIENT_SECRET,
         "<SCOPE>": "kafka", "<LKC_ID>": "lkc-test", "<POOL_ID>": "pool-test"},
        {**_sasl("SASL_SSL", "SCRAM-SHA-512"), **_rdkafka_tls(f["pki"])}),
    # The signer takes the process's AWS credentials and, as the test's bootstrap host names
    # no region, AWS_REGION: both set by the test (see _aws_environment).
    "msk-iam": lambda f: Target(
        f["sasl_ssl_front_broker"], {},
        {**_sasl("SASL_SSL", "SCRAM-SHA-512"), **_rdkafka_tls(f["pki"])}),
    "kerberos": lambda f: Target(
        f["gssapi_ssl_broker"],
        {"/etc/security/keytabs/alice.keytab": f["kdc"].client_keytab,
         "<PRINCIPAL>": f["kdc"].client_principal},
        {**_sasl("SASL_SSL", "SCRAM-SHA-256"), **_rdkafka_tls(f["pki"])}),
}
FIXTURES = {"sasl-plaintext": ("sasl_broker",), "ssl-private-ca": ("tls_broker", "pki"),
            "confluent-cloud": ("sasl_ssl_broker", "pki"), "msk-scram": ("sasl_ssl_broker", "pki"),
            "msk-mtls": ("mtls_broker", "pki"), "event-hubs": ("sasl_broker_factory", "pki"),
            "aiven": ("mtls_broker", "pki"), "redpanda-cloud": ("sasl_ssl_broker", "pki"),
            "confluent-cloud-oauth": ("sasl_ssl_broker", "pki", "token_endpoint"),
            "msk-iam": ("sasl_ssl_front_broker", "pki"), "kerberos": ("kdc", "gssapi_ssl_broker", "pki")}
# What each block must log in as on the broker: (mechanism, principal).
LOGINS = {"confluent-cloud-oauth": ("OAUTHBEARER", OAUTH_CLIENT_ID), "msk-iam": ("OAUTHBEARER", None),
          "kerberos": ("GSSAPI", None), "confluent-cloud": ("PLAIN", USER),
          "msk-scram": ("SCRAM-SHA-512", USER), "redpanda-cloud": ("SCRAM-SHA-256", USER),
          "sasl-plaintext": ("SCRAM-SHA-256", USER), "event-hubs": ("PLAIN", EVENT_HUBS_USER)}


def test_every_readme_block_has_a_case_and_every_case_a_block() -> None:
    assert sorted(readme_blocks()) == sorted(CASES) == sorted(FIXTURES)


def _aws_environment(monkeypatch) -> None:
    pytest.importorskip("aws_msk_iam_sasl_signer")
    (key, secret), = AWS_KEYS.items()
    for name, value in (("AWS_ACCESS_KEY_ID", key), ("AWS_SECRET_ACCESS_KEY", secret),
                        ("AWS_REGION", AWS_REGION)):
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_readme_block_writes_and_reads_like_librdkafka(name: str, request, monkeypatch) -> None:
    if name == "msk-iam":
        _aws_environment(monkeypatch)
    fixtures = {f: request.getfixturevalue(f) for f in FIXTURES[name]}
    pki = fixtures.get("pki")
    if "token_endpoint" in fixtures:  # the operator lists the token URL (docs/security.md, OAUTHBEARER)
        monkeypatch.setenv("KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS",
                           fixtures["token_endpoint"].url)
    target = CASES[name](fixtures)
    options = _substitute(readme_blocks()[name], target, pki)
    conf = {"bootstrap.servers": target.broker.bootstrap_servers, "log_level": 0,
            **target.librdkafka}
    stats = getattr(target.broker, "stats", None)  # Apache Kafka's: a snapshot of its log
    before = len(stats.authentications) if stats is not None else 0
    client = KafkaClient(client_config(lower_keys(options), SOURCE))
    try:
        topic = f"managed-{name}-{uuid.uuid4().hex[:8]}"
        create_topics(client, [(topic, 1)])
        write_records(client, topic, RECORDS)
        assert consume(conf, topic, len(RECORDS), 30) == RECORDS
        produce(conf, topic, RECORDS)
        assert read_records(client, topic, 0, 2 * len(RECORDS)) == RECORDS + RECORDS
    finally:
        client.close()
    if name in LOGINS:  # the block's own mechanism logged in (the broker serves the session)
        mechanism, principal = LOGINS[name]
        ours = {e.principal for e in target.broker.stats.authentications[before:]
                if e.mechanism == mechanism}
        assert ours and (principal is None or ours == {principal}), (name, ours)
