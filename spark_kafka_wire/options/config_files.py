"""Kafka client config files (``client.properties``) as ``kafka.*`` options.

Users keep their connection settings in the file their Kafka tools already read
(``kafka-console-consumer --consumer.config``, Confluent Cloud's downloaded
``client.properties``). This module reads that format as Java's ``java.util.Properties.load``
does (https://docs.oracle.com/javase/8/docs/api/java/util/Properties.html#load-java.io.Reader-)
and resolves Kafka's config-provider placeholders (KIP-297, https://cwiki.apache.org/confluence/x/i4NtB)
so that secrets stay out of the file and out of code. As in Kafka, a placeholder resolves only
through a provider the config declares (``config.providers=<name>`` and
``config.providers.<name>.class``), which is what keeps a config from reading any file or
variable of the machine it is parsed on:

* EnvVarConfigProvider, ``${<name>:VAR}``: an environment variable whose whole name matches
  ``param.allowlist.pattern`` (KIP-887);
* FileConfigProvider, ``${<name>:PATH:KEY}``: KEY of the properties file PATH;
* DirectoryConfigProvider, ``${<name>:DIR:FILE}``: the content of DIR/FILE (Kubernetes secret
  volumes); both within ``param.allowed.paths`` (KIP-993) when given.

The cluster operator may narrow this further (client/operator.py). Placeholders resolve
wherever they occur in a value, as Kafka's ConfigTransformer does. A resolved value is a
:class:`~spark_kafka_wire.protocol.errors.FromPlaceholder`, whose repr names its placeholders:
error messages name the key, the file and the placeholder, never a value, since values from
providers are secrets by intent. A file that does not look like a config file (``/etc/passwd``)
is refused without showing its content.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from spark_kafka_wire.client.errors import CONFIG_FILE, NOT_ALLOWED_BY_OPERATOR, ConfigurationError
from spark_kafka_wire.client.operator import operator_list, where_to_set
from spark_kafka_wire.protocol.errors import FromPlaceholder

#: Keys that declare Kafka's config providers (resolution reads them and leaves them out).
PROVIDER_KEYS = re.compile(r"config\.providers(\..*)?$")
_PLACEHOLDER = re.compile(r"\$\{([^}:]*):(?:([^}]*):)?([^}]*)\}")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Java's logical lines, each with the number of the physical line it starts on: comments
    and blank lines dropped, a line ending in an odd number of backslashes joined with the
    next (whose leading white space is dropped)."""
    out: list[tuple[int, str]] = []
    pending: str | None = None
    first = 0
    for number, raw in enumerate(re.split(r"\r\n|\r|\n", text), 1):  # Java's terminators
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
            first = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        out.append((first, (pending or "") + line))
        pending = None
    if pending is not None:
        out.append((first, pending))
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
                raise ConfigurationError.of(CONFIG_FILE, "BAD_ESCAPE", where=where)
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(e, e))
            i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str, str]:
    """(raw key, separator, raw value): the key ends at the first unescaped ``=``, ``:`` or
    white space; white space, then one ``=`` or ``:``, then white space separate it from the
    value. The separator is ``=``, ``:``, `` `` (white space alone) or empty (no value)."""
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
    sep = ""
    while j < n and line[j] in " \t\f":
        j += 1
        sep = " "
    if j < n and line[j] in "=:":
        sep = line[j]
        j += 1
        while j < n and line[j] in " \t\f":
            j += 1
    if sep == " " and j == n:
        sep = ""  # "key   ": no value either
    return key, sep, line[j:]


#: The keys of a Kafka client config file: Kafka's config names are dotted words starting in
#: lower case; ZooKeeper's client settings, which Kafka passes through, are camel case
#: (``zookeeper.clientCnxnSocket``).
CONFIG_NAMES = re.compile(r"[a-z][A-Za-z0-9._-]*")
#: The keys of a secrets file read by ``${file:PATH:KEY}``, which users name freely.
SECRET_NAMES = re.compile(r"[A-Za-z][A-Za-z0-9._-]*")


def _plausible(key: str, sep: str, names: re.Pattern[str]) -> bool:
    """Whether a line looks like a config: a name, then a value. A key without a dot must be
    followed by ``=``: ``name:x:0:0:...`` (passwd, group, shadow), ``host alias`` or a shell
    line are syntactically properties but not configs, and refusing them keeps a wrongly named
    file's content (user names, hashes) out of warnings and out of the connection."""
    if not sep or not names.fullmatch(key):
        return False
    return "." in key or sep == "="


def parse_properties(text: str, source: str = "properties",
                     names: re.Pattern[str] | None = None) -> dict[str, str]:
    """The key/value pairs of a ``.properties`` text (later keys win, as in Java). With
    ``names``, a file of configs: a line whose key is not such a name, or that has no value,
    is refused as not a properties file, naming the line and nothing of its content."""
    props: dict[str, str] = {}
    for number, line in _logical_lines(text):
        raw_key, sep, raw_value = _split(line)
        if names is not None and not _plausible(raw_key, sep, names):
            raise ConfigurationError.of(
                CONFIG_FILE, "NOT_PROPERTIES", source=source, number=number)
        key = _unescape(raw_key, f"{source}, entry {number}")
        props[key] = _unescape(raw_value, f"{source}: {key}")
    return props


def _vague(source: str, path: str) -> ConfigurationError:
    """A query's error for a file it cannot use: the same whatever the reason, so that options
    cannot probe which files exist on the driver or what they hold. ``source``: where the
    file is named (kafkaConfigFile, a placeholder)."""
    return ConfigurationError.of(CONFIG_FILE, source=source, path=repr(path))


def read_properties(path: str, what: str, names: re.Pattern[str] = CONFIG_NAMES,
                    precise: bool = True) -> dict[str, str]:
    """The keys of the properties file at ``path``, refused unless it looks like one (see
    :func:`parse_properties`). ``precise``: say why a file cannot be used (the CLI, a user's
    own Python); else one message for every reason (query options)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        if not precise:
            raise _vague(what, path) from None
        raise ConfigurationError.of(CONFIG_FILE, "NOT_UTF8", what=what, path=path) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        if not precise:
            raise _vague(what, path) from None
        raise ConfigurationError.of(
            CONFIG_FILE, "UNREADABLE", what=what, path=path,
            value=getattr(exc, 'strerror', None) or exc) from None
    try:
        return parse_properties(text, f"{what}: {path}", names)
    except ConfigurationError:
        if not precise:
            raise _vague(what, path) from None
        raise


# ----------------------------------------------------------------------- config providers

_PROVIDER_PACKAGE = "org.apache.kafka.common.config.provider."
#: Kafka's provider classes kafkawire implements, and what each reads.
PROVIDER_CLASSES = {_PROVIDER_PACKAGE + "FileConfigProvider": "file",
                    _PROVIDER_PACKAGE + "DirectoryConfigProvider": "directory",
                    _PROVIDER_PACKAGE + "EnvVarConfigProvider": "env"}
_CLASS_OF = {kind: cls for cls, kind in PROVIDER_CLASSES.items()}
# Each kind's parameters (config.providers.<name>.param.<param>): KIP-993 and KIP-887.
_PARAMS = {"file": ("allowed.paths",), "directory": ("allowed.paths",),
           "env": ("allowlist.pattern",)}
#: The operator's settings (client/operator.py): the providers queries may declare (unset:
#: all three; empty: none), and the directories file and directory providers may read.
OPERATOR_PROVIDERS = "spark.kafkawire.config.providers"
OPERATOR_PATHS = "spark.kafkawire.config.providers.allowed.paths"


@dataclass(frozen=True)
class Provider:
    """A provider declared with ``config.providers=<name>`` and its class and parameters."""

    name: str
    kind: str  # file, directory or env
    allowed_paths: tuple[str, ...] | None = None  # real paths; None: any
    allowlist: re.Pattern[str] | None = None  # env: the names that may be read
    key: str = ""  # where it is declared: config.providers.<name> (kafka.-prefixed in options)


def _declaration(name: str, prefix: str = "") -> str:
    """How to declare a provider ``name`` (the kind its name suggests, else all three)."""
    kind = {"dir": "directory"}.get(name, name)
    classes = [_CLASS_OF[kind]] if kind in _CLASS_OF else list(PROVIDER_CLASSES)
    return (f"{prefix}config.providers={name} and {prefix}config.providers.{name}.class="
            + " or ".join(classes))


def _real_dirs(value: str, what: str) -> tuple[str, ...]:
    dirs = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        if not os.path.isabs(item):
            raise ConfigurationError.of(
                CONFIG_FILE, "ALLOWED_PATH_NOT_ABSOLUTE", what=what, item=item)
        dirs.append(os.path.realpath(item))
    return tuple(dirs)


def declared_providers(props: Mapping[str, str], source: str, prefix: str = ""
                       ) -> dict[str, Provider]:
    """The providers ``props`` declares, as Kafka's ConfigTransformer finds them:
    ``config.providers`` lists names, ``config.providers.<name>.class`` gives each one's class
    (Kafka's three are understood, other classes refused) and ``...param.<param>`` its
    parameters. ``prefix``: ``kafka.`` for query options. The operator's settings may forbid a
    kind; an unknown parameter is refused (a misspelt ``allowed.paths`` must not allow all)."""
    names = [n.strip() for n in (props.get(f"{prefix}config.providers") or "").split(",")
             if n.strip()]
    allowed_kinds = operator_list(OPERATOR_PROVIDERS)
    found: dict[str, Provider] = {}
    for name in names:
        key = f"{prefix}config.providers.{name}"
        cls = (props.get(f"{key}.class") or "").strip()
        if not cls:
            raise ConfigurationError.of(
                CONFIG_FILE, "PROVIDER_CLASS_MISSING", source=source, prefix=prefix,
                name=name, key=key, provider_classes=", ".join(PROVIDER_CLASSES))
        kind = PROVIDER_CLASSES.get(cls)
        if kind is None:
            raise ConfigurationError.of(
                CONFIG_FILE, "PROVIDER_CLASS_UNKNOWN", source=source, key=key,
                provider_classes=", ".join(PROVIDER_CLASSES))
        if allowed_kinds is not None and kind not in allowed_kinds:
            raise ConfigurationError.of(
                NOT_ALLOWED_BY_OPERATOR, "CONFIG_PROVIDER", source=source, key=key,
                kind=kind, operator_providers=where_to_set(OPERATOR_PROVIDERS))
        params = {k[len(f"{key}.param."):]: v for k, v in props.items()
                  if k.startswith(f"{key}.param.")}
        for param in params:
            if param not in _PARAMS[kind]:
                raise ConfigurationError.of(
                    CONFIG_FILE, "UNKNOWN_PROVIDER_PARAMETER", source=source, key=key,
                    param=param, kind=kind, value=', '.join(_PARAMS[kind]))
        paths = params.get("allowed.paths", "").strip()
        pattern = params.get("allowlist.pattern")
        allowlist = None
        if pattern is not None:
            try:
                allowlist = re.compile(pattern)
            except re.error as exc:
                raise ConfigurationError.of(
                    CONFIG_FILE, "ALLOWLIST_NOT_A_REGEX", source=source, key=key,
                    exc=str(exc)) from None
        found[name] = Provider(
            name, kind, _real_dirs(paths, f"{source}: {key}.param.allowed.paths")
            if paths else None, allowlist, key)
    return found


def _inside(real: str, dirs: tuple[str, ...]) -> bool:
    return any(real == d or real.startswith(d.rstrip(os.sep) + os.sep) for d in dirs)


def _check_path(path: str, provider: Provider, where: str) -> None:
    """Refuse a path outside the provider's allowed.paths or the operator's directories,
    after normalising and resolving symlinks (a link out of an allowed directory is out)."""
    real = os.path.realpath(path)
    if provider.allowed_paths is not None and not _inside(real, provider.allowed_paths):
        raise ConfigurationError.of(
            CONFIG_FILE, "OUTSIDE_ALLOWED_PATHS", where=where, path=path, key=provider.key)
    operator = operator_list(OPERATOR_PATHS)
    if operator is not None and not _inside(real, _real_dirs(",".join(operator), OPERATOR_PATHS)):
        raise ConfigurationError.of(
            NOT_ALLOWED_BY_OPERATOR, "PROVIDER_PATH", where=where,
            path=path, operator_paths=where_to_set(OPERATOR_PATHS))


@dataclass(frozen=True)
class _Resolver:
    providers: Mapping[str, Provider]
    source: str
    prefix: str
    precise: bool

    def __call__(self, match: re.Match[str], key: str) -> str:
        name, path, item = match.group(1), match.group(2), match.group(3)
        where = f"{self.source}: {key}: placeholder ${{{name}:...}}"
        provider = self.providers.get(name)
        if provider is None:
            raise ConfigurationError.of(
                CONFIG_FILE, "PROVIDER_NOT_DECLARED", where=where, name=name,
                name2=_declaration(name, self.prefix))
        if provider.kind == "env":
            return self._env(provider, path, item, where)
        if not path:
            raise ConfigurationError.of(
                CONFIG_FILE, "PLACEHOLDER_FORM", where=where, name=name,
                value='KEY' if provider.kind == 'file' else 'FILE')
        if provider.kind == "file":
            _check_path(path, provider, where)
            props = read_properties(path, where, SECRET_NAMES, self.precise)
            if item not in props:
                if not self.precise:
                    raise ConfigurationError.of(
                        CONFIG_FILE, "PLACEHOLDER_KEY_UNUSABLE", where=where, item=item, path=path)
                raise ConfigurationError.of(CONFIG_FILE, "NO_SUCH_KEY", where=where, path=path, item=item)
            return props[item]
        file = os.path.join(path, item)
        if os.path.dirname(os.path.normpath(file)) != os.path.normpath(path):
            raise ConfigurationError.of(
                CONFIG_FILE, "NOT_A_FILE_NAME", where=where, item=item, path=path)
        _check_path(file, provider, where)
        try:
            with open(file, encoding="utf-8") as f:
                return f.read()
        except (UnicodeDecodeError, OSError, ValueError) as exc:  # ValueError: a NUL byte
            if not self.precise:
                raise ConfigurationError.of(
                    CONFIG_FILE, "PLACEHOLDER_FILE_UNUSABLE", where=where, file=file) from None
            why = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else \
                getattr(exc, "strerror", None) or exc
            raise ConfigurationError.of(
                CONFIG_FILE, "PLACEHOLDER_FILE_UNREADABLE", where=where, file=file, why=why) from None

    def _env(self, provider: Provider, path: str | None, item: str, where: str) -> str:
        if path:
            raise ConfigurationError.of(
                CONFIG_FILE, "ENV_TAKES_NO_PATH", where=where, provider=provider.name)
        if provider.allowlist is not None and not provider.allowlist.fullmatch(item):
            raise ConfigurationError.of(
                CONFIG_FILE, "ENV_NOT_ALLOWED", where=where, item=item,
                key=provider.key)
        value = os.environ.get(item)
        if value is None:
            raise ConfigurationError.of(
                CONFIG_FILE, "ENV_NOT_SET", where=where, item=item)
        return value


def resolve_placeholders(props: Mapping[str, str], source: str, prefix: str = "",
                         precise: bool = True) -> dict[str, str]:
    """``props`` with every ``${provider:[path:]key}`` replaced through the providers ``props``
    declares (KIP-297; with ``prefix`` ``kafka.``, query options declaring them as
    ``kafka.config.providers``), and the declaring keys left out. A value made from
    placeholders is a :class:`FromPlaceholder`, which messages never show. A resolved value is
    not scanned again, as in Kafka. ``precise``: see :func:`read_properties`."""
    declaring = re.compile(re.escape(prefix) + PROVIDER_KEYS.pattern)
    providers: Mapping[str, Provider] | None = None
    out: dict[str, str] = {}
    for key, value in props.items():
        if declaring.match(key):
            continue
        # A value resolved before (a stream's options pass here twice) is not scanned again.
        scan = key.startswith(prefix) and not isinstance(value, FromPlaceholder)
        if not (scan and _PLACEHOLDER.search(value)):
            out[key] = value
            continue
        if providers is None:
            providers = declared_providers(props, source, prefix)
        resolver = _Resolver(providers, source, prefix, precise)
        parts: list[str] = []
        spans: list[tuple[int, int]] = []
        at = length = 0
        for match in _PLACEHOLDER.finditer(value):
            parts.append(value[at:match.start()])
            length += match.start() - at
            piece = resolver(match, key=key)
            parts.append(piece)
            spans.append((length, length + len(piece)))
            length += len(piece)
            at = match.end()
        parts.append(value[at:])
        out[key] = FromPlaceholder("".join(parts),
                                   tuple(m.group(0) for m in _PLACEHOLDER.finditer(value)),
                                   tuple(spans))
    return out


def file_kafka_options(path: str | os.PathLike[str], precise: bool = True) -> dict[str, str]:
    """Every key of a Kafka client config file as a ``kafka.*`` option, placeholders resolved
    through the providers the file declares, Kafka's own ``config.providers*`` keys left out;
    nothing filtered for a read or a write (``options.options_from_properties`` and
    ``kafkaConfigFile`` do that)."""
    source = os.fspath(path)
    props = read_properties(source, "kafkaConfigFile", CONFIG_NAMES, precise)
    resolved = resolve_placeholders(props, f"kafkaConfigFile {source}", precise=precise)
    return {f"kafka.{k}": v for k, v in resolved.items()}
