"""TLS, SASL (PLAIN, SCRAM, OAUTHBEARER, GSSAPI) and ZooKeeper security from a query's
options, into the client layer's picklable settings.

Stores, keytabs and token settings are read and checked here, on the driver, so an unusable
setting fails before any task runs and executors need no such path; messages name options,
never their values. Java's names are the reference, librdkafka's are aliases. OAUTHBEARER's
token sources are ``oauth.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    INVALID_VALUE,
    MISSING_OPTION,
    SECURITY_SETTING,
    UNSUPPORTED_VALUE,
    ConfigurationError,
)
from spark_kafka_wire.client.security.sasl.config import MECHANISMS as SASL_MECHANISMS
from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.security.sasl.gssapi import load_gssapi
from spark_kafka_wire.client.security.sasl.jaas import (
    PLAIN_MODULE,
    SCRAM_MODULE,
    digest_credentials,
    jaas_credentials,
    parse_jaas,
)
from spark_kafka_wire.client.security.sasl.kerberos import (
    DEFAULT_SERVICE_NAME,
    KerberosConfig,
    kerberos_from_jaas,
    keytab_config,
)
from spark_kafka_wire.client.security.tls import (
    PROTOCOL_VERSIONS,
    TlsConfig,
    context_for,
    load_keystore,
    load_private_key,
    load_truststore,
    store_type,
    version_name,
)
from spark_kafka_wire.client.zookeeper.security import ZooKeeperSecurity, check_sasl_support
from spark_kafka_wire.options.oauth import oauth_config
from spark_kafka_wire.options.table import OPTIONS, Option, option
from spark_kafka_wire.options.values import bool_value, given, text_value
from spark_kafka_wire.protocol.errors import shown

# Settings that mean something only with zookeeper.ssl.client.enable=true.
_ZK_TLS_ONLY = tuple(o for o in OPTIONS if o.key.startswith("zookeeper.ssl.")
                     and o is not option("zookeeper.ssl.client.enable"))


def zookeeper_security(opts: Mapping[str, str]) -> ZooKeeperSecurity | None:
    """How to reach ``zookeeper.connect``: TLS from ``zookeeper.ssl.*`` (Kafka brokers' names,
    KIP-515: https://cwiki.apache.org/confluence/display/KAFKA/KIP-515%3A+Enable+ZK+client+to+use+the+new+TLS+supported+authentication)
    and a SASL DIGEST-MD5 login from ``zookeeper.sasl.jaas.config``; None for plain TCP.

    Stores are read here, on the driver, with the broker TLS loaders (JKS through keytool),
    into the same :class:`TlsConfig` of bytes. A store setting without
    ``zookeeper.ssl.client.enable=true`` is refused, as ``kafka.ssl.*`` without SSL is: it
    would otherwise connect in plaintext although a truststore was given. Messages name
    options, never their values.
    """
    tls: TlsConfig | None = None
    if bool_value(opts, "zookeeper.ssl.client.enable"):
        tls = _zookeeper_tls(opts)
    else:
        stray = [o.name for o in _ZK_TLS_ONLY if given(opts, o) is not None]
        if stray:
            raise ConfigurationError.of(
                CONFLICTING_OPTIONS, "ZOOKEEPER_TLS_OFF", stray=stray[0])
    user = password = None
    jaas_opt = option("zookeeper.sasl.jaas.config")
    jaas = given(opts, jaas_opt)
    if jaas is not None:
        user, password = digest_credentials(jaas, jaas_opt.name)
        check_sasl_support()
    if tls is None and user is None:
        return None
    return ZooKeeperSecurity(tls=tls, sasl_user=user, sasl_password=password)


def _zookeeper_tls(opts: Mapping[str, str]) -> TlsConfig:
    """``zookeeper.ssl.*`` read into a :class:`TlsConfig` (the CAs; a client certificate
    when a keystore is given; the host name check)."""
    cadata: str | None = None
    truststore = option("zookeeper.ssl.truststore.location")
    data = _read_file(opts, truststore)
    if data is not None:
        kind = store_type(data, given(opts, "zookeeper.ssl.truststore.type"),
                          "zookeeper.ssl.truststore")
        cadata = load_truststore(data, kind, given(opts, "zookeeper.ssl.truststore.password"),
                                 truststore.name)
    chain = key = None
    keystore = option("zookeeper.ssl.keystore.location")
    data = _read_file(opts, keystore)
    if data is not None:
        kind = store_type(data, given(opts, "zookeeper.ssl.keystore.type"),
                          "zookeeper.ssl.keystore")
        password = given(opts, "zookeeper.ssl.keystore.password")
        # Kafka's ZooKeeper client has no key password: the key is under the store's (a PEM
        # keystore's key only when encrypted)
        key_password = password if kind != "PEM" or b"ENCRYPTED" in data else None
        chain, key = load_keystore(data, kind, password, key_password, keystore.name)
    check = bool_value(opts, "zookeeper.ssl.endpoint.identification.enable")
    algorithm_opt = option("zookeeper.ssl.endpoint.identification.algorithm")
    algorithm = given(opts, algorithm_opt)
    if algorithm is not None:
        value = algorithm.strip().lower()
        if value not in ("https", ""):
            raise ConfigurationError.of(
                UNSUPPORTED_VALUE, "ZOOKEEPER_ENDPOINT_IDENTIFICATION", algorithm_opt=algorithm_opt.name,
                algorithm=shown(algorithm))
        enable = given(opts, "zookeeper.ssl.endpoint.identification.enable")
        if enable is not None and check != (value == "https"):
            raise ConfigurationError.of(
                CONFLICTING_OPTIONS, "ZOOKEEPER_HOSTNAME_CHECK",
                algorithm_opt=algorithm_opt.name)
        check = value == "https"
    tls = TlsConfig(cadata=cadata, cert_chain=chain, key=key, check_hostname=check)
    context_for(tls)  # a key that does not match its certificate fails here, on the driver
    return tls


# ----------------------------------------------------------------------------------- SASL


def sasl_config(opts: Mapping[str, str]) -> SaslConfig:
    """The mechanism and credentials of ``SASL_PLAINTEXT`` / ``SASL_SSL``: from
    ``kafka.sasl.jaas.config`` (Java) or ``kafka.sasl.username``/``password`` (librdkafka,
    https://github.com/confluentinc/librdkafka/blob/master/CONFIGURATION.md). Messages name
    options, never their values."""
    mechanism = text_value(opts, "kafka.sasl.mechanism").strip().upper()
    if mechanism not in SASL_MECHANISMS:
        raise ConfigurationError.of(UNSUPPORTED_VALUE, option=option("kafka.sasl.mechanism").name,
                                    allowed=", ".join(SASL_MECHANISMS), got=repr(mechanism))
    if mechanism == "OAUTHBEARER":
        oauth = oauth_config(opts)
        return SaslConfig(mechanism=mechanism, username=oauth.principal, password="",
                          oauth=oauth)
    for oauth_only in _OAUTH_ONLY:
        if given(opts, oauth_only) is not None:
            raise ConfigurationError.of(
                CONFLICTING_OPTIONS, "OAUTHBEARER_ONLY", oauth_only=oauth_only.name,
                mechanism=mechanism)
    if mechanism == "GSSAPI":
        return kerberos_sasl_config(opts)
    jaas = given(opts, "kafka.sasl.jaas.config")
    user, password = given(opts, "kafka.sasl.username"), given(opts, "kafka.sasl.password")
    if jaas is not None and (user is not None or password is not None):
        raise ConfigurationError.of(CONFLICTING_OPTIONS, "JAAS_AND_USERNAME")
    if jaas is not None:
        user, password = jaas_credentials(jaas, mechanism)
    elif user is None or password is None:
        raise ConfigurationError.of(
            MISSING_OPTION, "SASL_CREDENTIALS", mechanism=mechanism,
            value=SCRAM_MODULE if mechanism.startswith('SCRAM') else PLAIN_MODULE)
    if not user:
        raise ConfigurationError.of(SECURITY_SETTING, "SASL_USER_EMPTY")
    return SaslConfig(mechanism=mechanism, username=user, password=password)


# ---------------------------------------------------------------------------- OAUTHBEARER

_OAUTH_ONLY = (option("kafka.sasl.oauthbearer.token.endpoint.url"),
               option("kafka.sasl.login.callback.handler.class"),
               option("kafka.sasl.oauthbearer.token.provider"), option("kafka.sasl.aws.region"))


# -------------------------------------------------------------------------------- GSSAPI


def kerberos_sasl_config(opts: Mapping[str, str]) -> SaslConfig:
    """GSSAPI's credentials: a ``Krb5LoginModule`` JAAS entry, librdkafka's
    ``kafka.sasl.kerberos.keytab``/``principal``, or, with neither, each process's default
    Kerberos credentials (``kinit``'s ticket cache, MIT's default client keytab). A keytab
    is read here, on the driver, and shipped with the plan (``client/security/sasl/kerberos.py``)."""
    if given(opts, "kafka.sasl.username") is not None \
            or given(opts, "kafka.sasl.password") is not None:
        raise ConfigurationError.of(CONFLICTING_OPTIONS, "GSSAPI_USERNAME")
    service = given(opts, "kafka.sasl.kerberos.service.name")
    if service is not None and not service.strip():
        raise ConfigurationError.of(MISSING_OPTION, "KERBEROS_SERVICE_NAME")
    jaas = given(opts, "kafka.sasl.jaas.config")
    principal = (given(opts, "kafka.sasl.kerberos.principal") or "").strip() or None
    keytab_opt = option("kafka.sasl.kerberos.keytab")
    keytab = (given(opts, keytab_opt) or "").strip() or None
    if jaas is not None and (principal or keytab):
        raise ConfigurationError.of(CONFLICTING_OPTIONS, "JAAS_AND_KEYTAB")
    kerberos: KerberosConfig
    if jaas is not None:
        module, options = parse_jaas(jaas)
        kerberos = kerberos_from_jaas(module, options, service.strip() if service else None)
    elif keytab is not None:
        if principal is None:
            raise ConfigurationError.of(MISSING_OPTION, "KERBEROS_PRINCIPAL")
        kerberos = keytab_config(principal, keytab, (service or DEFAULT_SERVICE_NAME).strip(),
                                 keytab_opt.name)
    else:
        kerberos = KerberosConfig(service_name=(service or DEFAULT_SERVICE_NAME).strip(),
                                  principal=principal)
    load_gssapi()  # a missing extra fails here, on the driver, before any task runs
    return SaslConfig(mechanism="GSSAPI", username=kerberos.who, password="",
                      kerberos=kerberos)


# ------------------------------------------------------------------------------------ TLS


def _read_file(opts: Mapping[str, str], opt: Option) -> bytes | None:
    """The bytes of the file an option names, read here (on the driver) so that executors
    need no such path."""
    path = given(opts, opt)
    if path is None or not path.strip():
        return None
    try:
        with open(path.strip(), "rb") as f:
            return f.read()
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise ConfigurationError.of(
            SECURITY_SETTING, "FILE_UNREADABLE", option=opt.name, path=path,
            value=getattr(exc, 'strerror', None) or exc) from None


def _inline(opts: Mapping[str, str], opt: Option) -> bytes | None:
    value = given(opts, opt)
    return value.encode() if value is not None and value.strip() else None


def _one_of(found: dict[Option, bytes | None], subject: str) -> None:
    """Refuse more than one source of ``subject`` (the trusted CAs, the client certificate)
    among the options ``found`` holds set."""
    named = [o.name for o, v in found.items() if v is not None]
    if len(named) > 1:
        raise ConfigurationError.of(CONFLICTING_OPTIONS, subject=subject,
                                    options=", ".join(named))


def tls_config(opts: Mapping[str, str]) -> TlsConfig:
    """The TLS settings of ``security.protocol=SSL``, with every store read into bytes.

    The Java client's names and KIP-651's inline PEM values, and librdkafka's file names as
    aliases (https://kafka.apache.org/documentation/#producerconfigs_ssl.truststore.location,
    https://github.com/confluentinc/librdkafka/blob/master/CONFIGURATION.md). A context is
    built once here so an unusable setting fails on the driver, not in every task.
    """
    # -- trusted CAs
    truststore, ca_location = option("kafka.ssl.truststore.location"), \
        option("kafka.ssl.ca.location")
    inline_cas = option("kafka.ssl.truststore.certificates")
    cas = {o: (_inline(opts, o) if o is inline_cas else _read_file(opts, o))
           for o in (truststore, ca_location, inline_cas)}
    _one_of(cas, "trusted CAs")
    cadata: str | None = None
    if cas[truststore] is not None:
        data = cas[truststore]
        assert data is not None
        kind = store_type(data, given(opts, "kafka.ssl.truststore.type"), "kafka.ssl.truststore")
        cadata = load_truststore(data, kind, given(opts, "kafka.ssl.truststore.password"),
                                 truststore.name)
    for o in (ca_location, inline_cas):
        found = cas[o]
        if found is not None:
            cadata = load_truststore(found, "PEM", None, o.name)
    # -- client certificate (mutual TLS)
    key_password = given(opts, "kafka.ssl.key.password")
    keystore = option("kafka.ssl.keystore.location")
    pairs = ((option("kafka.ssl.keystore.certificate.chain"), option("kafka.ssl.keystore.key")),
             (option("kafka.ssl.certificate.location"), option("kafka.ssl.key.location")))
    sources = {keystore: _read_file(opts, keystore)}
    keys: dict[Option, bytes | None] = {}
    for chain_opt, key_opt in pairs:
        is_file = chain_opt.name.endswith(".location")
        sources[chain_opt] = _read_file(opts, chain_opt) if is_file else _inline(opts, chain_opt)
        keys[key_opt] = _read_file(opts, key_opt) if is_file else _inline(opts, key_opt)
        if (sources[chain_opt] is None) != (keys[key_opt] is None):
            missing, present = (key_opt, chain_opt) if keys[key_opt] is None else \
                (chain_opt, key_opt)
            raise ConfigurationError.of(
                MISSING_OPTION, "NEEDED_WITH", missing=missing.name, present=present.name)
    _one_of(sources, "client certificate")
    chain: bytes | None = None
    key: bytes | None = None
    store = sources[keystore]
    if store is not None:
        kind = store_type(store, given(opts, "kafka.ssl.keystore.type"), "kafka.ssl.keystore")
        chain, key = load_keystore(store, kind, given(opts, "kafka.ssl.keystore.password"),
                                   key_password, keystore.name)
    for chain_opt, key_opt in pairs:
        chain_bytes, key_bytes = sources[chain_opt], keys[key_opt]
        if chain_bytes is not None and key_bytes is not None:
            chain = load_truststore(chain_bytes, "PEM", None, chain_opt.name).encode()
            key = load_private_key(key_bytes, key_password, key_opt.name)
    # -- verification and versions
    algorithm = text_value(opts, "kafka.ssl.endpoint.identification.algorithm").strip().lower()
    if algorithm not in ("https", "", "none"):
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "SSL_ENDPOINT_IDENTIFICATION", algorithm=algorithm)
    low = high = None
    enabled_opt = option("kafka.ssl.enabled.protocols")
    enabled = given(opts, enabled_opt)
    if enabled is not None and enabled.strip():
        names = [version_name(v, enabled_opt.name) for v in enabled.split(",") if v.strip()]
        if not names:
            raise ConfigurationError.of(
                INVALID_VALUE, "NO_TLS_VERSION", enabled_opt=enabled_opt.name,
                protocol_versions=", ".join(PROTOCOL_VERSIONS))
        ranked = sorted(names, key=list(PROTOCOL_VERSIONS).index)
        low, high = ranked[0], ranked[-1]
    cap_opt = option("kafka.ssl.protocol")
    cap = given(opts, cap_opt)
    if cap is not None and cap.strip() and cap.strip().upper() != "TLS":
        capped = version_name(cap, cap_opt.name)
        order = list(PROTOCOL_VERSIONS)
        if high is None or order.index(capped) < order.index(high):
            high = capped
        if low is not None and order.index(low) > order.index(high):
            raise ConfigurationError.of(
                CONFLICTING_OPTIONS, "TLS_PROTOCOL_BELOW_ENABLED", cap_opt=cap_opt.name,
                enabled_opt=enabled_opt.name)
    suites = given(opts, "kafka.ssl.cipher.suites")
    ciphers = ":".join(c.strip() for c in suites.split(",") if c.strip()) if suites else None
    tls = TlsConfig(cadata=cadata, cert_chain=chain, key=key,
                    check_hostname=algorithm == "https", min_version=low, max_version=high,
                    ciphers=ciphers or None)
    context_for(tls)
    return tls
