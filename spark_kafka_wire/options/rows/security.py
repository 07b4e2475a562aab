"""The option table's rows of the login and encryption settings: SASL (PLAIN, SCRAM),
OAUTHBEARER token sources and their refresh, GSSAPI (Kerberos) and TLS."""

from __future__ import annotations

from spark_kafka_wire.client import defaults
from spark_kafka_wire.options.rows.kinds import EVERYWHERE, Kind, Option

SECURITY: tuple[Option, ...] = (
    # ----------------------------------------------------- SASL (SASL_PLAINTEXT / SASL_SSL)
    Option("kafka.sasl.mechanism", EVERYWHERE, default="GSSAPI",
           doc="`GSSAPI` (Kerberos, Java's default; needs the `[kerberos]` extra), `PLAIN`, "
           "`SCRAM-SHA-256`, `SCRAM-SHA-512` or `OAUTHBEARER`"),
    Option("kafka.sasl.jaas.config", EVERYWHERE,
           doc="the credentials, in Java's JAAS syntax: "
           "`org.apache.kafka.common.security.plain.PlainLoginModule required "
           "username=\"...\" password=\"...\";` (`scram.ScramLoginModule` for SCRAM; "
           "`oauthbearer.OAuthBearerLoginModule` with `clientId`, `clientSecret`, `scope`, "
           "`extension_<name>` or `unsecuredLogin*` options for OAUTHBEARER; "
           "`software.amazon.msk.auth.iam.IAMLoginModule` for MSK IAM; "
           "`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
           "keyTab=\"...\" principal=\"...\";` or `useTicketCache=true` for GSSAPI); never "
           "shown"),
    Option("kafka.sasl.username", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name for the user, instead of `kafka.sasl.jaas.config`"),
    Option("kafka.sasl.password", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name for the password, with `kafka.sasl.username`; never shown"),
    # ------------------------------------------------- OAUTHBEARER (kafka.sasl.mechanism)
    Option("kafka.sasl.oauthbearer.token.endpoint.url", EVERYWHERE,
           doc="OAUTHBEARER tokens from this OAuth 2.0 token endpoint (client credentials grant, "
           "KIP-768) with `clientId`, `clientSecret` and `scope` from `kafka.sasl.jaas.config`; "
           "https trusts the system's CAs. A `file:` URL names a file holding the token. "
           "Only URLs the cluster operator lists exactly in "
           "`spark.kafkawire.sasl.oauthbearer.allowed.urls` (spark-defaults.conf, or the "
           "environment variable `KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS`; comma-separated) are "
           "read, none by default, as Java's `org.apache.kafka.sasl.oauthbearer.allowed.urls` "
           "since Kafka 4.0; redirects are not followed. "
           "Without it (nor the two settings below) OAUTHBEARER sends unsecured tokens built "
           "from `unsecuredLogin*` JAAS options, as Java does"),
    Option("kafka.sasl.login.callback.handler.class", EVERYWHERE,
           doc="Java's token source: `org.apache.kafka.common.security.oauthbearer."
           "OAuthBearerLoginCallbackHandler` (or `...oauthbearer.secured.` of Kafka < 3.4: "
           "the token endpoint) or `software.amazon.msk.auth.iam."
           "IAMOAuthBearerLoginCallbackHandler` (Amazon MSK IAM, needs the `[aws]` extra: "
           "`pip install '.[aws]'` in a clone); other JVM classes are refused"),
    Option("kafka.sasl.oauthbearer.token.provider", EVERYWHERE, kafkawire_only=True,
           doc="OAUTHBEARER tokens from a Python callable, `package.module:function` (or "
           "`package.module.function`), importable on the driver and every executor; it takes "
           "no argument and returns the token or `(token, expiry in ms since the epoch)`. A "
           "token whose expiry is unknown (not a JWT) is asked for at every login. This is code "
           "execution chosen by the query, so it is refused, before any import, unless the "
           "cluster operator allows the module in "
           "`spark.kafkawire.sasl.oauthbearer.token.provider.allowed.modules` (spark-defaults.conf, "
           "or the environment variable "
           "`KAFKAWIRE_SASL_OAUTHBEARER_TOKEN_PROVIDER_ALLOWED_MODULES`): comma-separated module "
           "names, each allowing its submodules, or `*` for any; none by default"),
    Option("kafka.sasl.aws.region", EVERYWHERE, kafkawire_only=True,
           default_doc="from the brokers' names",
           doc="Amazon MSK IAM: the cluster's region; unset, taken from the first bootstrap "
           "server's name (`b-1.<cluster>.kafka.<region>.amazonaws.com`), else from "
           "`AWS_REGION` / `AWS_DEFAULT_REGION` where the query is defined"),
    Option("kafka.sasl.oauthbearer.sub.claim.name", EVERYWHERE, default=defaults.SASL_OAUTHBEARER_SUB_CLAIM_NAME,
           doc="the token claim naming the principal (shown in errors)"),
    Option("kafka.sasl.oauthbearer.scope.claim.name", EVERYWHERE, default=defaults.SASL_OAUTHBEARER_SCOPE_CLAIM_NAME,
           doc="the token claim holding the scope; accepted for Java's configs (the broker "
           "checks scopes, not the client)"),
    Option("kafka.sasl.oauthbearer.header.urlencode", EVERYWHERE, kind=Kind.BOOL,
           default=defaults.SASL_OAUTHBEARER_HEADER_URLENCODE,
           doc="URL-encode the client id and secret before the token request's Basic "
           "authorization (KIP-1025; Java's default is off too)"),
    Option("kafka.sasl.login.connect.timeout.ms", EVERYWHERE, kind=Kind.INT, default=defaults.SASL_LOGIN_CONNECT_TIMEOUT_MS,
           minimum=1, doc="the longest wait for the token endpoint's connection (the larger of "
           "this and the read timeout bounds each step)"),
    Option("kafka.sasl.login.read.timeout.ms", EVERYWHERE, kind=Kind.INT, default=defaults.SASL_LOGIN_READ_TIMEOUT_MS,
           minimum=1, doc="the longest wait for the token endpoint's answer"),
    Option("kafka.sasl.login.retry.backoff.ms", EVERYWHERE, kind=Kind.INT, default=defaults.SASL_LOGIN_RETRY_BACKOFF_MS,
           doc="pause before retrying the token endpoint (unreachable, 5xx), doubling each time"),
    Option("kafka.sasl.login.retry.backoff.max.ms", EVERYWHERE, kind=Kind.INT,
           default=defaults.SASL_LOGIN_RETRY_BACKOFF_MAX_MS,
           doc="retries of the token endpoint stop this long after the first attempt (Java's "
           "rule); a 4xx answer (wrong secret) is never retried"),
    Option("kafka.sasl.login.refresh.window.factor", EVERYWHERE, default=defaults.SASL_LOGIN_REFRESH_WINDOW_FACTOR,
           doc="a token is replaced once this fraction of its lifetime has passed (0.5-1.0), "
           "within the two bounds below, as in Java"),
    Option("kafka.sasl.login.refresh.window.jitter", EVERYWHERE, default=defaults.SASL_LOGIN_REFRESH_WINDOW_JITTER,
           doc="a random fraction up to this (0-0.25) added to the refresh window factor"),
    Option("kafka.sasl.login.refresh.min.period.seconds", EVERYWHERE, kind=Kind.INT,
           default=defaults.SASL_LOGIN_REFRESH_MIN_PERIOD_SECONDS, doc="the shortest wait before replacing a token (0-900)"),
    Option("kafka.sasl.login.refresh.buffer.seconds", EVERYWHERE, kind=Kind.INT, default=defaults.SASL_LOGIN_REFRESH_BUFFER_SECONDS,
           doc="replace a token at least this long before it expires (0-3600)"),
    # ------------------------------------------------------ GSSAPI (Kerberos)
    Option("kafka.sasl.kerberos.service.name", EVERYWHERE, default=defaults.SASL_KERBEROS_SERVICE_NAME,
           doc="GSSAPI: the first part of the brokers' Kerberos principals "
           "(`kafka/<broker host>@REALM`); the broker's host is the one connected to, so "
           "`kafka.bootstrap.servers` and the advertised listeners must use the names in the "
           "principals. `serviceName` in the JAAS entry may give it too (they must agree)"),
    Option("kafka.sasl.kerberos.keytab", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: GSSAPI's keytab file, with `kafka.sasl.kerberos.principal`, "
           "instead of `kafka.sasl.jaas.config`. Read where the query is defined and shipped "
           "with the plan, like a JAAS `keyTab`"),
    Option("kafka.sasl.kerberos.principal", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: the client principal (`name@REALM`) of GSSAPI, with "
           "`kafka.sasl.kerberos.keytab`, or to pick one from the ticket cache"),
    # ------------------------------------------------------------ TLS (security.protocol=SSL)
    Option("kafka.ssl.truststore.location", EVERYWHERE,
           doc="the CAs that sign the brokers' certificates: a JKS, PKCS12 or PEM file (JKS is "
           "converted by the JDK's `keytool` where the query is defined). Read "
           "once where the query is defined and shipped with the plan: the path need not "
           "exist on executors. Without any truststore the system's default CAs are trusted "
           "(what managed services need)"),
    Option("kafka.ssl.truststore.type", EVERYWHERE, default_doc="from the file",
           doc="`JKS`, `PKCS12` or `PEM`; unset, the type is recognized from the file's bytes"),
    Option("kafka.ssl.truststore.password", EVERYWHERE,
           doc="the JKS or PKCS12 truststore's password; never shown in errors, logs or plans"),
    Option("kafka.ssl.truststore.certificates", EVERYWHERE,
           doc="the trusted CAs as inline PEM text (KIP-651), instead of a truststore file"),
    Option("kafka.ssl.ca.location", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: a PEM file of trusted CAs (as "
           "`kafka.ssl.truststore.location` with type PEM)"),
    Option("kafka.ssl.keystore.location", EVERYWHERE,
           doc="the client certificate and key for mutual TLS: a JKS or PKCS12 file, or PEM with "
           "the key and the certificate chain. Read where the query is defined, like the "
           "truststore"),
    Option("kafka.ssl.keystore.type", EVERYWHERE, default_doc="from the file",
           doc="`JKS`, `PKCS12` or `PEM`; unset, recognized from the file's bytes"),
    Option("kafka.ssl.keystore.password", EVERYWHERE,
           doc="the JKS or PKCS12 keystore's password (a PKCS12 key's too); never shown"),
    Option("kafka.ssl.key.password", EVERYWHERE,
           doc="the password of an encrypted PEM private key (keystore, "
           "`kafka.ssl.keystore.key` or `kafka.ssl.key.location`) or of a JKS key entry; "
           "never shown"),
    Option("kafka.ssl.keystore.certificate.chain", EVERYWHERE,
           doc="the client certificate chain as inline PEM text (KIP-651), with "
           "`kafka.ssl.keystore.key`"),
    Option("kafka.ssl.keystore.key", EVERYWHERE,
           doc="the client private key as inline PEM text (KIP-651; encrypted with "
           "`kafka.ssl.key.password` or not); never shown"),
    Option("kafka.ssl.certificate.location", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: a PEM file with the client certificate (chain), with "
           "`kafka.ssl.key.location`"),
    Option("kafka.ssl.key.location", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: a PEM file with the client private key"),
    Option("kafka.ssl.endpoint.identification.algorithm", EVERYWHERE, default=defaults.SSL_ENDPOINT_IDENTIFICATION_ALGORITHM,
           doc="`https` checks that the broker's certificate names the host connected to; an "
           "empty value (or librdkafka's `none`) turns the check off"),
    Option("kafka.ssl.enabled.protocols", EVERYWHERE,
           default_doc="Python's (TLSv1.2, TLSv1.3)",
           doc="comma-separated, from `TLSv1`, `TLSv1.1`, `TLSv1.2`, `TLSv1.3`; the lowest and "
           "the highest bound the versions offered"),
    Option("kafka.ssl.protocol", EVERYWHERE, default_doc="TLS",
           doc="`TLS`, or a version (`TLSv1.2`, `TLSv1.3`) that caps the versions offered"),
    Option("kafka.ssl.cipher.suites", EVERYWHERE, default_doc="Python's",
           doc="comma-separated OpenSSL cipher names (as librdkafka's `ssl.cipher.suites`) for "
           "TLS 1.2 and lower; TLS 1.3 suites are OpenSSL's defaults"),
)
