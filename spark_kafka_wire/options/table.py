"""The table of every option kafkawire reads: name, kind of value, default, where it applies
and its documentation (:data:`OPTIONS`), and nothing else.

This is the one place an option is declared; its rows live in ``options/rows/``, one module
per area (connection, security, reads, writes, formats, refused), assembled here in the
order the option reference shows them. It is a leaf (the standard library, constants of the
protocol layer, and the client's defaults, ``client/defaults.py``) so that every layer above
the client may read it: the sides' parsed options, as well as the option reference page
(``options/reference.py``). The defaults of client settings are the client's own: the rows
read them from ``client/defaults.py``, so the client never imports this table. Parsers read
options through :func:`option`, which raises KeyError for a name the table does not hold, so
a misspelt key fails in the tests instead of being silently unset.
"""

from __future__ import annotations

from spark_kafka_wire.client.defaults import DEFAULT_PARTITIONER, PARTITIONERS
from spark_kafka_wire.options.rows.connection import CONNECTION
from spark_kafka_wire.options.rows.formats import (
    DECODE_MODES,
    FORMATS,
    SUBJECT_NAME_STRATEGIES,
    VALUE_FORMATS,
)
from spark_kafka_wire.options.rows.kinds import (
    EVERYWHERE,
    NOWHERE,
    SINK,
    SOURCE,
    Kind,
    Option,
    RefusedValue,
    Use,
)
from spark_kafka_wire.options.rows.reads import READS
from spark_kafka_wire.options.rows.refused import REFUSED, REFUSED_VALUES
from spark_kafka_wire.options.rows.security import SECURITY
from spark_kafka_wire.options.rows.writes import WRITES

# the names the parsers take from here, defined in the rows' modules and the client's defaults
__all__ = [
    "DECODE_MODES", "DEFAULT_PARTITIONER", "EVERYWHERE", "NOWHERE", "OPTIONS", "PARTITIONERS",
    "REFUSED_VALUES", "SINK", "SOURCE", "SUBJECT_NAME_STRATEGIES", "VALUE_FORMATS", "Kind",
    "Option", "RefusedValue", "Use", "accepted_kafka_keys", "bool_default", "entry",
    "int_default", "option", "options_for", "text_default",
]

# How a ``kafka.*`` key a side does not use is treated (the one rule, ``options/client.py``
# applies it): a Kafka Java client setting (``options/java_client_configs.py``) or a
# kafkawire option of the other side is accepted without effect, with one warning naming the
# keys (never their values), as Spark's kafka format hands it to a Java client that does not
# use it; a key that is neither is a typo (UNKNOWN_OPTION, with the closest name). Refused
# (REFUSED_OPTION, each with its reason) are the settings whose silent loss would change the
# data or its security: the table's ``refused`` options (Spark's own refusals, JVM classes:
# interceptors, partitioner.class, security.providers), the :data:`REFUSED_VALUES`, and every
# ``kafka.ssl.*`` / ``kafka.sasl.*`` key kafkawire does not implement (ssl.provider,
# ssl.engine.factory.class, ssl.keymanager.algorithm, ssl.trustmanager.algorithm,
# ssl.secure.random.implementation, sasl.login.class, sasl.client.callback.handler.class,
# sasl.oauthbearer.jwks.* / expected.* / clock.skew.seconds: the security asked for would be
# missing). The rest change neither: client.dns.lookup, client.rack (follower fetching: which
# replica answers, not what), metadata.recovery.*, metadata.max.idle.ms, metric.reporters,
# metrics.*, auto.include.jmx.reporter, enable.metrics.push,
# socket.connection.setup.timeout.max.ms, default.api.timeout.ms on writes, the consumer group
# settings (group.instance.id, group.protocol, group.remote.assignor,
# partition.assignment.strategy, auto.commit.interval.ms: Spark assigns partitions itself),
# internal.*, allow.auto.create.topics on reads, exclude.internal.topics=true,
# partitioner.ignore.keys=false, partitioner.adaptive.partitioning.enable and
# partitioner.availability.timeout.ms (the placement of keyless records, random in both),
# and each side's settings given to the other (a shared options dict; compression levels are
# honoured by writes).
OPTIONS: tuple[Option, ...] = (
    *CONNECTION,  # every read and write, ZooKeeper security, the config file
    *SECURITY,  # SASL, OAUTHBEARER, GSSAPI, TLS
    *READS,  # reads and stream reads
    *WRITES,
    *FORMATS,  # value formats and the Schema Registry
    *REFUSED,  # refused, accepted and ignored
)

_BY_KEY = {o.key: o for o in OPTIONS}


def option(name: str) -> Option:
    """The table's entry for ``name``, spelled as in the table; KeyError for any other name,
    so a parser cannot read an option the table (and so the option reference) does not declare."""
    found = _BY_KEY.get(name.lower())
    if found is None or found.name != name:
        raise KeyError(f"option {name!r} is not in spark_kafka_wire.options.OPTIONS"
                       + (f" (it is spelled {found.name!r})" if found else ""))
    return found


def options_for(use: Use) -> list[Option]:
    """The options read somewhere in ``use`` (refused and ignored ones left out)."""
    return [o for o in OPTIONS if o.uses & use and o.refused is None]


def accepted_kafka_keys(use: Use) -> set[str]:
    """The ``kafka.*`` keys ``use`` takes: read there, or accepted there without effect."""
    return {o.key for o in OPTIONS if o.key.startswith("kafka.") and (
        o.ignored_in & use or (o.refused is None and o.uses & use))}


# The defaults, typed, for the code that declares a setting's default (dataclass fields): each
# is the table's, so the option reference says what the code does.


def entry(name: Option | str) -> Option:
    """``name``'s entry (an Option is its own)."""
    return name if isinstance(name, Option) else option(name)


def text_default(name: Option | str) -> str:
    """The text default of ``name``; TypeError when it has none."""
    opt = entry(name)
    if not isinstance(opt.default, str):
        raise TypeError(f"option {opt.name!r} has no text default")
    return opt.default


def int_default(name: Option | str) -> int:
    """The integer default of ``name``; TypeError when it has none."""
    opt = entry(name)
    if not isinstance(opt.default, int) or isinstance(opt.default, bool):
        raise TypeError(f"option {opt.name!r} has no integer default")
    return opt.default


def bool_default(name: Option | str) -> bool:
    """The boolean default of ``name``; TypeError when it has none."""
    opt = entry(name)
    if not isinstance(opt.default, bool):
        raise TypeError(f"option {opt.name!r} has no boolean default")
    return opt.default
