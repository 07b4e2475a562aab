"""No text of a JAAS entry ever shows in an error (issue 27, item 6a).

``kafka.sasl.jaas.config`` holds passwords and client secrets, and a misplaced quote or word
moves one into any position: the module name, the flag, an option key, another option's
value. The parsers' errors therefore name positions and option keys kafkawire knows, never
what the entry holds. Hypothesis builds entries with a random secret in every position, well
formed and not, and feeds them to parse_jaas, jaas_credentials, kerberos_from_jaas and the
source option parser with each SASL mechanism.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.security.sasl.jaas import jaas_credentials, parse_jaas
from spark_kafka_wire.client.security.sasl.kerberos import kerberos_from_jaas
from spark_kafka_wire.source.options import parse_source_options

MODULES = [
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
    "com.sun.security.auth.module.Krb5LoginModule",
    "software.amazon.msk.auth.iam.IAMLoginModule",
]
KEYS = ["username", "password", "tokenauth", "useKeyTab", "keyTab", "principal",
        "useTicketCache", "serviceName", "ticketCache", "clientId", "clientSecret", "scope",
        "unsecuredLoginStringClaim_sub", "unsecuredLoginNumberClaim_n",
        "unsecuredLoginListClaim_l", "unsecuredLoginLifetimeSeconds",
        "unsecuredLoginPrincipalClaimName", "unsecuredLoginScopeClaimName",
        "unsecuredLoginExtension_x", "extension_traceId", "awsProfileName", "awsRoleArn"]
# Keys whose tail the user chooses: a secret there is part of an option key.
KEY_PREFIXES = ["", "extension_", "unsecuredLoginExtension_", "unsecuredLoginStringClaim_",
                "unsecuredLoginNumberClaim_", "unsecuredLoginListClaim_"]
URL = "https://idp.example/token"
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"]

# A secret: a marker no message holds, then random characters, some of them JAAS syntax.
secrets = st.builds(lambda tail: "Qx9" + tail,
                    st.text(alphabet=st.sampled_from('abcXYZ019_.-/@:"\\=; \t\'$'),
                            min_size=3, max_size=12))
# The same where a bare word must stand (a module name, a key): no space, quote, = or ;.
words = st.builds(lambda tail: "Qx9" + tail,
                  st.text(alphabet=st.sampled_from("abcXYZ019_.-/@:$"), min_size=3,
                          max_size=12))


@pytest.fixture(scope="module", autouse=True)
def operator_allows():
    """The token URL below is the operator's (client/operator.py), so entries get past the
    allow-list to the JAAS checks that follow it. Module-scoped: Hypothesis refuses
    function-scoped fixtures."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS", URL)
        yield


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def entries(draw: st.DrawFn) -> tuple[str, str]:
    """(JAAS text, the secret somewhere in it)."""
    secret = draw(st.one_of(secrets, words))
    word = draw(words)
    module = draw(st.sampled_from(MODULES))
    options = [f"{k}={_quoted(v)}" for k, v in draw(st.lists(
        st.tuples(st.sampled_from(KEYS), st.sampled_from(["true", "alice", "1", "a@B"])),
        max_size=4))]
    where = draw(st.sampled_from(["module", "flag", "key", "value", "bare value", "unclosed",
                                  "after end", "no end"]))
    flag = "required"
    if where == "module":
        module = word
        secret = word
    elif where == "flag":
        flag = word
        secret = word
    elif where == "key":
        secret = word
        key = draw(st.sampled_from(KEY_PREFIXES)) + word
        options.insert(draw(st.integers(0, len(options))),
                       f"{key}={_quoted(draw(st.sampled_from(['x', '1', 'nan', ''])))}")
    elif where == "value":
        key = draw(st.sampled_from(KEYS))
        options.insert(draw(st.integers(0, len(options))), f"{key}={_quoted(secret)}")
    elif where == "bare value":  # unquoted: JAAS syntax in it splits it into more tokens
        secret = word
        options.insert(draw(st.integers(0, len(options))),
                       f"{draw(st.sampled_from(KEYS))}={word}")
    elif where == "unclosed":
        options.append(f'{draw(st.sampled_from(KEYS))}="{secret}')
    end = "" if where in ("no end", "unclosed") else ";"
    text = f"{module} {flag} {' '.join(options)}{end}"
    if where == "after end":
        text += f" {word} required;"
        secret = word
    return text, secret


def _texts(exc: BaseException) -> str:
    """Everything an error shows: its message, its repr, and those of what it chains."""
    out = []
    seen: BaseException | None = exc
    while seen is not None:
        out += [str(seen), repr(seen)]
        seen = seen.__cause__ or seen.__context__
    return "\n".join(out)


def _no_secret(fn, secret: str) -> None:
    try:
        fn()
    except ConfigurationError as exc:
        assert secret not in _texts(exc), _texts(exc)


PROPERTY = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(entries(), st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]))
@example(("Qx9hunter2 required username=\"a\" password=\"b\";", "Qx9hunter2"), "PLAIN")
def test_jaas_parsers_never_show_the_entry(entry: tuple[str, str], mechanism: str) -> None:
    text, secret = entry
    _no_secret(lambda: parse_jaas(text), secret)
    _no_secret(lambda: jaas_credentials(text, mechanism), secret)

    def kerberos() -> None:
        module, options = parse_jaas(text)
        kerberos_from_jaas(module, options, None)

    _no_secret(kerberos, secret)


@PROPERTY
@given(entries(), st.sampled_from(MECHANISMS),
       st.sampled_from([{}, {"kafka.sasl.oauthbearer.token.endpoint.url":
                             URL}]))
@example(("Qx9hunter2 required;", "Qx9hunter2"), "GSSAPI", {})
@example(("Qx9hunter2 required;", "Qx9hunter2"), "OAUTHBEARER", {})
def test_source_options_never_show_the_entry(entry: tuple[str, str], mechanism: str,
                                              extra: dict[str, str]) -> None:
    text, secret = entry
    options = {"kafka.bootstrap.servers": "h:9092", "subscribe": "t",
               "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": mechanism,
               "kafka.sasl.jaas.config": text, **(extra if mechanism == "OAUTHBEARER" else {})}
    _no_secret(lambda: parse_source_options(options), secret)


@pytest.mark.parametrize("text", [
    'Qx9pw required username="a" password="b";',
    'org.apache.kafka.common.security.plain.PlainLoginModule Qx9pw username="a";',
])
def test_module_and_flag_positions_are_named(text: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        jaas_credentials(text, "PLAIN")
    assert "Qx9pw" not in str(info.value)
    assert "kafka.sasl.jaas.config" in str(info.value)
