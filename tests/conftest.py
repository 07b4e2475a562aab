"""Shared fixtures: the run's Apache Kafka broker, Apicurio Registry and PKI (started once and
shared by the xdist workers and tiers: tests/support/shared_servers.py), one SparkSession per
process, and the security brokers and fronts the TLS and SASL tests need.

The broker is Apache Kafka from Maven Central (tests/support/apache_kafka.py);
KAFKAWIRE_TEST_BROKER=tansu runs the suite on the embedded Tansu broker of ``make demo``, and
with KAFKA_BOOTSTRAP_SERVERS set it runs against that cluster.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from pathlib import Path

import pytest
from hypothesis import settings

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from tests.support.kdc import kerberos_missing

EXTERNAL = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")

# Property-based tests (Hypothesis): derandomized, so every run (CI included) tries the same
# examples, derived from each test's name and source, and a test never starts failing on an
# example nobody changed anything for; no example database either, so no state is carried
# between runs or machines. The price is that CI does not explore new examples: to hunt for
# bugs, run with HYPOTHESIS_PROFILE=explore (a random seed per run, failures kept in the local
# .hypothesis database and replayed first) a few times, and pin what it finds in a test.
# No per-example deadline: it is a wall-clock assertion, which fails on a loaded two-core
# machine (a 0.6 ms example took 409 ms in a unit run beside six others) and proves nothing
# about the code; speed is proven in `make bench`, and a hang by the tiers' timeouts.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


#: The test tiers: each top folder under tests/ marks its tests with its own name (declared in
#: pyproject.toml, so a folder added later is a tier at once), and ``pytest -m unit`` runs the
#: unit tier alone. A tier is where a test lives, not a promise to remember: a test that needs a
#: broker, Spark or a JVM cannot sit in tests/unit unmarked, because it does not sit there at all.
TIERS = ("unit", "integration", "spark", "cli", "faults", "notebooks", "deploy", "compat",
         "parity", "cluster")
TESTS = Path(__file__).resolve().parent


#: The session fixtures that start a broker, Spark, ZooKeeper or a KDC (a JVM or a server): a
#: unit test asking for one fails collection, saying where the test belongs.
NOT_IN_UNIT = frozenset({
    "bootstrap", "client", "new_topic", "apache_kafka", "zookeeper", "spark", "connect_spark",
    "secure_zookeeper", "wrong_host_zookeeper", "tls_broker", "mtls_broker",
    "wrong_host_tls_broker", "expired_tls_broker", "secure_kafka", "sasl_broker",
    "sasl_front_broker", "sasl_ssl_front_broker", "sasl_ssl_broker", "reauth_broker",
    "sasl_broker_factory", "kdc", "gssapi_broker", "gssapi_ssl_broker",
    "tansu_bogus_scram_broker", "schema_registry"})


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the marker must be there when it looks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        path = Path(item.path).resolve()
        if path.is_relative_to(TESTS):
            parts = path.relative_to(TESTS).parts
            if len(parts) > 1 and parts[0] in TIERS:
                item.add_marker(parts[0])
                needs = sorted(NOT_IN_UNIT.intersection(getattr(item, "fixturenames", ())))
                if parts[0] == "unit" and needs:
                    misplaced.append(f"{item.nodeid} (uses {', '.join(needs)})")
    if misplaced:
        raise pytest.UsageError(
            "the unit tier starts no broker, Spark, ZooKeeper or KDC; move these tests to "
            "tests/integration (or tests/spark):\n  " + "\n  ".join(misplaced))


#: The broker the suite runs against when KAFKA_BOOTSTRAP_SERVERS is unset: "kafka" (Apache
#: Kafka from Maven Central, tests/support/apache_kafka.py) or "tansu" (the embedded broker).
TEST_BROKER = os.environ.get("KAFKAWIRE_TEST_BROKER", "kafka").strip().lower()
if TEST_BROKER not in ("kafka", "tansu"):
    raise pytest.UsageError(f"KAFKAWIRE_TEST_BROKER must be kafka or tansu, got {TEST_BROKER!r}")


# ------------------------------------------------- servers shared by the run's processes (issue 44)
# The broker, the registry and the PKI start once per run, whatever the number of xdist workers
# or tiers (tests/support/shared_servers.py); the run's first process makes their directory and
# stops them at its end.

SHARED_MADE = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    from tests.support import shared_servers

    if not hasattr(config, "workerinput") and shared_servers.directory() is None:
        config.stash[SHARED_MADE] = shared_servers.make_directory()


SHARED_KEEP = pytest.StashKey[bool]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[SHARED_KEEP] = session.testsfailed > 0 or exitstatus not in (0, 5)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's shared servers stop here, also after a run that ended before its session
    (a usage error, a failed collection), their files kept when a test failed."""
    from tests.support import shared_servers

    made = config.stash.get(SHARED_MADE, None)
    if made is None:
        return
    for path in shared_servers.stop_all(made, keep_files=config.stash.get(SHARED_KEEP, False)):
        print(f"\na shared server's logs are kept in {path}")
    os.environ.pop(shared_servers.ENV, None)


def _shared(name: str, start):
    """The run's shared server ``name`` (tests/support/shared_servers.py)."""
    from tests.support import shared_servers

    where = shared_servers.directory()
    assert where is not None, "pytest_configure names the run's directory of shared servers"
    return shared_servers.shared(where, name, start)


@pytest.fixture(scope="session")
def broker_kind() -> str:
    """What ``bootstrap`` is: "kafka", "tansu", or "external" (KAFKA_BOOTSTRAP_SERVERS, whose
    kind the suite does not guess). For the few tests that check a broker's own behaviour."""
    return "external" if EXTERNAL else TEST_BROKER


@pytest.fixture(scope="session")
def apache_kafka(request):
    """The run's Apache Kafka 4 broker (KRaft; PLAINTEXT, SSL, MTLS, SASL_PLAINTEXT and
    SASL_SSL listeners; StandardAuthorizer), shared by its processes. Its log directory is kept
    when a test failed. Its ``process`` is None: a test may not stop or kill it."""
    from tests.support.apache_kafka import ApacheKafka, missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(missing)
    broker = ApacheKafka(pki=request.getfixturevalue("pki"))

    def start():
        broker.start()
        assert broker.process is not None
        return dataclasses.replace(broker, process=None), broker.process.pid, [broker.directory]

    return _shared(f"apache-kafka-{broker.version}", start)


@pytest.fixture(scope="session")
def bootstrap(request) -> str:
    if EXTERNAL:
        yield EXTERNAL
        return
    if TEST_BROKER == "kafka":
        yield request.getfixturevalue("apache_kafka").bootstrap_servers
        return
    from spark_kafka_wire.testing.embedded import EmbeddedBroker

    broker = EmbeddedBroker().start()
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def client(bootstrap: str) -> KafkaClient:
    c = KafkaClient(ClientConfig.from_servers(bootstrap, request_timeout_ms=10_000))
    yield c
    c.close()


@pytest.fixture
def new_topic(client: KafkaClient):
    """Factory: a fresh, uniquely named topic with the given partition count."""

    def make(partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        create_topics(client, [(name, partitions)])
        return name

    return make


@pytest.fixture(scope="session")
def zookeeper() -> str:
    """connect string of a real ZooKeeper (ZOOKEEPER_CONNECT, else Debian's package started
    on a free port); skipped, saying how to get it, where neither exists."""
    external = os.environ.get("ZOOKEEPER_CONNECT")
    if external:
        yield external
        return
    from tests.support.zookeeper_server import ZooKeeperServer, missing_jars

    missing = missing_jars()
    if missing:
        pytest.skip(
            "ZooKeeper tests need a ZooKeeper server: install Debian's package with "
            "'apt-get install zookeeper' (missing jars: " + ", ".join(missing) + ") or set "
            "ZOOKEEPER_CONNECT"
        )
    server = ZooKeeperServer().start()
    try:
        yield server.connect
    finally:
        server.stop()


#: A Schema Registry of the user's (its Confluent API URL) for the suite to use instead of the
#: Apicurio Registry it starts.
EXTERNAL_SCHEMA_REGISTRY = os.environ.get("SCHEMA_REGISTRY_URL")


@pytest.fixture(scope="session")
def schema_registry(request) -> str:
    """The URL of Confluent's Schema Registry API, as Confluent's clients and the
    ``schema.registry.url`` option take it, on a real registry: Apicurio Registry from Maven
    Central with in-memory storage (tests/support/schema_registry.py), shared by the run's
    processes, or SCHEMA_REGISTRY_URL. Its log is kept when a test failed."""
    if EXTERNAL_SCHEMA_REGISTRY:
        yield EXTERNAL_SCHEMA_REGISTRY
        return
    from tests.support.schema_registry import ApicurioRegistry, missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(missing)

    def start():
        registry = ApicurioRegistry().start()
        assert registry.process is not None
        return registry.url, registry.process.pid, [registry.directory]

    yield _shared("apicurio-registry", start)


@pytest.fixture(scope="session")
def spark(token_endpoint):
    from spark_kafka_wire.testing.session import local_session

    # The operator's allow-list of token URLs (client/operator.py) names the test token
    # endpoint for Spark alone: its Python workers, which parse kafkawire's options and fetch
    # tokens, inherit the environment the JVM started with; this process keeps its own.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS", token_endpoint.url)
        session = local_session("spark-kafka-wire-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_spark(spark):
    """A Spark Connect client session on a Connect server of its own (tests/support/
    spark_connect.py), with kafkawire registered from the client as Connect users do. Skips,
    saying what to install, without the Connect client's packages."""
    try:
        import pyspark.sql.connect  # noqa: F401  (checks grpcio & co.)
    except ImportError as exc:
        pytest.skip(f"Spark Connect needs its client packages: pip install -e '.[connect]' "
                    f"({exc})")
    from spark_kafka_wire import KafkaWireDataSource
    from tests.support.spark_connect import ConnectServer

    server = ConnectServer().start()
    try:
        session = server.session()
        session.dataSource.register(KafkaWireDataSource)
        yield session
        session.stop()
    finally:
        server.stop()


# ------------------------------------------------------------------- secured brokers (issue 13)
# Tansu behind stunnel (TLS) and/or the SASL front of tests/support/sasl_front.py; each secured
# port has its own Tansu advertising that port. Users and passwords: tests/support/security_env.py.


def _need_stunnel() -> None:
    from tests.support.tls_front import STUNNEL_PACKAGE, stunnel_binary

    if stunnel_binary() is None:
        pytest.skip(f"TLS tests need stunnel: apt-get install {STUNNEL_PACKAGE}")


@pytest.fixture(scope="session")
def pki():
    """TestPki: CA, server/wrong-host/expired/client certificates as PEM, PKCS12, JKS (0600);
    the run's one, as the shared broker presents its certificates to every process."""
    from tests.support.certs import make_pki

    def start():
        made = make_pki()
        return made, None, [made.directory]

    return _shared("pki", start)


def _secure_zookeeper_server(**kwargs):
    from tests.support.zookeeper_server import ZooKeeperServer, missing_jars

    missing = missing_jars(secure=True)
    if missing:
        pytest.skip("ZooKeeper TLS tests need Debian's zookeeper and netty packages "
                    "(missing jars: " + ", ".join(missing) + ")")
    return ZooKeeperServer(**kwargs).start()


@pytest.fixture(scope="session")
def secure_zookeeper(pki):
    """A ZooKeeper locked down as Kafka's security guide describes: a secureClientPort
    (Netty) with the localhost certificate that requires a client certificate signed by the
    tests' CA, and SASL DIGEST-MD5 required of every session (user ZK_USER)."""
    from tests.support.zookeeper_server import ZK_PASSWORD, ZK_USER

    server = _secure_zookeeper_server(
        keystore=(pki.server.p12, pki.store_password, "PKCS12"),
        truststore=(pki.ca_p12, pki.store_password, "PKCS12"),
        sasl_users={ZK_USER: ZK_PASSWORD}, require_sasl=True)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def wrong_host_zookeeper(pki):
    """A ZooKeeper TLS port whose certificate names wrong-host.invalid only."""
    server = _secure_zookeeper_server(
        keystore=(pki.wrong_host.p12, pki.store_password, "PKCS12"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tls_broker(request, pki):
    """SSL with the localhost/127.0.0.1 certificate, no client certificate needed: Apache
    Kafka's SSL listener (KafkaListener) when the test broker is kafka, else Tansu behind
    stunnel (TlsBroker)."""
    if TEST_BROKER == "kafka":
        from tests.support.kafka_observer import KafkaListener

        yield KafkaListener(request.getfixturevalue("apache_kafka"), "SSL", pki)
        return
    _need_stunnel()
    from tests.support.tls_front import start_tls_broker

    with start_tls_broker(pki) as broker:
        yield broker


@pytest.fixture(scope="session")
def mtls_broker(request, pki):
    """SSL requiring a client certificate signed by the session CA (pki.client): Kafka's MTLS
    listener (ssl.client.auth=required) when the test broker is kafka, else stunnel's."""
    if TEST_BROKER == "kafka":
        from tests.support.kafka_observer import KafkaListener

        yield KafkaListener(request.getfixturevalue("apache_kafka"), "MTLS", pki)
        return
    _need_stunnel()
    from tests.support.tls_front import start_tls_broker

    with start_tls_broker(pki, mutual=True) as broker:
        yield broker


@pytest.fixture(scope="session")
def wrong_host_tls_broker(pki):
    """TlsBroker whose certificate names only wrong-host.invalid: hostname checks must fail.
    stunnel on every test broker: what is tested is the client's check of a certificate, which
    does not depend on the server presenting it, and the shared Kafka broker keeps only good
    certificates."""
    _need_stunnel()
    from tests.support.tls_front import start_tls_broker

    with start_tls_broker(pki, server=pki.wrong_host) as broker:
        yield broker


@pytest.fixture(scope="session")
def expired_tls_broker(pki):
    """TlsBroker presenting an expired certificate for localhost/127.0.0.1. stunnel on every
    test broker, as for wrong_host_tls_broker."""
    _need_stunnel()
    from tests.support.tls_front import start_tls_broker

    with start_tls_broker(pki, server=pki.expired) as broker:
        yield broker


@pytest.fixture(scope="session")
def token_endpoint():
    """TokenEndpoint: OAuth client credentials (OAUTH_CLIENT_ID/SECRET) -> RS256 JWTs, at .url."""
    from tests.support.security_env import start_token_endpoint

    endpoint = start_token_endpoint()
    yield endpoint
    endpoint.stop()


#: KIP-368 session length of the security broker's REAUTH listener: short enough for a test to
#: outlive several sessions, long enough for a loaded machine to re-authenticate in time.
REAUTH_MS = 3000


@pytest.fixture(scope="session")
def secure_kafka(request, pki, token_endpoint):
    """The security tests' own Apache Kafka broker (its start needs the token endpoint's JWKS
    and, for GSSAPI, the KDC; the shared broker stays lean): every listener of the shared one,
    OIDC/OIDC_SSL (Kafka's JWKS validator, KIP-768), GSSAPI/GSSAPI_SSL where MIT Kerberos is
    installed, and REAUTH (sessions of REAUTH_MS, KIP-368), with its logins observed
    (tests/support/kafka_observer.py). Its log directory is kept when a test failed."""
    from tests.support.apache_kafka import ApacheKafka, Kerberos, Oidc, missing_tools
    from tests.support.kafka_observer import missing_javac
    from tests.support.kept_logs import logs_kept_on_failure
    from tests.support.oauth_server import AUDIENCE, ISSUER

    missing = missing_tools() or missing_javac()
    if missing:
        pytest.skip(missing)
    kerberos = None
    if kerberos_missing() is None:
        from tests.support.kdc import SERVICE

        kdc = request.getfixturevalue("kdc")
        kerberos = Kerberos(krb5_conf=kdc.krb5_conf, keytab=kdc.service_keytab,
                            principal=f"{SERVICE}/127.0.0.1@{kdc.realm}", realm=kdc.realm,
                            service=SERVICE)
    broker = ApacheKafka(
        pki=pki, observe=True, kerberos=kerberos, reauth_ms=REAUTH_MS,
        oidc=Oidc(jwks_url=token_endpoint.jwks_url, issuer=ISSUER, audience=AUDIENCE),
        extra={"num.network.threads": "1"}).start()
    with logs_kept_on_failure(request, broker.stop, "The security broker",
                              lambda: broker.directory):
        yield broker


def _kafka_listener(request, name: str, pki=None):
    from tests.support.kafka_observer import KafkaListener

    return KafkaListener(request.getfixturevalue("secure_kafka"), name, pki)


@pytest.fixture(scope="session")
def sasl_broker(request, token_endpoint):
    """SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER: Kafka's listener (unsecured
    tokens; ``.signed_tokens`` is the OIDC listener for the token endpoint's) when the test
    broker is kafka, else the SASL front (SaslBroker, signed or unsecured tokens)."""
    if TEST_BROKER == "kafka":
        yield _kafka_listener(request, "SASL_PLAINTEXT")
        return
    with _sasl_front(token_endpoint) as broker:
        yield broker


@pytest.fixture(scope="session")
def sasl_front_broker(token_endpoint):
    """The SASL front (SaslBroker, SASL_PLAINTEXT) on every test broker, for what no Apache
    Kafka listener does: Amazon MSK IAM tokens (verified by the front's own SigV4 check;
    Kafka needs AWS's plugin for them)."""
    with _sasl_front(token_endpoint) as broker:
        yield broker


@pytest.fixture(scope="session")
def sasl_ssl_front_broker(pki, token_endpoint):
    """The SASL front behind stunnel (SASL_SSL) on every test broker, as sasl_front_broker."""
    _need_stunnel()
    with _sasl_front(token_endpoint, pki=pki) as broker:
        yield broker


def _sasl_front(token_endpoint, **options):
    from tests.support.sasl_front import start_sasl_broker
    from tests.support.security_env import credentials

    return start_sasl_broker(credentials(token_endpoint), **options)


@pytest.fixture(scope="session")
def sasl_ssl_broker(request, pki, token_endpoint):
    """SASL_SSL with the same mechanisms: Kafka's SASL_SSL listener (``.signed_tokens``:
    OIDC_SSL) when the test broker is kafka, else the front behind stunnel."""
    if TEST_BROKER == "kafka":
        yield _kafka_listener(request, "SASL_SSL", pki)
        return
    _need_stunnel()
    with _sasl_front(token_endpoint, pki=pki) as broker:
        yield broker


@pytest.fixture(scope="session")
def reauth_broker(request):
    """Apache Kafka's REAUTH listener (SASL_PLAINTEXT; PLAIN, SCRAM, OAUTHBEARER validated
    by JWKS, GSSAPI where installed): sessions end after REAUTH_MS (KIP-368). Kafka only:
    the front's equivalent is ``sasl_broker_factory(session_lifetime_ms=...)``."""
    if TEST_BROKER != "kafka":
        pytest.skip("the REAUTH listener is Apache Kafka's (KAFKAWIRE_TEST_BROKER=kafka); "
                    "the front's re-authentication tests cover this broker")
    yield _kafka_listener(request, "REAUTH")


@pytest.fixture
def sasl_broker_factory(token_endpoint):
    """Factory: a SaslBroker with other front options (session_lifetime_ms, mechanisms,
    advertise_authenticate, credentials=...), stopped after the test. The front on every test
    broker: a broker per test, with options a shared Kafka broker cannot take per test
    (SaslHandshake v0 only, more SCRAM iterations than Kafka allows, other credentials, a
    session lifetime of its own) and counts Kafka does not log (handshake versions)."""
    from tests.support.sasl_front import start_sasl_broker
    from tests.support.security_env import credentials

    started = []

    def make(pki=None, creds=None, **options):
        if pki is not None:
            _need_stunnel()
        broker = start_sasl_broker(creds or credentials(token_endpoint), pki=pki, **options)
        started.append(broker)
        return broker

    yield make
    for broker in started:
        broker.stop()


@pytest.fixture(scope="session")
def kdc():
    """Kdc: a real MIT KDC (realm KAFKAWIRE.TEST, service kafka/localhost, client alice with
    a keytab). Points this process's Kerberos at it (KRB5_CONFIG, KRB5CCNAME with alice's TGT,
    KRB5_CLIENT_KTNAME) for the session. Skips, naming the packages, where MIT Kerberos or the
    gssapi package is missing."""
    from tests.support.kdc import start_kdc

    missing = kerberos_missing()
    if missing:
        pytest.skip(missing)
    server = start_kdc()
    saved = {k: os.environ.get(k) for k in server.environment()}
    os.environ.update(server.environment())
    try:
        yield server
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.stop()


def _gssapi_factory(kdc):
    import functools

    from tests.support.sasl_gssapi import GssapiServer

    return functools.partial(GssapiServer, kdc.service_keytab)


@pytest.fixture(scope="session")
def gssapi_broker(request, kdc, token_endpoint):
    """SASL_PLAINTEXT with GSSAPI (service kafka/127.0.0.1) besides the others: Kafka's GSSAPI
    listener (Krb5LoginModule with the service keytab) when the test broker is kafka, else
    the front (SaslBroker, service kafka/localhost or kafka/127.0.0.1)."""
    if TEST_BROKER == "kafka":
        yield _kafka_listener(request, "GSSAPI")
        return
    from tests.support.sasl_front import start_sasl_broker
    from tests.support.security_env import SASL_MECHANISMS, credentials

    with start_sasl_broker(credentials(token_endpoint), mechanisms=(*SASL_MECHANISMS, "GSSAPI"),
                           gssapi_factory=_gssapi_factory(kdc)) as broker:
        yield broker


@pytest.fixture(scope="session")
def gssapi_ssl_broker(request, kdc, pki, token_endpoint):
    """SASL_SSL with GSSAPI: Kafka's GSSAPI_SSL listener, else the front behind stunnel."""
    if TEST_BROKER == "kafka":
        yield _kafka_listener(request, "GSSAPI_SSL", pki)
        return
    _need_stunnel()
    from tests.support.sasl_front import start_sasl_broker
    from tests.support.security_env import SASL_MECHANISMS, credentials

    with start_sasl_broker(credentials(token_endpoint), pki=pki,
                           mechanisms=(*SASL_MECHANISMS, "GSSAPI"),
                           gssapi_factory=_gssapi_factory(kdc)) as broker:
        yield broker


@pytest.fixture(scope="session")
def tansu_bogus_scram_broker():
    """HiddenTansu in its own --authentication mode: a SCRAM exchange for any user ends with
    error code 0 and server-final e=unknown-user, which a client must refuse. Tansu on every
    test broker: it is Tansu's own misbehaviour, which Kafka never shows."""
    from tests.support.tansu import HiddenTansu

    with HiddenTansu(authentication=True) as broker:
        yield broker
