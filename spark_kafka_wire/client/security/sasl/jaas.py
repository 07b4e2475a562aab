"""``sasl.jaas.config`` in the Java client's JAAS syntax, for the login modules with a user
name and a password.

Grammar (Kafka's ``JaasConfig`` parser, which follows ``javax.security.auth.login``'s
ConfigFile syntax: https://docs.oracle.com/javase/8/docs/jre/api/security/jaas/spec/com/sun/security/auth/login/ConfigFile.html,
https://kafka.apache.org/documentation/#security_sasl_jaasconfig)::

    <LoginModuleClass> <required|requisite|sufficient|optional> [key=value ...];

Values are double-quoted strings (``\\`` escapes the next character) or bare tokens. Error
messages name positions and the keys kafkawire knows, never what the entry holds: a misplaced
quote or word moves a password into any position, the module's and the keys' included.
"""

from __future__ import annotations

from spark_kafka_wire.client.errors import SECURITY_SETTING, ConfigurationError
from spark_kafka_wire.protocol.errors import same_origin

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: ZooKeeper's login module for SASL DIGEST-MD5, in the ``Client`` section of the JAAS file of
#: ZooKeeper's Java clients (Kafka brokers among them) and, with ``user_<name>`` options, in the
#: server's ``Server`` section (https://zookeeper.apache.org/doc/r3.8.0/zookeeperProgrammers.html).
DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
MODULES = {PLAIN_MODULE: ("PLAIN",), SCRAM_MODULE: ("SCRAM-SHA-256", "SCRAM-SHA-512")}
FLAGS = ("required", "requisite", "sufficient", "optional")
_WHAT = "kafka.sasl.jaas.config"
#: How messages name an entry's login module: by its position, never by what it holds (a
#: misplaced quote can put a password there).
MODULE_POSITION = "the login module (the first word of kafka.sasl.jaas.config)"
#: The login modules messages may name: public class names, which no password is. (Literal
#: here: kerberos.py and oauth_config.py, which define the last three, import this module.)
KNOWN_MODULES = frozenset({
    PLAIN_MODULE, SCRAM_MODULE,
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
    "software.amazon.msk.auth.iam.IAMLoginModule",
    "com.sun.security.auth.module.Krb5LoginModule"})


def shown_module(module: str) -> str:
    """How a message names an entry's login module: a known class by its name, anything
    else by its position only (a misplaced quote can put a password there)."""
    return repr(module) if module in KNOWN_MODULES else MODULE_POSITION


def _tokens(text: str, what: str = _WHAT) -> list[tuple[str, bool]]:
    """Words, ``=``, ``;`` and quoted strings (flagged True), in order."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "=;":
            out.append((c, False))
            i += 1
        elif c == '"':
            i += 1
            begin = i
            buf: list[str] = []
            while True:
                if i >= n:
                    raise ConfigurationError.of(SECURITY_SETTING, "JAAS_QUOTE", what=what)
                c = text[i]
                if c == "\\" and i + 1 < n:
                    buf.append(text[i + 1])
                    i += 2
                elif c == '"':
                    i += 1
                    break
                else:
                    buf.append(c)
                    i += 1
            out.append((same_origin(text, "".join(buf), begin, i - 1), True))
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in '=;"':
                i += 1
            out.append((text[start:i], False))
    return out


def parse_jaas(text: str, what: str = _WHAT) -> tuple[str, dict[str, str]]:
    """(login module class, options) of a single-module JAAS entry; ``what`` names the option
    in messages."""
    toks = _tokens(text, what)
    if len(toks) < 2 or toks[0][1] or toks[1][1]:
        raise ConfigurationError.of(SECURITY_SETTING, "JAAS_FORM", what=what)
    module, flag = toks[0][0], toks[1][0]
    if flag.lower() not in FLAGS:
        raise ConfigurationError.of(
            SECURITY_SETTING, "JAAS_FLAG", what=what, flags=', '.join(FLAGS))
    options: dict[str, str] = {}
    i = 2
    while i < len(toks) and toks[i] != (";", False):
        key, quoted = toks[i]
        if quoted or i + 2 >= len(toks) or toks[i + 1] != ("=", False) \
                or toks[i + 2] in ((";", False), ("=", False)):
            raise ConfigurationError.of(
                SECURITY_SETTING, "JAAS_KEY_VALUE", what=what, value=len(options) + 1)
        options[key] = toks[i + 2][0]
        i += 3
    if i >= len(toks):
        raise ConfigurationError.of(SECURITY_SETTING, "JAAS_END", what=what)
    if i + 1 != len(toks):
        raise ConfigurationError.of(SECURITY_SETTING, "JAAS_MODULES", what=what)
    return module, options


def jaas_credentials(text: str, mechanism: str) -> tuple[str, str]:
    """(username, password) from a PlainLoginModule or ScramLoginModule entry that fits
    ``mechanism``."""
    module, options = parse_jaas(text)
    if module in KNOWN_MODULES and module not in MODULES:  # OAUTHBEARER's, GSSAPI's module
        raise ConfigurationError.of(
            SECURITY_SETTING, "JAAS_MODULE_MECHANISM", what=_WHAT, module=shown_module(module),
            mechanism=mechanism, plain_module=PLAIN_MODULE, scram_module=SCRAM_MODULE)
    if module not in MODULES:
        raise ConfigurationError.of(
            SECURITY_SETTING, "JAAS_MODULE_UNSUPPORTED", what=_WHAT,
            module=shown_module(module), mechanism=mechanism, plain_module=PLAIN_MODULE,
            scram_module=SCRAM_MODULE)
    if mechanism not in MODULES[module]:
        raise ConfigurationError.of(
            SECURITY_SETTING, "JAAS_MODULE_OTHER_MECHANISM", what=_WHAT, value=module.rsplit('.', 1)[1],
            mechanism=mechanism, value2=', '.join(MODULES[module]))
    if options.get("tokenauth", "").strip().lower() == "true":
        raise ConfigurationError.of(
            SECURITY_SETTING, "DELEGATION_TOKENS", what=_WHAT)
    missing = [k for k in ("username", "password") if k not in options]
    if missing:
        raise ConfigurationError.of(
            SECURITY_SETTING, "JAAS_OPTIONS_MISSING", what=_WHAT, missing=' and '.join(missing))
    return options["username"], options["password"]


def digest_credentials(text: str, what: str) -> tuple[str, str]:
    """(username, password) of a ZooKeeper ``DigestLoginModule`` entry, the JAAS ``Client``
    section a Java ZooKeeper client logs in with (SASL DIGEST-MD5); ``what`` names the option
    in messages, which never show a value."""
    module, options = parse_jaas(text, what)
    if module != DIGEST_MODULE:
        raise ConfigurationError.of(
            SECURITY_SETTING, "ZOOKEEPER_JAAS_MODULE", what=what, module=module,
            digest_module=DIGEST_MODULE)
    missing = [k for k in ("username", "password") if k not in options]
    if missing:
        raise ConfigurationError.of(
            SECURITY_SETTING, "JAAS_OPTIONS_MISSING", what=what, missing=' and '.join(missing))
    if not options["username"]:
        raise ConfigurationError.of(SECURITY_SETTING, "JAAS_USER_EMPTY", what=what)
    return options["username"], options["password"]
