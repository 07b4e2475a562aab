"""Kafka client config files (``client.properties``) as ``kafka.*`` options.

Users keep their connection settings in the file their Kafka tools already read
(``kafka-console-consumer --consumer.config``, Confluent Cloud's downloaded
``client.properties``). This module reads that format as Java's ``java.util.Properties.load``
does (https://docs.oracle.com/javase/8/docs/api/java/util/Properties.html#load-java.io.Reader-)
and resolves Kafka's config-provider placeholders (KIP-297, https://cwiki.apache.org/confluence/x/i4NtB;
KIP-887 for environment variables) so that secrets stay out of the file and out of code:

* ``${env:NAME}`` (or ``${env::NAME}``): the environment variable NAME;
* ``${file:PATH:KEY}``: KEY of the properties file PATH (Kafka's FileConfigProvider);
* ``${directory:PATH:FILE}``: the whole content of PATH/FILE (DirectoryConfigProvider, the
  layout of Kubernetes secret volumes).

Placeholders resolve wherever they occur in a value, as Kafka's ConfigTransformer does. Error
messages name the key, the file and the placeholder, never a value: values may be secrets.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping

from spark_kafka_wire.client.errors import ConfigurationError

#: Keys that configure Kafka's config providers themselves; the providers above need none.
PROVIDER_KEYS = re.compile(r"config\.providers(\..*)?$")
_PLACEHOLDER = re.compile(r"\$\{([^}:]*):(?:([^}]*):)?([^}]*)\}")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    """Java's logical lines: comments and blank lines dropped, a line ending in an odd number
    of backslashes joined with the next (whose leading white space is dropped)."""
    out: list[str] = []
    pending: str | None = None
    for raw in re.split(r"\r\n|\r|\n", text):  # Java's line terminators only
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        out.append((pending or "") + line)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def _unescape(text: str, where: str) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = text[i + 1]
        if e == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ConfigurationError(f"{where}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(e, e))
            i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """(raw key, raw value): the key ends at the first unescaped ``=``, ``:`` or white space;
    white space, then one ``=`` or ``:``, then white space separate it from the value."""
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key, j = line[:i], i
    while j < n and line[j] in " \t\f":
        j += 1
    if j < n and line[j] in "=:":
        j += 1
        while j < n and line[j] in " \t\f":
            j += 1
    return key, line[j:]


def parse_properties(text: str, source: str = "properties") -> dict[str, str]:
    """The key/value pairs of a ``.properties`` text (later keys win, as in Java)."""
    props: dict[str, str] = {}
    for number, line in enumerate(_logical_lines(text), 1):
        raw_key, raw_value = _split(line)
        key = _unescape(raw_key, f"{source}, entry {number}")
        props[key] = _unescape(raw_value, f"{source}: {key}")
    return props


def read_properties(path: str, what: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise ConfigurationError(f"{what}: {path!r} is not UTF-8 text") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise ConfigurationError(f"{what}: cannot read {path!r}: "
                                 f"{getattr(exc, 'strerror', None) or exc}") from None
    return parse_properties(text, path)


def _resolve_one(match: re.Match[str], key: str, source: str) -> str:
    provider, path, name = match.group(1), match.group(2), match.group(3)
    where = f"{source}: {key}: placeholder ${{{provider}:...}}"
    if provider == "env":
        if path:
            raise ConfigurationError(f"{where} takes no path: write ${{env:NAME}}")
        value = os.environ.get(name)
        if value is None:
            raise ConfigurationError(f"{where}: environment variable {name!r} is not set")
        return value
    if provider == "file":
        if not path:
            raise ConfigurationError(f"{where}: write ${{file:PATH:KEY}}")
        props = read_properties(path, where)
        if name not in props:
            raise ConfigurationError(f"{where}: {path!r} has no key {name!r}")
        return props[name]
    if provider == "directory":
        if not path:
            raise ConfigurationError(f"{where}: write ${{directory:PATH:FILE}}")
        file = os.path.join(path, name)
        if os.path.dirname(os.path.normpath(file)) != os.path.normpath(path):
            raise ConfigurationError(f"{where}: {name!r} is not a file name in {path!r}")
        try:
            with open(file, encoding="utf-8") as f:
                return f.read()
        except UnicodeDecodeError:
            raise ConfigurationError(f"{where}: {file!r} is not UTF-8 text") from None
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
            raise ConfigurationError(f"{where}: cannot read {file!r}: "
                                     f"{getattr(exc, 'strerror', None) or exc}") from None
    raise ConfigurationError(f"{where}: unknown config provider {provider!r}; kafkawire "
                             "resolves env, file and directory")


def resolve_placeholders(props: Mapping[str, str], source: str) -> dict[str, str]:
    """``props`` with every ``${provider:[path:]key}`` replaced (once: a resolved value is not
    scanned again, as in Kafka)."""
    out: dict[str, str] = {}
    for key, value in props.items():
        out[key] = _PLACEHOLDER.sub(functools.partial(_resolve_one, key=key, source=source),
                                    value)
    return out


def file_kafka_options(path: str | os.PathLike[str]) -> dict[str, str]:
    """Every key of a Kafka client config file as a ``kafka.*`` option, placeholders resolved,
    Kafka's own ``config.providers*`` keys left out; nothing filtered for a read or a write
    (``options.options_from_properties`` and ``kafkaConfigFile`` do that)."""
    source = os.fspath(path)
    props = resolve_placeholders(read_properties(source, "kafkaConfigFile"), source)
    return {f"kafka.{k}": v for k, v in props.items() if not PROVIDER_KEYS.match(k)}
