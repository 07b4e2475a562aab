"""Every option parser fed random and mutated values (issue 15, "Bad input").

A value either parses into something every later layer can use (integers inside their Java
and wire ranges, topic names Kafka allows, offsets and timestamps that fit an int64) or fails
with ConfigurationError naming the option. Nothing else may escape: no KeyError, IndexError,
struct.error, TypeError, UnicodeError, OverflowError, RecursionError, raw json or int parsing
ValueError. Secrets never appear in a message.

Values come from two kinds of strategies: fully random text, and structure-aware mutations of
valid values (JSON with wrong types, negative, huge and non-finite numbers, deep nesting,
unicode digits, empty strings, Java-only regex syntax, paths with NUL bytes, files of random
bytes). The Hypothesis profile (tests/conftest.py) is derandomized, so CI runs the same
examples every time.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import string
import tempfile
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spark_kafka_wire.cli.times import WhenType, format_ms
from spark_kafka_wire.client.config import ClientConfig, parse_bootstrap
from spark_kafka_wire.client.errors import CheckpointError, ConfigurationError
from spark_kafka_wire.client.metadata.cluster import MAX_TOPIC_LENGTH, check_topic_name
from spark_kafka_wire.client.security.sasl.jaas import jaas_credentials, parse_jaas
from spark_kafka_wire.client.security.sasl.kerberos import keytab_principals
from spark_kafka_wire.options import (
    OPTIONS,
    SINK,
    Kind,
    Option,
    Use,
)
from spark_kafka_wire.options.config_files import (
    file_kafka_options,
    parse_properties,
    resolve_placeholders,
)
from spark_kafka_wire.options.produce import SinkOptions, parse_sink_options
from spark_kafka_wire.protocol.messages import FETCH
from spark_kafka_wire.protocol.primitives import INT32_MAX, INT64_MAX
from spark_kafka_wire.source.limits import OffsetSpec, TimestampSpec
from spark_kafka_wire.source.offsets_json import batch_start, from_json, recorded_tasks
from spark_kafka_wire.source.options import (
    GroupStart,
    SourceOptions,
    StreamOptions,
    parse_source_options,
    parse_stream_options,
)
from spark_kafka_wire.source.planning import OffsetRange, split_ranges
from spark_kafka_wire.source.rate_limits import parse_duration_ms
from spark_kafka_wire.source.strategy import Assign, Subscribe, SubscribePattern

# A few seconds per example is far above what any parse needs: a deadline that fires means a
# pathological (quadratic or worse) case, while a loaded CI machine stays well below it.
FUZZ = settings(max_examples=20, deadline=5000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="alice" password="alice-secret";')
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
SECRET = "Zq7SECRETx"  # put into secret values; must never show in a message

# Settings every option can be fuzzed against: each parses cleanly without the fuzzed option
# (test_contexts_parse), so an error is the fuzzed value's doing.
CONTEXTS: dict[str, dict[str, str]] = {
    "plaintext": {},
    "ssl": {"kafka.security.protocol": "SSL"},
    "sasl_plain": {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
                   "kafka.sasl.jaas.config": PLAIN_JAAS},
    "oauth_unsecured": {"kafka.security.protocol": "SASL_PLAINTEXT",
                        "kafka.sasl.mechanism": "OAUTHBEARER",
                        "kafka.sasl.jaas.config":
                            f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="u";'},
    "oauth_oidc": {"kafka.security.protocol": "SASL_PLAINTEXT",
                   "kafka.sasl.mechanism": "OAUTHBEARER",
                   "kafka.sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
                   "kafka.sasl.jaas.config":
                       f'{OAUTH_MODULE} required clientId="c" clientSecret="s" scope="x";'},
}
#: GSSAPI's context parses only where the ``[kerberos]`` extra (gssapi, compiled against MIT
#: Kerberos) is installed: the parser refuses GSSAPI on the driver without it, by design
#: (client/security/sasl/gssapi.py), so without it the GSSAPI cases skip saying why.
GSSAPI = {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "GSSAPI"}
try:
    import gssapi  # noqa: F401
    GSSAPI_MISSING = None
except ImportError as exc:
    GSSAPI_MISSING = (f"the GSSAPI cases need the [kerberos] extra: apt-get install "
                      f"libkrb5-dev, then pip install -e '.[kerberos]' ({exc})")
else:
    CONTEXTS["gssapi"] = GSSAPI
SERVERS = {"kafka.bootstrap.servers": "h:9092"}
# The token URLs below that would parse, listed by the operator (client/operator.py), so their
# values get past the allow-list to every later check; any module for token providers (the
# parser never imports one).
ALLOWED_URLS = ("https://idp.example/token", "https://idp/token", "http://idp",
                "file:/tmp/token", "https://[::1/token", "https://idp:port/token")


@pytest.fixture(scope="module", autouse=True)
def operator_allows():
    """Module-scoped (Hypothesis refuses function-scoped fixtures in @given tests)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS", ",".join(ALLOWED_URLS))
        patch.setenv("KAFKAWIRE_SASL_OAUTHBEARER_TOKEN_PROVIDER_ALLOWED_MODULES", "*")
        yield

# Options whose wrong value may rightly be reported through another option it conflicts with.
RELATED = {
    "kafka.security.protocol": ("kafka.sasl.", "kafka.ssl.", "gssapi"),
    "kafka.sasl.mechanism": ("kafka.sasl.",),
    "kafka.ssl.enabled.protocols": ("kafka.ssl.protocol",),
    "kafka.sasl.jaas.config": ("kafka.sasl.",),
}

SECRET_OPTIONS = {"kafka.sasl.password", "kafka.sasl.jaas.config", "kafka.ssl.truststore.password",
                  "kafka.ssl.keystore.password", "kafka.ssl.key.password",
                  "kafka.ssl.keystore.key"}

# ------------------------------------------------------------------------------ strategies

# Kafka names plus the characters that break naive parsers.
_TRICKY = "\x00\n\t ,:;={}[]\"'\\$@/#.*+?()|^-_\u00e9\u0669\u200b\U0001f600"
tricky_text = st.text(alphabet=st.sampled_from(string.ascii_letters + string.digits + _TRICKY),
                      max_size=30)
random_text = st.one_of(st.text(max_size=40), tricky_text,
                        st.sampled_from(["x" * 32768, "é" * 20000]))  # beyond an int16 length

BIG = [2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, 10**30]
numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from(BIG + [-b for b in BIG] + [0, 1, -1, -2, -3]),
)
number_text = st.one_of(
    numbers.map(str),
    st.tuples(st.sampled_from(["", " ", "+", "\t"]), numbers.map(str),
              st.sampled_from(["", " ", "ms", "L", "\n"])).map("".join),
    st.sampled_from(["", " ", "NaN", "nan", "inf", "-inf", "Infinity", "1e3", "1e400", "0x10",
                     "1_000", "1.5", "-0", "٣", "１２", "9" * 5000, "-" + "9" * 5000, "true",
                     "∞", "\x00", "1\x002"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
bool_text = st.one_of(
    st.sampled_from(["true", "false", "TRUE", " False ", "yes", "no", "1", "0", "", "t",
                     "truee", "tru\u00e9", "nan", "null"]),
    random_text,
)


def _mutated_case(words: list[str]) -> st.SearchStrategy[str]:
    return st.tuples(st.sampled_from(words), st.sampled_from(["", " ", "\t"]),
                     st.sampled_from([str.lower, str.upper, str.title, str])).map(
        lambda t: t[1] + t[2](t[0]) + t[1])


topic_names = st.one_of(
    st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1, max_size=12),
    st.sampled_from(["", " ", ".", "..", "a b", "t\x00", "__consumer_offsets", "é", "t,u",
                     "x" * (MAX_TOPIC_LENGTH + 1), "x" * 40000, "@start"]),
    tricky_text,
)
json_scalars = st.one_of(
    st.none(), st.booleans(), numbers, st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
json_any = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=10,
)
partition_keys = st.one_of(
    st.integers(-5, 5).map(str), numbers.map(str),
    st.sampled_from(["", " 1", "1 ", "+1", "٣", "0x1", "1.0", "-0", "9" * 5000, "a"]),
)
offset_values = st.one_of(numbers, json_any, st.sampled_from([-2, -1, 0, 1.5, "1", True]))


def _offsets_doc(values: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    structured = st.dictionaries(topic_names, st.one_of(
        st.dictionaries(partition_keys, values, max_size=3),
        json_any), max_size=3)
    return st.one_of(
        structured.map(lambda d: json.dumps(d, allow_nan=True)),
        json_any.map(lambda d: json.dumps(d, allow_nan=True)),
        st.integers(1, 3000).map(lambda n: '{"t":' + "[" * n + "]" * n + "}"),
        st.integers(1, 3000).map(lambda n: '{"t":' + '{"0":' * n + "1" + "}" * n + "}"),
        st.sampled_from(['{"t":{"0":' + "9" * 5000 + "}}", '{"t":{"0":1e999}}',
                         '{"t":{"0":NaN}}', '{"t":{"0":-Infinity}}', "{", "{}", "{\"t\":{}}",
                         '{"t":{"0":1}', '{"t":{"0":1,"0":2}}', "earliest", " LATEST ",
                         "group", "\ufeff{}"]),
        random_text,
    )


assign_docs = st.one_of(
    st.dictionaries(topic_names, st.one_of(st.lists(st.one_of(numbers, json_scalars),
                                                    max_size=4), json_any),
                    max_size=3).map(lambda d: json.dumps(d, allow_nan=True)),
    st.integers(1, 3000).map(lambda n: '{"t":[' + "[" * n + "]" * n + "]}"),
    st.sampled_from(['{"t":[' + "9" * 5000 + "]}", '{"t":[1e999]}', '{"t":[NaN]}',
                     '{"t":[true]}', '{"t":[-1]}', '{"t":[2147483648]}', "{", "[]", "{}"]),
    random_text,
)
topic_lists = st.one_of(
    st.lists(topic_names, max_size=4).map(",".join),
    random_text,
)
JAVA_REGEX = [r"(?<name>a)", r"\Qa.b\E", r"\p{Alpha}+", r"\p{javaLowerCase}", r"a*+", r"a++",
              r"[a-z&&[^b]]", r"\h", r"(?U)a", r"a{4294967296}", r"a{99999999999999999999}",
              "(" * 2000 + ")" * 2000, "(" * 50 + ")" * 50, r"\1", r"(?P<n>a)(?P=n)", r"[",
              r"a{2,1}", r"(?i)topic-\d+", r"\z", r"\Z", r"(?<=a)b", "\x00", r"\x{263a}"]
regexes = st.one_of(
    st.sampled_from(JAVA_REGEX),
    st.lists(st.sampled_from(JAVA_REGEX + ["a", ".", "*", "+", "?", "|", "(", ")", "[", "]",
                                           "{", "}", "\\", "^", "$", "\\d", "{3}", "(?:"]),
             max_size=8).map("".join),
    random_text,
)
durations = st.one_of(
    st.tuples(number_text, st.sampled_from(["", "ms", "s", "m", "min", "h", "d", "us", "ns",
                                            "sec", "w", " s", "MS", "µs"])).map("".join),
    random_text,
)
JAAS_MODULES = [
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
    OAUTH_MODULE,
    "com.sun.security.auth.module.Krb5LoginModule",
    "software.amazon.msk.auth.iam.IAMLoginModule",
    "", "x",
]
JAAS_KEYS = ["username", "password", "tokenauth", "useKeyTab", "keyTab", "principal",
             "useTicketCache", "serviceName", "ticketCache", "clientId", "clientSecret", "scope",
             "unsecuredLoginStringClaim_sub", "unsecuredLoginNumberClaim_n",
             "unsecuredLoginListClaim_l", "unsecuredLoginLifetimeSeconds",
             "unsecuredLoginPrincipalClaimName", "unsecuredLoginScopeClaimName",
             "unsecuredLoginExtension_x", "extension_traceId", "extension_auth", "extension_",
             "awsProfileName", "awsRoleArn", ""]
jaas_values = st.one_of(
    number_text, random_text,
    st.sampled_from(["true", "false", "/nonexistent/keytab", "a@B", ",a,b", "", SECRET]),
)


def _jaas_option(t: tuple[str, str, bool]) -> str:
    key, value, quoted = t
    if quoted:
        return f'{key}="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{key}={value}"


jaas_texts = st.one_of(
    st.tuples(
        st.sampled_from(JAAS_MODULES),
        st.sampled_from(["required", "REQUIRED", "optional", "sufficient", "requisite", "must",
                         ""]),
        st.lists(st.tuples(st.sampled_from(JAAS_KEYS), jaas_values, st.booleans())
                 .map(_jaas_option), max_size=5),
        st.sampled_from([";", "", ";;", "; x required;", " ;\n"]),
    ).map(lambda t: f"{t[0]} {t[1]} {' '.join(t[2])}{t[3]}"),
    random_text,
)
hosts = st.one_of(
    st.sampled_from(["h", "localhost", "127.0.0.1", "[::1]", "[::1", "::1", "a..b", "x" * 70,
                     "é" * 70, "a b", "\x00", "", "b-1.c.kafka.eu-west-1.amazonaws.com",
                     "PLAINTEXT://h", "[]", "[::1]x", "h:1:2"]),
    tricky_text,
)
servers = st.one_of(
    st.lists(st.tuples(hosts, st.one_of(st.none(), numbers.map(str), number_text)).map(
        lambda t: t[0] if t[1] is None else f"{t[0]}:{t[1]}"), max_size=4).map(",".join),
    random_text,
)
pem_text = st.one_of(
    st.binary(max_size=120).map(lambda b: "-----BEGIN CERTIFICATE-----\n" + b.hex() +
                                "\n-----END CERTIFICATE-----\n"),
    st.sampled_from(["-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                     "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----",
                     "-----BEGIN ", SECRET]),
    random_text,
)


def _choices(*words: str) -> st.SearchStrategy[str]:
    return st.one_of(_mutated_case(list(words)), random_text)


# Files some path options are pointed at: random bytes, a directory, a missing path.
_TMP = tempfile.mkdtemp(prefix="kafkawire-fuzz-")
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


@st.composite
def file_paths(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["random", "text", "missing", "dir", "nul", "raw"]))
    if kind == "raw":
        return draw(random_text)
    if kind == "missing":
        return os.path.join(_TMP, "no", "such", "file")
    if kind == "dir":
        return _TMP
    if kind == "nul":
        return _TMP + "/a\x00b"
    data = draw(st.binary(max_size=200)) if kind == "random" else \
        draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    fd, path = tempfile.mkstemp(dir=_TMP)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


PATH_OPTIONS = {"kafkaConfigFile", "kafka.ssl.truststore.location", "kafka.ssl.ca.location",
                "kafka.ssl.keystore.location", "kafka.ssl.certificate.location",
                "kafka.ssl.key.location", "kafka.sasl.kerberos.keytab"}

VALUE_STRATEGIES: dict[str, st.SearchStrategy[str]] = {
    "kafka.bootstrap.servers": servers,
    "startingOffsets": _offsets_doc(offset_values),
    "endingOffsets": _offsets_doc(offset_values),
    "startingOffsetsByTimestamp": _offsets_doc(offset_values),
    "endingOffsetsByTimestamp": _offsets_doc(offset_values),
    "startingTimestamp": number_text,
    "endingTimestamp": number_text,
    "assign": assign_docs,
    "subscribe": topic_lists,
    "topic": topic_lists,
    "subscribePattern": regexes,
    "maxTriggerDelay": durations,
    "kafka.sasl.jaas.config": jaas_texts,
    "kafka.acks": _choices("all", "-1", "0", "1", "2", "-2", "leader"),
    "kafka.compression.type": _choices("none", "gzip", "snappy", "lz4", "zstd", "brotli",
                                       "producer"),
    "kafka.partitioner": _choices("murmur2_random", "murmur2", "consistent_random",
                                  "consistent", "fnv1a_random", "fnv1a", "random", "default"),
    "kafka.isolation.level": _choices("read_committed", "read_uncommitted", "READ-COMMITTED"),
    "kafka.security.protocol": _choices("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL",
                                        "TLS"),
    "kafka.sasl.mechanism": _choices("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER",
                                     "GSSAPI", "SCRAM", "AWS_MSK_IAM"),
    "commitOffsets": _choices("none", "kafka", "zookeeper", "both", "all"),
    "startingOffsetsByTimestampStrategy": _choices("error", "latest", "earliest"),
    "kafka.broker.version.fallback": _choices("0.8.2", "0.9.0", "0.10.0", "0.10.2.1", "2.8",
                                              "0", "0.", "1.2.3.4.5", "99999999999999999999"),
    "kafka.ssl.enabled.protocols": st.one_of(
        st.lists(_mutated_case(["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3", "SSLv3", ""]),
                 max_size=3).map(",".join), random_text),
    "kafka.ssl.protocol": _choices("TLS", "TLSv1.2", "TLSv1.3", "SSL", "TLSv1.4"),
    "kafka.ssl.endpoint.identification.algorithm": _choices("https", "", "none", "http"),
    "kafka.ssl.truststore.type": _choices("JKS", "PKCS12", "PEM", "P12"),
    "kafka.ssl.keystore.type": _choices("JKS", "PKCS12", "PEM", "P12"),
    "kafka.ssl.cipher.suites": st.one_of(
        st.lists(_mutated_case(["ECDHE-RSA-AES128-GCM-SHA256", "AES256-SHA", "NOPE", ""]),
                 max_size=3).map(",".join), random_text),
    "kafka.ssl.truststore.certificates": pem_text,
    "kafka.ssl.keystore.certificate.chain": pem_text,
    "kafka.ssl.keystore.key": pem_text,
    "kafka.sasl.login.refresh.window.factor": number_text,
    "kafka.sasl.login.refresh.window.jitter": number_text,
    "kafka.sasl.oauthbearer.token.endpoint.url": _choices(
        "https://idp/token", "http://idp", "file:/tmp/token", "ftp://x", "", "https://[::1",
        "https://h:x/", "http:///t", "https://h/a b"),
    "kafka.sasl.login.callback.handler.class": _choices(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler", "com.Custom"),
    "kafka.sasl.oauthbearer.token.provider": _choices("os:getcwd", "no.such:module", ":", "a."),
    "zookeeper.connect": _choices("zk:2181", "zk:2181/chroot", "", ","),
    "kafka.sasl.username": st.one_of(random_text, st.just(SECRET)),
    "kafka.sasl.password": st.one_of(random_text, st.just(SECRET)),
    "kafka.ssl.truststore.password": st.one_of(random_text, st.just(SECRET)),
    "kafka.ssl.keystore.password": st.one_of(random_text, st.just(SECRET)),
    "kafka.ssl.key.password": st.one_of(random_text, st.just(SECRET)),
}


def values_for(opt: Option) -> st.SearchStrategy[str]:
    if opt.name in VALUE_STRATEGIES:
        return VALUE_STRATEGIES[opt.name]
    if opt.name in PATH_OPTIONS:
        return file_paths()
    if opt.kind is Kind.BOOL:
        return bool_text
    if opt.kind in (Kind.INT, Kind.BYTES, Kind.COUNT):
        return number_text
    return random_text


# ------------------------------------------------------------------------------ invariants


def _in(value: int, low: int, high: int, what: str) -> None:
    assert isinstance(value, int) and not isinstance(value, bool), what
    assert low <= value <= high, f"{what} = {value} is outside [{low}, {high}]"


def _check_topic(name: str) -> None:
    check_topic_name(name, "test")  # raises for an illegal name: it must not have parsed


def _check_limit(limit: Any) -> None:
    if isinstance(limit, GroupStart):
        return
    if isinstance(limit, OffsetSpec):
        items = limit.specific.items()
        low = -2
    else:
        assert isinstance(limit, TimestampSpec)
        if limit.timestamp is not None:
            _in(limit.timestamp, 0, INT64_MAX, "timestamp")
        items = limit.specific.items()
        low = 0
    for (topic, partition), value in items:
        _check_topic(topic)
        _in(partition, 0, INT32_MAX, "partition")
        _in(value, low, INT64_MAX, "offset or timestamp")


def _check_source(o: SourceOptions) -> None:
    s = o.strategy
    if isinstance(s, (Subscribe, Assign)):
        for t in s.topics:
            _check_topic(t)
    if isinstance(s, Assign):
        for _, p in s.partitions:
            _in(p, 0, INT32_MAX, "assigned partition")
    if isinstance(s, SubscribePattern):
        s.regex.search("x" * MAX_TOPIC_LENGTH)
    _check_limit(o.starting)
    _check_limit(o.ending)
    f = o.fetch
    # The Fetch request carries these as int32: encoding must work.
    FETCH.encode_request(4, {
        "replica_id": -1, "max_wait_ms": f.max_wait_ms, "min_bytes": f.min_bytes,
        "max_bytes": min(f.max_partition_fetch_bytes, f.fetch_max_bytes),
        "isolation_level": f.isolation_level,
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                  "partition_max_bytes": f.fetch_max_bytes}]}]})
    _check_client(o.client)
    for v in (o.min_partitions, o.max_records_per_partition):
        if v is not None:
            _in(v, 1, INT64_MAX, "split setting")


def _strict_json(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in JSON meant for a broker: {text[:80]}")
    return json.loads(text, parse_constant=refuse)


def _check_host(host: str) -> None:
    assert host and host.isprintable() and not any(c.isspace() for c in host), repr(host)
    if ":" not in host:
        host.encode("idna")  # what the socket layer does with it


def _check_client(c: ClientConfig) -> None:
    for host, port in c.bootstrap_servers:
        _in(port, 1, 65535, "port")
        _check_host(host)
    for v in (c.request_timeout_ms, c.connect_timeout_ms, c.retry_backoff_ms,
              c.retry_backoff_max_ms):
        _in(v, 0, INT32_MAX, "client timeout")
    oauth = c.sasl.oauth if c.sasl is not None else None
    if oauth is not None:
        _strict_json(oauth.claims_json)
        _in(oauth.lifetime_s, 1, INT64_MAX // 10**6, "token lifetime")
        if oauth.source == "oidc":
            parts = urlsplit(oauth.endpoint_url)  # what urllib does with it
            assert parts.port is None or parts.port >= 0
            assert parts.hostname or parts.scheme == "file"


def _check_stream(o: StreamOptions) -> None:
    _check_source(o.source)
    _check_limit(o.starting)
    _in(o.max_trigger_delay_ms, 0, INT64_MAX, "maxTriggerDelay")
    for v in (o.max_offsets_per_trigger, o.min_offsets_per_trigger):
        if v is not None:
            _in(v, 1, INT64_MAX, "offsets per trigger")


def _check_sink(o: SinkOptions) -> None:
    _check_client(o.client)
    if o.topic is not None:
        _check_topic(o.topic)
    p = o.produce
    for v in (p.timeout_ms, p.retries, p.delivery_timeout_ms, p.batch_size, p.max_request_size,
              p.max_in_flight):
        _in(v, 0, INT32_MAX, "producer setting")
    if o.create.explicit:
        _in(o.create.partitions, -1, INT32_MAX, "createTopicPartitions")
        _in(o.create.replication_factor, -1, 2**15 - 1, "createTopicReplicationFactor")


STRATEGIES = ("subscribe", "subscribePattern", "assign")  # exactly one is given


def _parsers(opt: Option) -> list[tuple[str, Callable[[dict[str, str]], Any],
                                        Callable[[Any], None], dict[str, str]]]:
    where = opt.uses | opt.ignored_in
    out: list[tuple[str, Callable[[dict[str, str]], Any], Callable[[Any], None],
                    dict[str, str]]] = []
    read = {} if opt.name in STRATEGIES else {"subscribe": "t"}
    if where & Use.READ:
        out.append(("read", parse_source_options, _check_source, read))
    if where & Use.STREAM_READ:
        out.append(("stream", parse_stream_options, _check_stream, read))
    if where & SINK:
        out.append(("write", parse_sink_options, _check_sink, {}))
        out.append(("write", parse_sink_options, _check_sink, {"createTopic": "true"}))
    return out


def _names(opt: Option) -> tuple[str, ...]:
    return (opt.name.lower(), *RELATED.get(opt.name, ()))


def expect_typed(call: Callable[[], Any], names: tuple[str, ...], secret: str | None = None
                 ) -> Any:
    """``call()``'s result, or None after a ConfigurationError naming one of ``names``; any
    other exception fails the test (pytest shows it with its traceback)."""
    try:
        return call()
    except ConfigurationError as exc:
        message = str(exc)
        assert any(n.lower() in message.lower() for n in names), \
            f"the error does not name {names[0]}: {message}"
        if secret:
            assert secret not in message, f"a secret shows in: {message}"
        return None


READ_OPTIONS = [o for o in OPTIONS if _parsers(o)]


def test_every_option_is_fuzzed() -> None:
    missing = [o.name for o in OPTIONS if not _parsers(o)]
    assert not missing, f"options no parser reads: {missing}"


@pytest.mark.skipif(GSSAPI_MISSING is not None, reason=str(GSSAPI_MISSING))
def test_the_gssapi_context_is_fuzzed_where_the_kerberos_extra_is() -> None:
    assert CONTEXTS["gssapi"] is GSSAPI


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_contexts_parse(context: str) -> None:
    base = {**SERVERS, **CONTEXTS[context]}
    parse_source_options({**base, "subscribe": "t"})
    parse_stream_options({**base, "subscribe": "t"})
    parse_sink_options(base)


@pytest.mark.parametrize("opt", READ_OPTIONS, ids=[o.name for o in READ_OPTIONS])
@pytest.mark.filterwarnings("ignore:ssl.TLSVersion:DeprecationWarning")  # TLSv1/TLSv1.1
@FUZZ
@given(data=st.data())
def test_option_values(opt: Option, data: st.DataObject) -> None:
    """Each option, with the batch read, stream read and write parsers that take it."""
    side, parse, check, extra = data.draw(st.sampled_from(_parsers(opt)), label="parser")
    value = data.draw(values_for(opt), label="value")
    context = data.draw(st.sampled_from(sorted(CONTEXTS)), label="context")
    spelled = data.draw(st.sampled_from([opt.name, opt.key, opt.name.upper()]), label="key")
    options = {**SERVERS, **CONTEXTS[context], **extra}
    options = {k: v for k, v in options.items() if k.lower() != opt.key}
    options[spelled] = value
    secret = SECRET if opt.name in SECRET_OPTIONS else None
    parsed = expect_typed(lambda: parse(options), _names(opt), secret)
    if parsed is not None:
        # refused on the sides it is used on; the other side may accept it without effect
        side_use = {"read": Use.READ, "stream": Use.STREAM_READ, "write": SINK}[side]
        if opt.refused is not None and opt.uses & side_use:
            pytest.fail(f"{opt.name} is refused by the {side} parser but {value!r} was "
                        "accepted")
        check(parsed)


# Values these fuzzers found, each once a crash (the exception it raised before its fix), kept
# so that every run tries them whatever the generated examples are.
_UNSECURED = f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="u" '
FOUND = [
    ("kafkaConfigFile", "a\x00b", {}),  # ValueError: embedded null byte
    ("kafka.ssl.ca.location", "a\x00b", CONTEXTS["ssl"]),  # ValueError: embedded null byte
    ("kafka.sasl.kerberos.keytab", "a\x00b",  # ValueError: embedded null byte
     {**GSSAPI, "kafka.sasl.kerberos.principal": "u@R"}),
    ("startingOffsets", '{"t":{"0":' + "9" * 5000 + "}}", {}),  # ValueError: int digits limit
    ("startingOffsets", '{"t":' + "[" * 3000 + "]" * 3000 + "}", {}),  # RecursionError
    ("startingOffsets", '{"t":{"-1":5}}', {}),  # accepted, partition -1
    ("startingOffsets", '{"t":{"0":9223372036854775808}}', {}),  # accepted: struct.error later
    ("startingOffsets", '{"":{"0":1}}', {}),  # accepted: no topic may have that name
    ("endingOffsetsByTimestamp", '{"t":{"0":' + "[" * 3000 + "}}", {}),  # RecursionError
    ("assign", '{"t":[' + "[" * 3000 + "]" * 3000 + "]}", {}),  # RecursionError
    ("assign", '{"t":[2147483648]}', {}),  # accepted: struct.error in ListOffsets
    ("startingTimestamp", "9223372036854775808", {}),  # accepted: struct.error in ListOffsets
    ("subscribe", "x" * 40000, {}),  # accepted: struct.error (int16 string length)
    ("subscribe", "a b", {}),  # accepted: not a topic name
    ("subscribePattern", "a{4294967296}", {}),  # OverflowError
    ("subscribePattern", "(" * 2000 + ")" * 2000, {}),  # RecursionError
    ("subscribePattern", "(?<env>prod)-.*", {}),  # re.error, now with a hint for Java syntax
    ("maxTriggerDelay", "9" * 5000, {}),  # ValueError: int digits limit
    ("maxTriggerDelay", "9" * 400 + "us", {}),  # OverflowError: int too large for float
    ("kafka.request.timeout.ms", "2147483648", {}),  # accepted: struct.error in Produce
    ("kafka.fetch.max.wait.ms", "99999999999", {}),  # accepted: struct.error in Fetch
    ("kafka.retry.backoff.ms", "10000000000000000", {}),  # accepted: OverflowError in sleep
    ("kafka.socket.connection.setup.timeout.ms", "10000000000000000", {}),  # OverflowError
    ("createTopicReplicationFactor", "40000", {"createTopic": "true"}),  # struct.error (int16)
    ("maxOffsetsPerTrigger", "9223372036854775808", {}),  # accepted beyond a long
    ("minPartitions", "١٢", {}),  # accepted as 12 (Arabic-Indic digits)
    ("kafka.bootstrap.servers", "a..b:9092", {}),  # UnicodeError at connect (IDNA)
    ("kafka.bootstrap.servers", "[::1", {}),  # accepted as ::1
    ("kafka.bootstrap.servers", "h:٩٠٩٢", {}),  # accepted as port 9092
    ("kafka.ssl.enabled.protocols", ",", CONTEXTS["ssl"]),  # IndexError
    ("kafka.ssl.cipher.suites", "NOPE", CONTEXTS["ssl"]),  # named kafka.ssl.* only
    ("kafka.sasl.jaas.config", _UNSECURED + 'unsecuredLoginLifetimeSeconds="nan";',
     CONTEXTS["oauth_unsecured"]),  # ValueError: cannot convert float NaN to integer
    ("kafka.sasl.jaas.config", _UNSECURED + 'unsecuredLoginLifetimeSeconds="1e999";',
     CONTEXTS["oauth_unsecured"]),  # OverflowError: cannot convert float infinity
    ("kafka.sasl.jaas.config", _UNSECURED + 'unsecuredLoginNumberClaim_n="nan";',
     CONTEXTS["oauth_unsecured"]),  # accepted: NaN in the token's JSON
    ("kafka.sasl.oauthbearer.token.endpoint.url", "https://idp/token",
     CONTEXTS["oauth_unsecured"]),  # the error named kafka.sasl.jaas.config only
    ("kafka.sasl.oauthbearer.token.endpoint.url", "https://[::1/token",
     CONTEXTS["oauth_oidc"]),  # accepted: ValueError at the first token request
    ("kafka.sasl.oauthbearer.token.endpoint.url", "https://idp:port/token",
     CONTEXTS["oauth_oidc"]),  # accepted: ValueError at the first token request
    ("topic", "t\x00", {}),  # accepted: not a topic name
    ("kafka.client.id", "x" * 32768, {}),  # accepted: struct.error in every request header
    ("kafka.group.id", "é" * 20000, {}),  # accepted: struct.error in OffsetCommit
]


@pytest.mark.parametrize(("name", "value", "context"), FOUND,
                         ids=[f"{n}={v[:20]!r}" for n, v, _ in FOUND])
def test_found_values_fail_naming_the_option(name: str, value: str, context: dict) -> None:
    if context.get("kafka.sasl.mechanism") == "GSSAPI" and GSSAPI_MISSING is not None:
        pytest.skip(GSSAPI_MISSING)
    opt = next(o for o in OPTIONS if o.name == name)
    uses = {"read": Use.READ, "stream": Use.STREAM_READ, "write": SINK}
    for kind, parse, _, extra in _parsers(opt):
        if not opt.uses & uses[kind]:
            continue  # accepted and ignored there
        options = {**SERVERS, **context, **extra, name: value}
        with pytest.raises(ConfigurationError) as info:
            parse(options)
        assert name.lower() in str(info.value).lower(), str(info.value)


# ------------------------------------------------------------------------ single parsers


@FUZZ
@given(servers)
@example("a..b:1,[::1]:2")
@example("\x1b:1")
def test_bootstrap_servers(text: str) -> None:
    found = expect_typed(lambda: parse_bootstrap(text), ("kafka.bootstrap.servers",))
    for host, port in found or ():
        _in(port, 1, 65535, "port")
        _check_host(host)


@settings(FUZZ, max_examples=60)
@given(jaas_texts, _mutated_case(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]))
def test_jaas(text: str, mechanism: str) -> None:
    expect_typed(lambda: parse_jaas(text), ("kafka.sasl.jaas.config",), SECRET)
    expect_typed(lambda: jaas_credentials(text, mechanism.strip().upper()),
                 ("kafka.sasl.jaas.config",), SECRET)


@settings(FUZZ, max_examples=60)
@given(durations)
@example("9" * 5000)
@example("9" * 400 + "us")
def test_durations(text: str) -> None:
    ms = expect_typed(lambda: parse_duration_ms(text, "maxTriggerDelay"), ("maxTriggerDelay",))
    if ms is not None:
        _in(ms, 0, INT64_MAX, "duration")


# ------------------------------------------------------------------ .properties files


properties_lines = st.lists(st.one_of(
    st.tuples(tricky_text, st.sampled_from(["=", ":", " ", " = ", "\\=", ""]),
              st.one_of(tricky_text, st.sampled_from([
                  "${env:HOME}", "${env:NO_SUCH_VAR_KAFKAWIRE}", "${env::HOME}", "${env:}",
                  "${file:/nonexistent:k}", "${file::k}", "${directory:/tmp:../etc/passwd}",
                  "${directory:/nonexistent:f}", "${vault:secret/x:k}", "${env:a\x00b}",
                  "${file:/tmp/a\x00b:k}", "${directory:/tmp:a\x00b}", "\\u12", "\\uZZZZ",
                  "\\u00e9", "a\\", "\\\\", "${", "${}", "}${env:HOME"]))).map("".join),
    tricky_text,
), max_size=6).map(lambda lines: "\n".join(lines))


@settings(FUZZ, max_examples=80)
@given(properties_lines, st.sampled_from(["\n", "\r\n", "\r"]))
@example("k=${file:\x00:x}", "\n")
@example("k=${directory:/tmp:a\x00b}", "\n")
def test_properties_text(text: str, newline: str) -> None:
    text = text.replace("\n", newline)
    props = expect_typed(lambda: parse_properties(text, "client.properties"),
                         ("client.properties",))
    if props is not None:
        expect_typed(lambda: resolve_placeholders(props, "client.properties"),
                     ("client.properties",))


@settings(FUZZ, max_examples=40)
@given(st.one_of(st.binary(max_size=300), properties_lines.map(str.encode)))
def test_properties_file(data: bytes) -> None:
    fd, path = tempfile.mkstemp(dir=_TMP, suffix=".properties")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    expect_typed(lambda: file_kafka_options(path), ("kafkaConfigFile", path))


# ------------------------------------------------------------------ checkpoint offsets

checkpoint_docs = st.one_of(
    json_any,
    st.dictionaries(st.one_of(topic_names, st.just("@start")), st.one_of(
        st.dictionaries(partition_keys, offset_values, max_size=3), json_any), max_size=3),
    st.dictionaries(st.just("@start"), json_any, max_size=1),
    st.dictionaries(st.one_of(topic_names, st.just("@tasks")), st.one_of(
        st.dictionaries(partition_keys, offset_values, max_size=3), st.integers(-3, 2**32),
        json_any), max_size=3),
)


@settings(FUZZ, max_examples=150)
@given(checkpoint_docs, checkpoint_docs)
def test_checkpoint_offsets(start: Any, end: Any) -> None:
    """A corrupt checkpoint fails with CheckpointError naming the value that is wrong."""
    for call in (lambda: from_json(start), lambda: batch_start(start, end)):
        try:
            offsets = call()
        except CheckpointError as exc:
            assert "checkpoint" in str(exc)
            continue
        for (topic, partition), offset in offsets.items():
            assert isinstance(topic, str)
            _in(partition, 0, INT32_MAX, "checkpoint partition")
            _in(offset, -2, INT64_MAX, "checkpoint offset")
    try:
        tasks = recorded_tasks(end)
    except CheckpointError as exc:
        assert "checkpoint" in str(exc)
        return
    if tasks is not None:
        _in(tasks, 1, INT32_MAX, "recorded task count")


# --------------------------------------------------------------------- the command line


@settings(FUZZ, max_examples=100)
@given(st.one_of(number_text, random_text, st.sampled_from([
    "2026-05-01T12:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-23:59",
    "1969-12-31", "2026-13-01", "earliest", "LATEST", "z", "Z", "T", "+00:00"])))
def test_cli_times(text: str) -> None:
    import click

    try:
        when = WhenType().convert(text, None, None)
    except click.BadParameter:
        return
    if when.epoch_ms is not None:
        _in(when.epoch_ms, 0, INT64_MAX, "--at")
    str(when)


@settings(FUZZ, max_examples=100)
@given(st.integers(-(2**63), 2**63 - 1))
def test_record_timestamps_always_print(ms: int) -> None:
    """A broker may put any int64 in a record's timestamp: printing it never fails."""
    assert format_ms(ms)


def test_split_ranges_with_huge_min_partitions_is_quick() -> None:
    ranges = [OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 0, 5)]
    pieces = split_ranges(ranges, INT32_MAX, None)
    assert sum(r.size for r in pieces) == 15 and len(pieces) == 15


@settings(FUZZ, max_examples=100)
@given(st.one_of(st.binary(max_size=200),
                 st.binary(max_size=200).map(lambda b: b"\x05\x02" + b)))
def test_keytab_bytes(data: bytes) -> None:
    found = keytab_principals(data)
    assert found is None or all(isinstance(p, str) for p in found)
