"""Options from Kafka client config files, and the check of the keys users write.

``kafkaConfigFile`` (a query's), the CLI's ``--command-config`` and
:func:`options_from_properties` read one ``client.properties`` the same way: placeholders
resolved, the keys a side does not take skipped with a warning, security keys always taken.
A misspelt security key is an error rather than a skipped key, since ignoring
``secuirty.protocol=SSL`` would connect in plaintext. An option that is no kafkawire option at
all (``startingOffset``) is accepted, as Spark's kafka format accepts it, with a warning naming
the option it most likely meant (:func:`warn_unknown_options`).
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Iterable, Mapping

from spark_kafka_wire.client.errors import (
    MISSING_OPTION,
    UNKNOWN_OPTION,
    UNSUPPORTED_VALUE,
    ConfigurationError,
)
from spark_kafka_wire.options.config_files import file_kafka_options, resolve_placeholders
from spark_kafka_wire.options.java_client_configs import JAVA_CLIENT_CONFIGS
from spark_kafka_wire.options.table import (
    EVERYWHERE,
    NOWHERE,
    OPTIONS,
    REFUSED_VALUES,
    SINK,
    SOURCE,
    Use,
    accepted_kafka_keys,
    option,
)
from spark_kafka_wire.options.values import given
from spark_kafka_wire.protocol.errors import shown

_log = logging.getLogger(__name__)
_SECURITY_PREFIXES = ("kafka.security.", "kafka.ssl.", "kafka.sasl.")


def with_config_file(opts: dict[str, str], use: Use) -> dict[str, str]:
    """``opts`` with the placeholders of its ``kafka.*`` values resolved through the providers
    ``kafka.config.providers*`` declares, and the keys of its ``kafkaConfigFile`` (resolved
    through the providers the file declares) added where not given explicitly.

    A client.properties is shared by producers, consumers and tools, so keys this query does
    not take (serializers, ``acks`` on a read, ``schema.registry.url``) are skipped with one
    warning, as Java clients warn of unused configs; security keys are always taken so that a
    setting kafkawire cannot honour fails loudly instead of connecting with less security.
    """
    opts = resolve_placeholders(opts, "options", prefix="kafka.", precise=False)
    path = given(opts, "kafkaConfigFile")
    if path is None:
        return opts
    if not path.strip():
        raise ConfigurationError.of(MISSING_OPTION, "CONFIG_FILE_PATH")
    taken, skipped = config_file_options(path.strip(), opts, use, precise=False)
    if skipped:
        _log.warning("kafkaConfigFile %s: skipped keys this %s does not use: %s", path.strip(),
                     "read" if use & SOURCE else "write", ", ".join(sorted(skipped)))
    return {**taken, **{k: v for k, v in opts.items() if k != option("kafkaConfigFile").key}}


#: Keys Spark adds to the options it hands a data source: ``load(path)`` / ``save(path)`` and
#: a streaming query's ``checkpointLocation``. Spark's, not kafkawire's: never warned of.
SPARK_KEYS = frozenset({"path", "checkpointlocation"})
# The unknown options warned of in this process (see warn_unknown_options).
_warned: set[tuple[Use, str]] = set()


def warn_unknown_options(opts: Mapping[str, str], use: Use) -> None:
    """Log a warning for each key of ``opts`` (lower-cased, as Spark hands them over) that is
    no option of the table, no ``kafka.*`` key (those are checked by ``client_config``) and
    none of Spark's own: a typo that would otherwise be silently ignored (``startingOffset``
    reads from the default start). Spark's kafka format accepts unknown options, so kafkawire
    keeps accepting them; the warning names the table's closest option for ``use`` (difflib),
    or ``kafka.<key>`` for a Kafka client setting given without its prefix
    (``bootstrap.servers``). Options the table accepts without effect are known: never warned
    of. Spark parses a query's options several times (its schema, its reader, a stream's
    every planner call), so each key is warned of once per process. Values are never logged."""
    table = {o.key for o in OPTIONS}
    for key in sorted(opts):
        if key in table or key.startswith("kafka.") or key in SPARK_KEYS \
                or (use, key) in _warned:
            continue
        _warned.add((use, key))
        _log.warning("option '%s' is not a kafkawire option and is ignored%s", key,
                     _meant(key, use))


def _meant(key: str, use: Use) -> str:
    """The rest of the warning of an unknown ``key``: the option it likely meant, if any."""
    reference = "docs/reference/options.md lists every option"
    if key in known_client_configs():
        return (f": did you mean 'kafka.{key}'? (Kafka client settings take the kafka. "
                f"prefix; {reference})")
    names = {o.key: o.name for o in OPTIONS
             if o.refused is None and ((o.uses | o.ignored_in) & use) != NOWHERE}
    close = difflib.get_close_matches(key, list(names), n=1)
    return f": did you mean '{names[close[0]]}'? ({reference})" if close else f" ({reference})"


def known_client_configs() -> frozenset[str]:
    """Every Kafka client setting name (no ``kafka.`` prefix, lower case) that is not a typo:
    the ``kafka.*`` options kafkawire reads, refuses or ignores, and the Java clients' own."""
    return frozenset(o.key[len("kafka."):] for o in OPTIONS if o.key.startswith("kafka.")) \
        | JAVA_CLIENT_CONFIGS


def _security_names() -> frozenset[str]:
    return frozenset(k for k in known_client_configs()
                     if k.startswith(tuple(p[len("kafka."):] for p in _SECURITY_PREFIXES)))


def edit_distance(a: str, b: str, limit: int = 3) -> int:
    """Optimal string alignment distance (insertions, deletions, substitutions and swaps of
    neighbours each cost 1: ``secuirty`` is 1 from ``security``), or ``limit`` once it is at
    least that (names far apart need no exact count)."""
    if abs(len(a) - len(b)) >= limit:
        return limit
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return min(prev[-1], limit)


def misspelt_security_key(name: str) -> str | None:
    """The security setting (``security.protocol``, ``ssl.*``, ``sasl.*``) that ``name``, a
    key that is no client setting, is 1 or 2 edits away from: the one it likely meant."""
    key = name.lower()
    if key in known_client_configs():
        return None
    return closest_name(key, _security_names())


def closest_name(name: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` that ``name`` is 1 or 2 edits away from (the nearest, then the
    first in order): the setting a typo likely meant; None when none is that close."""
    best = min(((edit_distance(name, n), n) for n in names), default=None)
    return best[1] if best is not None and best[0] <= 2 else None


def check_security_spelling(names: Iterable[str], where: str) -> None:
    """A misspelt security setting is an error, not a skipped key: ignoring
    ``secuirty.protocol=SSL`` would connect in plaintext. ``where`` names the source in the
    message (the file); the value is never shown."""
    for name in names:
        intended = misspelt_security_key(name)
        if intended is not None:
            raise ConfigurationError.of(
                UNKNOWN_OPTION, "MISSPELT_SETTING", where=where, name=name,
                intended=intended)


def unknown_client_configs(names: Iterable[str]) -> list[str]:
    """The keys among ``names`` that are no Kafka client setting at all (likely typos; Java
    clients warn of them), as given."""
    known = known_client_configs()
    return sorted(n for n in names if n.lower() not in known)


def config_file_options(path: str, opts: Mapping[str, str], use: Use, precise: bool = True
                        ) -> tuple[dict[str, str], list[str]]:
    """(the ``kafka.*`` options of the config file at ``path`` that ``use`` takes and ``opts``
    does not set, lower-cased; the file's keys skipped as unused there). Shared by
    ``kafkaConfigFile`` and the CLI's ``--command-config``, which read one file the same way.
    ``precise`` (the CLI, a user's own Python) says why a file cannot be used; a query's
    options get one message whatever the reason, so they cannot probe the driver's files."""
    # Keys refused on one side are skipped from a file on both (a shared client.properties
    # holds the serializers of producers and the deserializers of consumers).
    accepted = accepted_kafka_keys(use) - {o.key for o in OPTIONS if o.refused is not None}
    # A value whose loss would change the data (REFUSED_VALUES) is refused from a file too.
    guarded = {r.key for r in REFUSED_VALUES if r.uses & use}
    taken: dict[str, str] = {}
    skipped: list[str] = []
    zookeeper = {o.key for o in OPTIONS if o.key.startswith("zookeeper.")}
    for key, value in file_kafka_options(path, precise).items():
        k = key.lower()
        if k[len("kafka."):] in zookeeper:
            # zookeeper.connect of a ZooKeeper-era client's consumer.properties, and the
            # zookeeper.ssl.* / zookeeper.sasl.* of a broker's server.properties (or a
            # --command-config): the options of those names, not Kafka client settings
            k = k[len("kafka."):]
        if k in opts:
            continue
        if k in zookeeper or k in accepted or k.startswith(_SECURITY_PREFIXES) \
                or k in guarded:
            taken[k] = value
        else:
            skipped.append(key[len("kafka."):])
    check_security_spelling([k[len("kafka."):] for k in taken if k.startswith("kafka.")]
                            + skipped, f"config file {path}")
    return taken, skipped


#: ``options_from_properties``'s sides: the options a read or a write takes, or both.
FILE_USES = {"read": SOURCE, "write": SINK, "both": EVERYWHERE}


def options_from_properties(path: str | os.PathLike[str], use: str = "both"
                            ) -> dict[str, str]:
    """The ``kafka.*`` options of a Kafka client config file, for ``.options(**...)``.

    The dict is what ``kafkaConfigFile`` would take from the same file: placeholders resolved
    and only the keys ``use`` accepts, ``"read"``, ``"write"`` or (the default) ``"both"``,
    the keys every read and every write accepts, so that one dict serves either side. A
    client.properties holds keys for producers and consumers alike (``acks``, serializers,
    ``client.dns.lookup``), and an explicit key no Kafka client has (``schema.registry.url``) or
    one kafkawire refuses (serializers in a write) is an error, so passing the file's keys
    unfiltered would fail; the keys left out are named in one warning,
    as ``kafkaConfigFile`` does. This runs where it is called: with Spark Connect, on the
    client, so files and ``${env:...}`` of the client's machine are read.

    >>> spark.read.format("kafkawire").options(**options_from_properties("client.properties"))
    >>> df.write.format("kafkawire").options(**options_from_properties(p, use="write"))
    """
    side = FILE_USES.get(use)
    if side is None:
        raise ConfigurationError.of(UNSUPPORTED_VALUE, option="options_from_properties: use",
                                    allowed=", ".join(map(repr, FILE_USES)), got=shown(use))
    source = os.fspath(path)
    taken, skipped = config_file_options(source, {}, SINK if side == SINK else SOURCE)
    if side == EVERYWHERE:
        for_writes, _ = config_file_options(source, {}, SINK)
        skipped += [k[len("kafka."):] for k in taken if k not in for_writes]
        taken = {k: v for k, v in taken.items() if k in for_writes}
    if skipped:
        _log.warning("%s: skipped keys %s does not use: %s", source,
                     {"read": "a read", "write": "a write", "both": "every read and write"}[use],
                     ", ".join(sorted(skipped)))
    return taken
