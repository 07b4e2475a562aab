"""One engine for every API version: message layouts are data, compiled per version.

A layout is a tuple of Field, each naming the versions in which it exists, the versions in
which it may be null and, for flexible versions (KIP-482), an optional tag. Compiling a layout
for one version yields a pair of closures (encode, decode) with no per-call version checks;
values are plain dicts keyed by snake_case field names, and a decoded dict also carries every
field the version lacks, set to its default, so callers read all versions alike.

Encoding is strict, because a loose dict hides mistakes on the wire: a key that is no field of
the API in any version (a typo such as ``isolation_levl``) is refused, and so is a field of the
chosen version that is missing and has no declared ``default`` (leaving it out would send a
zero the caller never chose). A key naming a field that only other versions have is accepted
and not written: that is version negotiation (callers build one dict for every version the
broker may pick). The checks are set comparisons of the dict's keys against frozensets
precomputed per layout and version, so they cost little on the Fetch and Produce paths
(bench/requests.py).
"""

from __future__ import annotations

import struct
import uuid as _uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from spark_kafka_wire.protocol.errors import LocalProtocolError, MessageEncodeError, ProtocolError
from spark_kafka_wire.protocol.primitives import Reader, Writer

Encode = Callable[[Writer, Any], None]
Decode = Callable[[Reader], Any]
_MISSING: Any = object()
NULL_UUID = _uuid.UUID(int=0)


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``none`` is lo > hi."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), 1 << 15)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi


@dataclass(frozen=True)
class Field:
    """One field of a message layout (names follow Kafka's specs, in snake_case).

    ``type`` is a primitive (int8 int16 uint16 int32 int64 float64 bool uuid string bytes
    records), ``[]<primitive>``, ``[]`` for an array of the struct given by ``fields``, or
    ``struct`` for a nested struct.
    """

    name: str
    type: str
    versions: str = "0+"
    nullable: str | None = None
    default: Any = _MISSING
    tag: int | None = None
    tagged: str | None = None
    fields: tuple[Field, ...] = ()
    _v: Versions = field(init=False, repr=False, compare=False)
    _nv: Versions = field(init=False, repr=False, compare=False)
    _tv: Versions = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_v", Versions.parse(self.versions))
        object.__setattr__(self, "_nv", Versions.parse(self.nullable))
        object.__setattr__(self, "_tv", Versions.parse(self.tagged))

    @property
    def has_default(self) -> bool:
        """Whether the layout declares a default (the encoder then fills the field in)."""
        return self.default is not _MISSING

    def default_value(self, version: int) -> Any:
        if self.default is not _MISSING:
            return self.default
        t = self.type
        if t.startswith("["):
            return None if version in self._nv else []
        if t in ("string", "bytes", "records"):
            return None if version in self._nv else ("" if t == "string" else b"")
        if t == "struct":
            return None
        if t == "bool":
            return False
        if t == "uuid":
            return NULL_UUID
        if t == "float64":
            return 0.0
        return 0


def _fresh(value: Any) -> Any:
    return [] if isinstance(value, list) else value


class _EncodeFault(Exception):
    """Raised inside the compiled encoders; ``path`` grows outwards (innermost first) as the
    fault unwinds through structs and arrays, and ApiSpec turns it into MessageEncodeError
    with the API's name and version, which the encoders do not know."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str] = []

    def within(self, segment: str) -> _EncodeFault:
        self.path.append(segment)
        return self


# What a wrong value makes the primitive writers raise (struct.error is an Exception).
_VALUE_ERRORS = (TypeError, ValueError, OverflowError, AttributeError, struct.error)


def _primitive(t: str, flexible: bool, nullable: bool, name: str) -> tuple[Encode, Decode]:
    enc: Encode
    dec: Decode
    if t in ("int8", "int16", "uint16", "int32", "int64", "float64", "bool", "uuid"):
        return getattr(Writer, t), getattr(Reader, t)
    if t == "string":
        enc = Writer.compact_nullable_string if flexible else Writer.nullable_string
        if nullable:
            return enc, (Reader.compact_nullable_string if flexible else Reader.nullable_string)
        dec = Reader.compact_string if flexible else Reader.string

        def enc_required(w: Writer, v: Any) -> None:
            if v is None:
                raise _EncodeFault("cannot be null in this version")
            enc(w, v)

        return enc_required, dec
    if t in ("bytes", "records"):
        enc = Writer.compact_nullable_bytes if flexible else Writer.nullable_bytes
        dec = Reader.compact_nullable_bytes if flexible else Reader.nullable_bytes
        if nullable:
            return enc, dec

        def dec_required(r: Reader) -> Any:
            v = dec(r)
            if v is None:
                raise ProtocolError(f"null bytes in non-nullable field {name!r}")
            return v

        return enc, dec_required
    raise LocalProtocolError.of("KAFKAWIRE_LOCAL_PROTOCOL.UNKNOWN_FIELD_TYPE", type=t, field=name)


def _field_codec(f: Field, version: int, flexible: bool) -> tuple[Encode, Decode]:
    nullable = version in f._nv
    t = f.type
    if t == "struct":
        return compile_struct(f.fields, version, flexible)
    if not t.startswith("[]"):
        return _primitive(t, flexible, nullable, f.name)
    elem_type = t[2:]
    if elem_type:
        enc_e, dec_e = _primitive(elem_type, flexible, False, f.name)
    else:
        enc_e, dec_e = compile_struct(f.fields, version, flexible)
    name = f.name

    def enc_array(w: Writer, items: Any) -> None:
        if items is None:
            if not nullable:
                raise _EncodeFault("array cannot be null in this version")
            w.array_length(None, flexible)
            return
        w.array_length(len(items), flexible)
        item = None
        try:
            for item in items:
                enc_e(w, item)
        except _EncodeFault as fault:
            raise fault.within(f"[{_index_of(items, item)}]") from None
        except _VALUE_ERRORS as exc:
            raise _EncodeFault(_bad_value(elem_type, item, exc)).within(
                f"[{_index_of(items, item)}]") from None

    def dec_array(r: Reader) -> Any:
        n = r.array_length(flexible)
        if n < 0:
            if not nullable:
                raise ProtocolError(f"null array in non-nullable field {name!r}")
            return None
        return [dec_e(r) for _ in range(n)]

    return enc_array, dec_array


def _index_of(items: Any, item: Any) -> int:
    """Position of ``item`` (by identity) in ``items``: found only when encoding failed, so
    the loop that encodes an array need not count."""
    for i, candidate in enumerate(items):
        if candidate is item:
            return i
    return -1


def _bad_value(type_: str, value: Any, exc: BaseException) -> str:
    return f"cannot encode {value!r:.60} as {type_ or 'struct'} ({type(exc).__name__}: {exc})"


_cache: dict[tuple[int, int, bool], tuple[Encode, Decode]] = {}


def compile_struct(fields: tuple[Field, ...], version: int, flexible: bool) -> tuple[Encode, Decode]:
    """Encoder and decoder of ``fields`` at ``version`` (cached per layout and version)."""
    key = (id(fields), version, flexible)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    regular: list[tuple[str, Encode, Decode]] = []
    tagged: dict[int, tuple[str, Encode, Decode, Any]] = {}
    absent: list[tuple[str, Any]] = []
    for f in fields:
        if version not in f._v:
            absent.append((f.name, f.default_value(version)))
        elif flexible and f.tag is not None and version in f._tv:
            enc, dec = _field_codec(f, version, True)
            tagged[f.tag] = (f.name, enc, dec, f.default_value(version))
            absent.append((f.name, f.default_value(version)))
        else:
            enc, dec = _field_codec(f, version, flexible)
            regular.append((f.name, enc, dec))
    tag_order = sorted(tagged)

    types = {f.name: f.type for f in fields}

    def encode(w: Writer, obj: Any) -> None:
        get = obj.get
        name = ""
        try:
            for name, enc, _ in regular:
                enc(w, get(name))
        except _EncodeFault as fault:
            raise fault.within(name) from None
        except _VALUE_ERRORS as exc:
            raise _EncodeFault(_bad_value(types[name], get(name), exc)).within(name) from None
        if not flexible:
            return
        present = []
        for tag in tag_order:
            name, enc, _, default = tagged[tag]
            value = get(name, default)
            if value is not None and value != default:
                sub = Writer()
                try:
                    enc(sub, value)
                except _EncodeFault as fault:
                    raise fault.within(name) from None
                except _VALUE_ERRORS as exc:
                    raise _EncodeFault(_bad_value(types[name], value, exc)).within(name) from None
                present.append((tag, sub.buf))
        w.uvarint(len(present))
        for tag, payload in present:
            w.uvarint(tag)
            w.uvarint(len(payload))
            w.raw(payload)

    def decode(r: Reader) -> dict[str, Any]:
        out = {name: _fresh(default) for name, default in absent}
        for name, _, dec in regular:
            out[name] = dec(r)
        if flexible:
            for _ in range(r.uvarint()):
                tag = r.uvarint()
                size = r.uvarint()
                body = r.take(size, "tagged field")
                known = tagged.get(tag)
                if known is not None:
                    sub = Reader(body)
                    out[known[0]] = known[2](sub)
        return out

    result = (_strict(encode, fields, regular), decode)
    _cache[key] = result
    return result


def _strict(encode: Encode, fields: tuple[Field, ...],
            regular: list[tuple[str, Encode, Decode]]) -> Encode:
    """``encode`` behind the strict check (module docstring): keys must name fields of the
    layout in some version; the version's regular fields without a declared default must be
    given; those with one are filled in; tagged fields are optional by nature (encode writes
    them when not default)."""
    by_name = {f.name: f for f in fields}
    known = frozenset(f.name for f in fields)
    required = frozenset(name for name, _, _ in regular if not by_name[name].has_default)
    declared = {name: by_name[name].default for name, _, _ in regular
                if by_name[name].has_default}
    declared_keys = frozenset(declared)
    exact = frozenset(name for name, _, _ in regular)

    def encode_checked(w: Writer, obj: Any) -> None:
        try:
            keys = obj.keys()
        except AttributeError:
            raise _EncodeFault(f"a struct must be a dict, not {obj!r:.60}") from None
        if keys == exact:  # every field of the version and nothing else: one comparison
            encode(w, obj)
            return
        if not keys <= known:
            unknown = ", ".join(sorted(keys - known))
            raise _EncodeFault(f"unknown field(s) {unknown}: no version of this API has them "
                               f"(fields here: {', '.join(sorted(known))})")
        if not keys >= required:
            missing = ", ".join(sorted(required - keys))
            raise _EncodeFault(f"missing field(s) {missing}, which this version has and which "
                               "have no default: give them")
        if not keys >= declared_keys:
            obj = {**declared, **obj}
        encode(w, obj)

    return encode_checked


RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")


@dataclass(frozen=True)
class ApiSpec(Generic[RequestT, ResponseT]):
    """Request and response layouts of one API, the versions we implement and where
    flexible encoding starts (None: never).

    The type parameters are the API's body types (protocol/bodies.py, generated from the
    layouts): messages.py declares them, so mypy checks every dict the client builds for a
    request and every field it reads from a response. At run time the bodies are plain dicts.
    """

    key: int
    name: str
    min_version: int
    max_version: int
    flexible_from: int | None
    request: tuple[Field, ...]
    response: tuple[Field, ...]

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def check_version(self, version: int) -> None:
        if not self.min_version <= version <= self.max_version:
            raise LocalProtocolError.of(
                "KAFKAWIRE_LOCAL_PROTOCOL.VERSION_NOT_IMPLEMENTED", api=self.name,
                version=version, low=self.min_version, high=self.max_version)

    def _codec(self, kind: str, version: int) -> tuple[Encode, Decode]:
        self.check_version(version)
        layout = self.request if kind == "request" else self.response
        return compile_struct(layout, version, self.is_flexible(version))

    def _encode(self, kind: str, version: int, body: Mapping[str, Any]) -> bytes:
        w = Writer()
        self._encode_into(kind, w, version, body)
        return w.getvalue()

    def _encode_into(self, kind: str, w: Writer, version: int, body: Mapping[str, Any]) -> None:
        encode = self._codec(kind, version)[0]
        try:
            encode(w, body)
        except _EncodeFault as fault:
            raise MessageEncodeError(self.name, version, kind, _path(fault.path),
                                     fault.problem) from None

    def _decode(self, kind: str, version: int, data: bytes | memoryview) -> dict[str, Any]:
        return _decode_all(self._codec(kind, version)[1], data, f"{self.name} v{version} {kind}")

    def encode_request(self, version: int, body: RequestT) -> bytes:
        return self._encode("request", version, cast(Mapping[str, Any], body))

    def encode_request_into(self, w: Writer, version: int, body: RequestT) -> None:
        """Append the request body to ``w`` (a frame's writer: no intermediate copy)."""
        self._encode_into("request", w, version, cast(Mapping[str, Any], body))

    def decode_request(self, version: int, data: bytes | memoryview) -> dict[str, Any]:
        """A request as a broker reads it (the test brokers): every field, so a plain dict."""
        return self._decode("request", version, data)

    def encode_response(self, version: int, body: ResponseT) -> bytes:
        return self._encode("response", version, cast(Mapping[str, Any], body))

    def decode_response(self, version: int, data: bytes | memoryview) -> ResponseT:
        return cast(ResponseT, self._decode("response", version, data))


def _path(segments: list[str]) -> str:
    """``topics[0].partitions[2].fetch_offset`` from the segments, innermost first."""
    out = ""
    for segment in reversed(segments):
        out += segment if segment.startswith("[") or not out else "." + segment
    return out


def _decode_all(dec: Decode, data: bytes | memoryview, what: str) -> dict[str, Any]:
    r = Reader(data)
    try:
        out = dec(r)
    except ProtocolError as exc:
        raise ProtocolError(f"cannot decode {what}: {exc.reason}") from exc
    if r.remaining():
        raise ProtocolError(f"cannot decode {what}: {r.remaining()} unexpected trailing bytes")
    return out
