""".proto text schemas compiled to FileDescriptorProtos by the real protobuf compiler.

Why: Java producers (Confluent's KafkaProtobufSerializer) register ``.proto`` text, while
Python ones register a base64 serialized FileDescriptorProto. Writing a .proto parser would
be a second, drifting grammar; ``protoc`` from ``grpcio-tools`` is the reference one. It runs
as a subprocess (I/O: why this is in the client layer, and ``formats/`` only ever sees binary
descriptors), in a temporary directory holding only the schema and its references; the include path is that directory and grpc_tools' well-known files, so text
supplied by a tenant cannot make protoc read anything else (import paths that would leave
the directory are refused before protoc runs, and protoc itself refuses ``..`` imports).
Results are cached per process by a hash of the schema and its references.

A reference's name is the registry's answer, and it names a file protoc compiles: it is
data, never part of protoc's command line (issue 45: names such as
``--plugin=protoc-gen-x=/bin/sh`` ran a shell command). Names must be plain relative paths
(``check_import_path``), and protoc's inputs are the written files' absolute paths, so no
string from the registry stands where protoc reads an option.

``binary_schemas`` is what the source and the sink call: the registry's schema and references
as base64 serialized FileDescriptorProtos, compiled on the driver when any is text, so the
decoders and encoders that travel to the executors carry descriptors and never run protoc.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping

from google.protobuf import descriptor_pb2

#: bound on protoc's message shown in an error (its first lines name the file:line:column)
MAX_ERROR_CHARS = 2000
#: protoc should take well under a second; a hung child must not hang a Spark task forever
PROTOC_TIMEOUT_S = 120.0

#: the longest reference name taken (an import path; a registry could send megabytes)
MAX_IMPORT_PATH_CHARS = 512
#: the longest segment of one (most file systems' limit on a file name)
MAX_SEGMENT_CHARS = 255
#: the most characters of a refused name shown in its error
SHOWN_NAME_CHARS = 80
#: one segment of an import path: letters, digits, '_', '-', '.', starting with neither
#: '-' (protoc would read an option), '.' ('.', '..', the directory's own dot files) nor '@'
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

_cache: dict[str, dict[str, descriptor_pb2.FileDescriptorProto]] = {}
_lock = threading.Lock()


def binary_file_descriptor(schema: str | bytes) -> descriptor_pb2.FileDescriptorProto | None:
    """The FileDescriptorProto a schema holds when it is base64 of a serialized one with a
    file name (what confluent-kafka Python and ``format=serialized`` give), else None (text)."""
    raw = schema.encode() if isinstance(schema, str) else schema
    try:
        fdp = descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(raw, validate=True))
    except Exception:  # noqa: BLE001 (binascii.Error or DecodeError: not base64 FDP)
        return None
    return fdp if fdp.name else None


def synthetic_name(schema: str) -> str:
    """The stable file name given to a text schema (the registry stores none for it)."""
    return f"kafkawire_{hashlib.sha256(schema.encode()).hexdigest()[:16]}.proto"


def _shown(text: str) -> str:
    """``text`` quoted for a message: ASCII with escapes (a newline stays ``\\n``), at most
    SHOWN_NAME_CHARS of its characters."""
    cut = text[:SHOWN_NAME_CHARS]
    return ascii(cut)[:-1] + ("...'" if len(text) > len(cut) else "'")


class UnsafeImportPathError(ValueError):
    """A Protobuf schema reference whose name is not a plain relative import path, refused
    before any file is written or protoc runs. A ValueError, as every schema that cannot be
    compiled here: the source and the sink report it as the column's configuration error.
    ``name`` is the registry's name as given, ``subject`` the schema's (None: unknown),
    ``reason`` what is wrong with the name."""

    def __init__(self, name: str, subject: str | None, reason: str) -> None:
        self.name, self.subject, self.reason = name, subject, reason
        where = f" of subject {_shown(subject)}" if subject is not None else ""
        super().__init__(
            f"Protobuf schema reference {_shown(name)}{where} is not a relative import path "
            f"kafkawire compiles: {reason}. Rename the reference in the registry to a path of "
            "letters, digits, '_', '-' and '.' segments joined by '/' (e.g. "
            "'pkg/file.proto'), no segment starting with '-', '.' or '@'")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.name, self.subject, self.reason))


def _import_path_problem(name: object) -> str | None:
    """Why ``name`` is not a plain relative import path, or None when it is one."""
    if not isinstance(name, str):
        return f"it is a {type(name).__name__}, not a string"
    if not name:
        return "it is empty"
    if len(name) > MAX_IMPORT_PATH_CHARS:
        return f"it has {len(name)} characters, more than {MAX_IMPORT_PATH_CHARS}"
    if any(not " " < c <= "~" for c in name):
        return "it holds whitespace, a control character or a character that is not ASCII"
    if name.startswith("/") or "\\" in name or ":" in name:
        return "it is absolute or not a '/' path ('/', ':' or '\\')"
    for part in name.split("/"):
        if not part:
            return "it has an empty segment ('//', or '/' at its end)"
        if part in (".", ".."):
            return f"it has a {part!r} segment"
        if part[0] in "-@":
            return f"a segment starts with {part[0]!r} (protoc reads such arguments as options)"
        if part[0] == ".":
            return "a segment starts with '.' (the compile directory's own files do)"
        if len(part) > MAX_SEGMENT_CHARS:
            return f"a segment has more than {MAX_SEGMENT_CHARS} characters"
        if not _SEGMENT.fullmatch(part):
            return "it holds a character other than letters, digits, '_', '-', '.' and '/'"
    return None


def check_import_path(name: str, subject: str | None = None) -> None:
    """Refuses (UnsafeImportPathError) a reference name that is not a plain relative path
    of letters, digits, ``_``, ``-`` and ``.`` segments joined by ``/``, at most
    MAX_IMPORT_PATH_CHARS long: the name becomes a file in the temporary directory and
    protoc's input, so it may neither leave the directory (absolute, ``..``) nor be read by
    protoc as an option (a segment starting with ``-`` or ``@``), nor hold whitespace or
    control characters (a newline ended a shell command's line in issue 45's exploit)."""
    problem = _import_path_problem(name)
    if problem is not None:
        raise UnsafeImportPathError(str(name), subject, problem)


def _well_known_dir() -> str:
    return str(importlib.resources.files("grpc_tools") / "_proto")


def compile_text(schema: str | bytes, references: Mapping[str, str | bytes] | None = None,
                 subject: str | None = None
                 ) -> tuple[str, dict[str, descriptor_pb2.FileDescriptorProto]]:
    """The ``schema`` and its ``references`` (import name -> text or base64 binary), at
    least one of them text, compiled by protoc (binary files are given to it as a
    descriptor set, so mixed references work). Returns the main file's name and every file protoc produced (the
    main one, text references and the files they import, well-known ones included).
    Raises ValueError with protoc's message (bounded) when the text does not compile."""
    refs = dict(references or {})
    main_binary = binary_file_descriptor(schema)
    if isinstance(schema, bytes):
        schema = schema.decode("utf-8")
    main = main_binary.name if main_binary is not None else synthetic_name(schema)
    key = hashlib.sha256(repr((schema, sorted(
        (k, v if isinstance(v, str) else v.decode("latin-1")) for k, v in refs.items()))
    ).encode()).hexdigest()
    with _lock:
        cached = _cache.get(key)
    if cached is not None:
        return main, cached
    binary = descriptor_pb2.FileDescriptorSet()
    targets: list[str] = []  # protoc's inputs: absolute paths of files written under tmp
    if main_binary is not None:
        binary.file.append(main_binary)
    for name in refs:
        # every name checked before anything is written or run
        check_import_path(name, subject)
    with tempfile.TemporaryDirectory(prefix="kafkawire-proto-") as tmp:
        for name, text in refs.items():
            fdp = binary_file_descriptor(text)
            if fdp is not None:
                # a binary reference: protoc takes it from a descriptor set under its name
                fdp.name = name
                binary.file.append(fdp)
                continue
            path = os.path.join(tmp, *name.split("/"))
            if main_binary is not None:
                # its absolute path, under the include path (protoc names the file by its
                # import name): a name is never where protoc reads options
                targets.append(path)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text if isinstance(text, str) else text.decode("utf-8"))
            except OSError as exc:  # 'a' and 'a/b.proto' both: a file where a directory is
                raise UnsafeImportPathError(
                    name, subject, f"its file cannot be written beside the other references "
                                   f"({type(exc).__name__})") from None
        if main_binary is None:
            if main in refs:
                raise ValueError(f"Protobuf schema reference name {main!r} is reserved")
            targets.append(os.path.join(tmp, main))
            with open(targets[-1], "w", encoding="utf-8") as f:
                f.write(schema)
        out = os.path.join(tmp, ".kafkawire-out.pb")
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp}",
               f"-I{_well_known_dir()}", f"--descriptor_set_out={out}", "--include_imports"]
        if binary.file:
            ins = os.path.join(tmp, ".kafkawire-in.pb")
            with open(ins, "wb") as f:
                f.write(binary.SerializeToString())
            cmd.append(f"--descriptor_set_in={ins}")
        cmd.extend(targets)
        try:
            done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True,
                                  timeout=PROTOC_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ValueError(f"protoc did not finish in {PROTOC_TIMEOUT_S:.0f} s") from exc
        if done.returncode != 0 or not os.path.exists(out):
            where = f" of subject {subject!r}" if subject else ""
            msg = (done.stderr or done.stdout).strip().replace(tmp + os.sep, "")
            if len(msg) > MAX_ERROR_CHARS:
                msg = msg[:MAX_ERROR_CHARS] + " ..."
            raise ValueError(
                f"Protobuf .proto text schema{where} does not compile (main file {main}; "
                f"fix the schema or its references in the registry): {msg}")
        with open(out, "rb") as f:
            fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    files = {fdp.name: fdp for fdp in fds.file}
    for fdp in binary.file:
        files.setdefault(fdp.name, fdp)
    with _lock:
        _cache[key] = files
    return main, files


def _b64(fdp: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.b64encode(fdp.SerializeToString()).decode()


def binary_schemas(schema: str, references: Mapping[str, str] | None = None,
                   subject: str | None = None) -> tuple[str, dict[str, str]]:
    """``schema`` and its ``references`` (import name -> schema) as base64 serialized
    FileDescriptorProtos: unchanged when every one already is, else compiled by protoc
    (``compile_text``) into the main file and every other file it imports (well-known
    google/protobuf files left to the runtime). ValueError when the text does not compile."""
    refs = dict(references or {})
    if binary_file_descriptor(schema) is not None and all(
            binary_file_descriptor(r) is not None for r in refs.values()):
        return schema, refs
    main, files = compile_text(schema, refs, subject)
    others = {name: _b64(f) for name, f in files.items()
              if name != main and not name.startswith("google/protobuf/")}
    return _b64(files[main]), others
