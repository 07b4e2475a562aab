"""Settings only the cluster operator makes: what a query may make kafkawire read, send or run.

kafkawire trusts the operator of the Spark cluster (or the user of the CLI on their own
machine) and nobody else: query options, config files a tenant names, brokers, schema
registries and token endpoints may be hostile, so a file they name is not read, a URL not
fetched and a module not imported unless the operator allowed it. The operator speaks through
two channels that every kafkawire process sees, and a query cannot change:

* the environment of the Spark processes: ``spark-env.sh``, ``spark.executorEnv.NAME`` and the
  driver's own environment (``spark.kubernetes.driverEnv.NAME``, ``spark.yarn.appMasterEnv``),
  a container's environment; for the CLI and plain Python, the shell's. Names are the setting's
  upper-cased, dots as underscores: ``KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS``.
* ``spark.kafkawire.*`` keys of ``spark-defaults.conf`` in ``$SPARK_CONF_DIR`` (else
  ``$SPARK_HOME/conf``). Spark's launcher exports ``SPARK_CONF_DIR`` to its JVMs and their
  Python workers inherit it. kafkawire reads the file itself because Python data sources run
  in Python workers that Spark hands only a hand-picked few of its settings; a ``--conf`` or a
  session builder's setting therefore does not reach it (the latter is a tenant's anyway).

An environment variable wins over the file. Values are read once per process: operators
configure a cluster before it starts, and a query must not be able to change them mid-flight.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping

#: The prefix of the operator's keys in spark-defaults.conf.
SPARK_PREFIX = "spark.kafkawire."
_DEFAULTS_FILE = "spark-defaults.conf"
# spark-defaults.conf: "key value" or "key=value" per line, '#' comments (Spark's
# Utils.getPropertiesFromFile reads it as a Java properties file; these are the forms used).
_LINE = re.compile(r"^\s*(spark\.kafkawire\.[\w.\-]+)\s*[=:\s]\s*(.*?)\s*$")


def env_name(setting: str) -> str:
    """``spark.kafkawire.sasl.oauthbearer.allowed.urls`` -> ``KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS``."""
    short = setting.removeprefix("spark.")
    return re.sub(r"[^A-Za-z0-9]", "_", short).upper()


def spark_defaults_path(environ: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    conf_dir = env.get("SPARK_CONF_DIR") or (
        os.path.join(env["SPARK_HOME"], "conf") if env.get("SPARK_HOME") else None)
    return os.path.join(conf_dir, _DEFAULTS_FILE) if conf_dir else None


def read_spark_defaults(path: str | None) -> dict[str, str]:
    """The ``spark.kafkawire.*`` keys of a spark-defaults.conf (nothing else is kept; a
    missing or unreadable file has none)."""
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    out: dict[str, str] = {}
    for line in lines:
        m = _LINE.match(line)
        if m and not line.lstrip().startswith("#"):
            out[m.group(1)] = m.group(2)
    return out


@functools.cache
def _file_settings() -> dict[str, str]:
    return read_spark_defaults(spark_defaults_path())


def operator_setting(setting: str) -> str | None:
    """The operator's value of ``setting`` (a ``spark.kafkawire.*`` name): its environment
    variable, else its key in spark-defaults.conf, else None (unset)."""
    if not setting.startswith(SPARK_PREFIX):
        raise ValueError(f"not an operator setting: {setting!r}")
    value = os.environ.get(env_name(setting))
    if value is not None:
        return value
    return _file_settings().get(setting)


def operator_list(setting: str) -> list[str] | None:
    """A comma-separated operator setting as a list (blanks dropped), None when unset: an
    empty value is an empty list, which is not the same as unset."""
    raw = operator_setting(setting)
    if raw is None:
        return None
    return [item.strip() for item in raw.split(",") if item.strip()]


def where_to_set(setting: str) -> str:
    """How an error tells the reader to change ``setting``: both channels, by name."""
    return (f"the cluster operator allows it with {setting} in spark-defaults.conf or the "
            f"environment variable {env_name(setting)} (for the kafkawire command and plain "
            "Python, the environment variable)")


def forget_cached_settings() -> None:
    """Read spark-defaults.conf again on the next lookup (tests, and a long-lived process
    whose operator changed the file)."""
    _file_settings.cache_clear()
