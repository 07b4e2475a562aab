"""Every option kafkawire reads, and the parsing the source, the sink and the CLI share.

Names and semantics follow Spark's built-in kafka source and sink (keys are case-insensitive,
``kafka.``-prefixed keys are Kafka client settings), so switching formats means changing one
string. One module per concern:

* ``table``: the one table of every option (:data:`OPTIONS`: name, kind, default, where it
  applies, doc), its rows in ``rows/`` by area; a leaf above the protocol's constants and the
  client's own defaults (``client/defaults.py``), which it states too.
* ``values``: typed values read through the table (``given``, ``int_value``, ...).
* ``files``: Kafka client config files (``kafkaConfigFile``, ``options_from_properties``) and
  the spelling check of the keys users write.
* ``client``: the client's settings from a query's options (``client_config``,
  ``fetch_settings``), which both sides and the CLI read.
* ``security``: TLS, SASL, Kerberos and ZooKeeper security; ``oauth``: OAUTHBEARER's token
  sources.
* ``produce``: write options (``parse_sink_options``), the sink's and the CLI's produce.
* ``config_files`` / ``java_client_configs``: .properties files and the Java clients' names.
* ``reference``: the option reference page rendered from the table (``make docs``).

The names below are re-exported here. Only ``table`` is imported with the package: the others
import the client layer (I/O, the producer), so they load on first use (PEP 562), and
importing ``spark_kafka_wire.options.table`` loads nothing of the client but its defaults.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from spark_kafka_wire.options.table import (
    DEFAULT_PARTITIONER,
    EVERYWHERE,
    NOWHERE,
    OPTIONS,
    PARTITIONERS,
    SINK,
    SOURCE,
    Kind,
    Option,
    Use,
    accepted_kafka_keys,
    bool_default,
    entry,
    int_default,
    option,
    options_for,
    text_default,
)

if TYPE_CHECKING:
    from spark_kafka_wire.options.client import (
        SECURITY_PROTOCOLS,
        client_config,
        fetch_settings,
    )
    from spark_kafka_wire.options.files import (
        FILE_USES,
        check_security_spelling,
        config_file_options,
        edit_distance,
        known_client_configs,
        misspelt_security_key,
        options_from_properties,
        unknown_client_configs,
        warn_unknown_options,
        with_config_file,
    )
    from spark_kafka_wire.options.oauth import oauth_config
    from spark_kafka_wire.options.security import (
        kerberos_sasl_config,
        sasl_config,
        tls_config,
        zookeeper_security,
    )
    from spark_kafka_wire.options.values import (
        MAX_WIRE_STRING,
        bool_value,
        given,
        int_value,
        lower_keys,
        optional_int,
        text_value,
        wire_text,
    )

# name -> the module defining it, for the names loaded on first use
_LAZY = {
    **dict.fromkeys(("SECURITY_PROTOCOLS", "client_config", "fetch_settings"), "client"),
    **dict.fromkeys(("FILE_USES", "check_security_spelling", "config_file_options",
                     "edit_distance", "known_client_configs", "misspelt_security_key",
                     "options_from_properties", "unknown_client_configs",
                     "warn_unknown_options", "with_config_file"), "files"),
    **dict.fromkeys(("kerberos_sasl_config", "sasl_config", "tls_config",
                     "zookeeper_security"), "security"),
    "oauth_config": "oauth",
    **dict.fromkeys(("MAX_WIRE_STRING", "bool_value", "given", "int_value", "lower_keys",
                     "optional_int", "text_value", "wire_text"), "values"),
}

__all__ = [
    "DEFAULT_PARTITIONER", "EVERYWHERE", "NOWHERE", "OPTIONS",
    "PARTITIONERS", "SINK", "SOURCE", "Kind", "Option", "Use", "accepted_kafka_keys",
    "bool_default", "entry", "int_default", "option", "options_for", "text_default",
    "SECURITY_PROTOCOLS", "client_config", "fetch_settings", "FILE_USES",
    "check_security_spelling", "config_file_options", "edit_distance", "known_client_configs",
    "misspelt_security_key", "options_from_properties", "unknown_client_configs",
    "warn_unknown_options", "with_config_file", "kerberos_sasl_config", "oauth_config",
    "sasl_config", "tls_config",
    "zookeeper_security", "MAX_WIRE_STRING", "bool_value", "given", "int_value", "lower_keys",
    "optional_int", "text_value", "wire_text",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
