"""Kafka client config files (kafkaConfigFile, options_from_properties): Java's .properties
syntax (checked against the JDK's own java.util.Properties in
tests/integration/test_java_properties.py, which runs a JVM); KIP-297/KIP-887 placeholders; how
the file's keys merge with explicit options for a read and a write; no secret in any error."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import spark_kafka_wire
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options, parse_stream_options
from tests.support.errors import raises_condition

SECRET = "s3cr3t-V@lue"

# Kafka's declaration of the three providers kafkawire implements (KIP-297): a placeholder
# resolves only through a declared provider.
_PACKAGE = "org.apache.kafka.common.config.provider."
PROVIDERS = ("config.providers=env,file,directory\n"
             f"config.providers.env.class={_PACKAGE}EnvVarConfigProvider\n"
             f"config.providers.file.class={_PACKAGE}FileConfigProvider\n"
             f"config.providers.directory.class={_PACKAGE}DirectoryConfigProvider\n")


def _write(tmp_path: Path, text: str, name: str = "client.properties") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_options_from_properties_prefixes_and_resolves(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KW_TEST_PASSWORD", SECRET)
    secrets = _write(tmp_path, f"password={SECRET}x\n", "secrets.properties")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "token").write_text("tok-123")
    path = _write(tmp_path, (
        PROVIDERS +
        "bootstrap.servers=b:9092\n"
        "sasl.password=${env:KW_TEST_PASSWORD}\n"
        "sasl.username=${env::KW_TEST_PASSWORD}-user\n"
        f"ssl.key.password=${{file:{secrets}:password}}\n"
        f"sasl.jaas.config=x required token=\"${{directory:{tmp_path / 'dir'}:token}}\";\n"))
    got = spark_kafka_wire.options_from_properties(path)
    assert got == {"kafka.bootstrap.servers": "b:9092", "kafka.sasl.password": SECRET,
                   "kafka.sasl.username": f"{SECRET}-user",
                   "kafka.ssl.key.password": f"{SECRET}x",
                   "kafka.sasl.jaas.config": 'x required token="tok-123";'}


@pytest.mark.parametrize(("text", "message"), [
    ("sasl.password=${env:KW_UNSET_VARIABLE}", "sasl.password: placeholder .*KW_UNSET_VARIABLE"
     ".* is not set"),
    ("sasl.password=${vault:secret/kafka:pw}", "config provider 'vault' is not declared"),
    ("sasl.password=${file:/nonexistent/x.properties:pw}", "cannot read '/nonexistent"),
    ("sasl.password=${file:SECRETS:missing}", "has no key 'missing'"),
    ("sasl.password=${directory:DIR:../escape}", "is not a file name"),
    ("bad=\\u12G4", "malformed"),
])
def test_placeholder_errors_name_the_key_never_a_value(tmp_path, text, message) -> None:
    secrets = _write(tmp_path, f"pw={SECRET}\n", "secrets.properties")
    path = _write(tmp_path, PROVIDERS
                  + text.replace("SECRETS", secrets).replace("DIR", str(tmp_path)))
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                          message) as info:
        spark_kafka_wire.options_from_properties(path)
    assert SECRET not in str(info.value)


def test_unreadable_file_is_a_clear_error(tmp_path) -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                          "kafkaConfigFile: cannot read"):
        spark_kafka_wire.options_from_properties(tmp_path / "missing.properties")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.MISSING_OPTION",
                          "kafkaConfigFile is empty"):
        parse_source_options({"kafkaConfigFile": " ", "subscribe": "t"})


CLIENT_PROPERTIES = (
    "bootstrap.servers=from-file:9092\n"
    "security.protocol=SASL_PLAINTEXT\n"
    "sasl.mechanism=SCRAM-SHA-512\n"
    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
    f"username=\"alice\" password=\"{SECRET}\";\n"
    "client.id=from-file\n"
    "acks=1\n"
    "fetch.max.bytes=1048576\n"
    "key.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
    "schema.registry.url=https://sr.example\n"
    "session.timeout.ms=45000\n"
)


def test_a_read_takes_what_it_uses_and_explicit_options_win(tmp_path, caplog) -> None:
    path = _write(tmp_path, CLIENT_PROPERTIES)
    with caplog.at_level(logging.WARNING, logger="spark_kafka_wire.options"):
        source = parse_source_options({"kafkaConfigFile": path, "subscribe": "t",
                                       "kafka.client.id": "explicit"})
    client = source.client
    assert client.bootstrap_servers == (("from-file", 9092),)
    assert client.client_id == "explicit"
    assert client.sasl is not None and client.sasl.username == "alice"
    assert client.sasl.password == SECRET
    assert source.fetch.fetch_max_bytes == 1048576
    skipped = " ".join(r.getMessage() for r in caplog.records)
    assert "acks" in skipped and "key.serializer" in skipped and "schema.registry.url" in skipped
    assert SECRET not in skipped and SECRET not in repr(source)


def test_a_write_takes_acks_and_a_stream_its_group(tmp_path) -> None:
    path = _write(tmp_path, CLIENT_PROPERTIES + "group.id=lag-group\n")
    sink = parse_sink_options({"kafkaConfigFile": path, "topic": "t"})
    assert sink.produce.acks == 1
    assert sink.client.sasl is not None and SECRET not in repr(sink)
    stream = parse_stream_options({"kafkaConfigFile": path, "subscribe": "t",
                                   "commitOffsets": "kafka"})
    assert stream.group_id == "lag-group"


def test_security_keys_are_never_skipped(tmp_path) -> None:
    """An ssl.* key with PLAINTEXT is refused as when given explicitly: a config file must not
    silently connect with less security than it says."""
    path = _write(tmp_path, "bootstrap.servers=b:9092\nssl.truststore.location=/x.p12\n")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS",
                          "kafka.ssl.truststore.location' is set but"):
        parse_source_options({"kafkaConfigFile": path, "subscribe": "t"})


# ------------------------------------------------ placeholders need declared providers (#27)


@pytest.fixture
def no_operator_settings(monkeypatch, tmp_path):
    """No spark-defaults.conf and no KAFKAWIRE_CONFIG_PROVIDERS* variables: Kafka's rules
    alone, until a test sets the operator's."""
    from spark_kafka_wire.client.operator import forget_cached_settings

    for name in ("SPARK_CONF_DIR", "SPARK_HOME", "KAFKAWIRE_CONFIG_PROVIDERS",
                 "KAFKAWIRE_CONFIG_PROVIDERS_ALLOWED_PATHS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-spark-conf"))
    forget_cached_settings()
    yield
    forget_cached_settings()


def _secrets_file(tmp_path: Path) -> str:
    return _write(tmp_path, f"db.password={SECRET}\nroot={SECRET}:0:0\n", "secrets.properties")


@pytest.mark.usefixtures("no_operator_settings")
def test_an_undeclared_provider_is_refused_without_reading(tmp_path) -> None:
    """Kafka resolves ${file:...} only through a provider named in config.providers; a file
    that declares none gets an error saying how to declare one, never the value."""
    secrets = _secrets_file(tmp_path)
    path = _write(tmp_path, f"bootstrap.servers=b:9092\n"
                  f"security.protocol=${{file:{secrets}:db.password}}\n")
    for call in (lambda: parse_source_options({"kafkaConfigFile": path, "subscribe": "t"}),
                 lambda: spark_kafka_wire.options_from_properties(path)):
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                              r"security.protocol: placeholder "
                           r"\$\{file:\.\.\.\}: config provider 'file' is not declared.*"
                           r"config.providers=file and config.providers.file.class="
                           r"org.apache.kafka.common.config.provider.FileConfigProvider") as e:
            call()
        assert SECRET not in str(e.value)


@pytest.mark.usefixtures("no_operator_settings")
def test_a_value_from_a_placeholder_is_named_by_it_never_shown(tmp_path) -> None:
    """The validators name the placeholder a wrong value came from: 'got the value from
    ${file:...:db.password}', never 'got S3CRET'."""
    secrets = _secrets_file(tmp_path)
    placeholder = f"${{file:{secrets}:db.password}}"
    path = _write(tmp_path, PROVIDERS + f"bootstrap.servers=b:9092\n"
                  f"security.protocol={placeholder}\n")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE",
                          "kafka.security.protocol must be one of") as e:
        parse_source_options({"kafkaConfigFile": path, "subscribe": "t"})
    assert f"got the value from {placeholder}" in str(e.value)
    assert SECRET.upper() not in str(e.value).upper()
    # the same for kafka.* options, declaring their providers as kafka.config.providers*
    os_env = {"kafka.config.providers": "f", "kafka.config.providers.f.class":
              "org.apache.kafka.common.config.provider.FileConfigProvider"}
    options = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t", **os_env,
               "kafka.security.protocol": "SSL",
               "kafka.ssl.endpoint.identification.algorithm": f"${{f:{secrets}:root}}"}
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE",
                          "must be https or empty") as e:
        parse_source_options(options)
    assert SECRET not in str(e.value) and f"${{f:{secrets}:root}}" in str(e.value)


@pytest.mark.usefixtures("no_operator_settings")
def test_options_resolve_placeholders_through_kafka_config_providers(tmp_path) -> None:
    """kafka.* options resolve as the Java client resolves its configs (KIP-421): through
    the providers kafka.config.providers declares; undeclared, the placeholder is refused
    instead of sending a file's content to the broker as the client id."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "hostname").write_text("secret-host-name")
    placeholder = f"${{dir:{tmp_path / 'etc'}:hostname}}"
    options = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t",
               "kafka.client.id": placeholder}
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                          "config provider 'dir' is not declared.*"
                       "kafka.config.providers=dir and kafka.config.providers.dir.class="
                       ".*DirectoryConfigProvider"):
        parse_source_options(options)
    declared = {**options, "kafka.config.providers": "dir",
                "kafka.config.providers.dir.class":
                "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
                "kafka.config.providers.dir.param.allowed.paths": str(tmp_path)}
    assert parse_source_options(declared).client.client_id == "secret-host-name"
    assert parse_sink_options({**declared, "topic": "t"}).client.client_id == \
        "secret-host-name"
    stream = parse_stream_options(declared)  # options pass the resolution twice there
    assert stream.source.client.client_id == "secret-host-name"


@pytest.mark.usefixtures("no_operator_settings")
def test_allowed_paths_refuse_paths_outside_after_normalising(tmp_path) -> None:
    """KIP-993: config.providers.<name>.param.allowed.paths; '..' and symlinks out of an
    allowed directory are outside it."""
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    (other / "s.properties").write_text(f"pw={SECRET}\n")
    (allowed / "s.properties").write_text("pw=fine\n")
    (allowed / "link.properties").symlink_to(other / "s.properties")
    (allowed / "token").symlink_to(other / "s.properties")
    head = (PROVIDERS + f"config.providers.file.param.allowed.paths={allowed}\n"
            f"config.providers.directory.param.allowed.paths={allowed}\n"
            "bootstrap.servers=b:9092\n")
    ok = _write(tmp_path, head + f"sasl.password=${{file:{allowed}/s.properties:pw}}\n")
    assert spark_kafka_wire.options_from_properties(ok)["kafka.sasl.password"] == "fine"
    for target in (f"${{file:{other}/s.properties:pw}}",
                   f"${{file:{allowed}/../other/s.properties:pw}}",
                   f"${{file:{allowed}/link.properties:pw}}",
                   f"${{directory:{allowed}:token}}"):
        path = _write(tmp_path, head + f"sasl.password={target}\n")
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                              "is outside config.providers.(file|"
                           "directory).param.allowed.paths") as e:
            spark_kafka_wire.options_from_properties(path)
        assert SECRET not in str(e.value)
    relative = _write(tmp_path, PROVIDERS + "config.providers.file.param.allowed.paths=rel\n"
                      f"sasl.password=${{file:{allowed}/s.properties:pw}}\n")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                          "'rel' is not an absolute path"):
        spark_kafka_wire.options_from_properties(relative)


@pytest.mark.usefixtures("no_operator_settings")
def test_env_allowlist_pattern_must_match_the_whole_name(tmp_path, monkeypatch) -> None:
    """KIP-887: the env provider reads only variables whose whole name matches the pattern."""
    monkeypatch.setenv("KW_APP_PASSWORD", SECRET)
    monkeypatch.setenv("OTHER_KW_APP_PASSWORD", SECRET)
    head = PROVIDERS + "config.providers.env.param.allowlist.pattern=KW_APP_.*\n"
    good = _write(tmp_path, head + "sasl.password=${env:KW_APP_PASSWORD}\n")
    assert spark_kafka_wire.options_from_properties(good)["kafka.sasl.password"] == SECRET
    bad = _write(tmp_path, head + "sasl.password=${env:OTHER_KW_APP_PASSWORD}\n")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                          "'OTHER_KW_APP_PASSWORD' does not match "
                       "config.providers.env.param.allowlist.pattern") as e:
        spark_kafka_wire.options_from_properties(bad)
    assert SECRET not in str(e.value)


@pytest.mark.usefixtures("no_operator_settings")
@pytest.mark.parametrize(("declaration", "message"), [
    ("config.providers=vault\n", "config.providers.vault.class is not set"),
    ("config.providers=vault\nconfig.providers.vault.class=io.confluent.VaultProvider\n",
     "names a JVM class kafkawire cannot run"),
    ("config.providers=env\nconfig.providers.env.class=org.apache.kafka.common.config."
     "provider.EnvVarConfigProvider\nconfig.providers.env.param.allowed.path=/x\n",
     "param.allowed.path is not a parameter of the env provider"),
    ("config.providers=env\nconfig.providers.env.class=org.apache.kafka.common.config."
     "provider.EnvVarConfigProvider\nconfig.providers.env.param.allowlist.pattern=(\n",
     "allowlist.pattern is not a regular expression"),
])
def test_provider_declarations_kafkawire_cannot_honour_are_refused(tmp_path, declaration,
                                                                   message) -> None:
    path = _write(tmp_path, declaration + "sasl.password=${env:HOME}\n")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                          message):
        spark_kafka_wire.options_from_properties(path)


@pytest.mark.usefixtures("no_operator_settings")
def test_the_operator_restricts_what_queries_may_declare(tmp_path, monkeypatch) -> None:
    """spark.kafkawire.config.providers (KAFKAWIRE_CONFIG_PROVIDERS): the providers queries
    may declare, empty for none; ...allowed.paths: the directories file and directory
    providers may read, on top of what the query declares."""
    monkeypatch.setenv("KW_APP_PASSWORD", SECRET)
    secrets = _secrets_file(tmp_path)
    path = _write(tmp_path, PROVIDERS + "bootstrap.servers=b:9092\n"
                  f"sasl.username=${{file:{secrets}:db.password}}\n"
                  "sasl.password=${env:KW_APP_PASSWORD}\n")
    options = {"kafkaConfigFile": path, "subscribe": "t"}
    monkeypatch.setenv("KAFKAWIRE_CONFIG_PROVIDERS", "")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR",
                          "the env config provider is not allowed here; "
                       "the cluster operator allows it with spark.kafkawire.config.providers"):
        parse_source_options(options)
    monkeypatch.setenv("KAFKAWIRE_CONFIG_PROVIDERS", "env")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR",
                          "the file config provider is not allowed"):
        parse_source_options(options)
    monkeypatch.setenv("KAFKAWIRE_CONFIG_PROVIDERS", "env,file,directory")
    monkeypatch.setenv("KAFKAWIRE_CONFIG_PROVIDERS_ALLOWED_PATHS", str(tmp_path / "elsewhere"))
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR",
                          "outside the directories config providers "
                       "may read here; .*KAFKAWIRE_CONFIG_PROVIDERS_ALLOWED_PATHS") as e:
        parse_source_options(options)
    assert SECRET not in str(e.value)
    monkeypatch.setenv("KAFKAWIRE_CONFIG_PROVIDERS_ALLOWED_PATHS", str(tmp_path))
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS",
                          "kafka.sasl.username' is set but"):
        parse_source_options(options)  # resolved: the next check speaks


PASSWD = ("root:x:0:0:root:/root:/bin/bash\n"
          "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
          "alice-the-user:x:1000:1000:Alice,,,:/home/alice:/bin/bash\n")


@pytest.mark.usefixtures("no_operator_settings")
@pytest.mark.parametrize("text", [
    PASSWD,
    "127.0.0.1 localhost\n::1 ip6-localhost\n",  # /etc/hosts
    "alice-the-user\n",  # /etc/hostname
    "-----BEGIN CERTIFICATE-----\nMIIBalice-the-user==\n-----END CERTIFICATE-----\n",
    "bootstrap.servers=b:9092\nalice-the-user:x:1000:1000::/home/alice:/bin/sh\n",
])
def test_a_file_that_is_not_a_properties_file_is_refused_unlisted(tmp_path, caplog,
                                                                  text) -> None:
    """kafkaConfigFile=/etc/passwd used to warn 'skipped keys ...' with every user name."""
    path = _write(tmp_path, text, "passwd")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                          r"not a Kafka client properties file "
                       r"\(line \d+ is not key=value\)") as e:
        spark_kafka_wire.options_from_properties(path)
    with pytest.raises(ConfigurationError) as q:
        parse_source_options({"kafkaConfigFile": path, "subscribe": "t"})
    for message in (str(e.value), str(q.value), caplog.text):
        assert "alice" not in message and "daemon" not in message and "localhost" not in message
    # ${file:} of such a file is refused too, and never read into a value
    props = _write(tmp_path, PROVIDERS + f"bootstrap.servers=b:9092\nclient.id=${{file:{path}:"
                   "root}\n")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                          "not a Kafka client properties file"):
        spark_kafka_wire.options_from_properties(props)


@pytest.mark.usefixtures("no_operator_settings")
def test_query_options_cannot_tell_a_missing_file_from_an_unusable_one(tmp_path) -> None:
    """A query gets one message whether kafkaConfigFile is missing, unreadable or not a
    properties file (options cannot probe the driver's files); the CLI and
    options_from_properties, run by the file's own user, say which."""
    passwd = _write(tmp_path, PASSWD, "passwd")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    messages = set()
    for path in (passwd, str(binary), str(tmp_path / "missing"), str(tmp_path)):
        with pytest.raises(ConfigurationError) as e:
            parse_source_options({"kafkaConfigFile": path, "subscribe": "t"})
        messages.add(str(e.value).replace(repr(path), "PATH"))
    assert messages == {"[KAFKAWIRE_CONFIGURATION.CONFIG_FILE] kafkaConfigFile: cannot use PATH "
                        "(missing, "
                        "unreadable or not a properties file)"}
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFIG_FILE",
                          "cannot read .*missing"):
        spark_kafka_wire.options_from_properties(tmp_path / "missing")


def test_only_the_pieces_from_placeholders_are_marked(tmp_path, monkeypatch) -> None:
    """A JAAS entry with a placeholder: the password it resolved to is named by its
    placeholder in messages, the literal user name around it is not (it is no secret)."""
    from spark_kafka_wire.client.security.sasl.jaas import parse_jaas
    from spark_kafka_wire.options.config_files import resolve_placeholders
    from spark_kafka_wire.protocol.errors import FromPlaceholder, shown

    monkeypatch.setenv("KW_PW", "alice-and-more")
    resolved = resolve_placeholders({
        "config.providers": "env",
        "config.providers.env.class":
            "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        "sasl.jaas.config": 'x.PlainLoginModule required username="alice" '
                            'password="${env:KW_PW}";'}, "client.properties")
    _, options = parse_jaas(resolved["sasl.jaas.config"])
    assert options["username"] == "alice" and not isinstance(options["username"], FromPlaceholder)
    assert options["password"] == "alice-and-more"
    assert shown(options["password"]) == "the value from ${env:KW_PW}"
    # a secret cut by a quote of its own: every part of it stays marked
    monkeypatch.setenv("KW_PW", 'ab"cd')
    resolved = resolve_placeholders({
        "config.providers": "env",
        "config.providers.env.class":
            "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        "v": 'k="${env:KW_PW}"'}, "client.properties")
    value = resolved["v"]
    assert isinstance(value[3:5], FromPlaceholder) and not isinstance(value[:2], FromPlaceholder)
