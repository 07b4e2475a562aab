"""docker/'s build steps, run here: the Dockerfile's wheel command makes a wheel of both packages
and nothing else; the certificate script makes a keystore that a TLS client trusting its CA
accepts for the advertised host names; the client settings for the SASL_SSL listener pass
kafkawire's option parser with those certificates. Here and not in tests/unit/test_docker.py
because they run pip's isolated build (which may fetch its build backend) and the JDK's keytool.
(No image is run: this workplace reaches no image registry.)"""

from __future__ import annotations

import re
import shutil
import ssl
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from spark_kafka_wire.source.options import parse_source_options

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
STORE_PASSWORD = b"kafkawire-docker"


def test_image_installs_the_package_as_a_wheel(tmp_path) -> None:
    """The image gets kafkawire as users do, from a wheel pip builds out of the repository, so
    it holds pyspark_kafkawire (Spark's lookup of format("kafkawire") without register()):
    no stage copies package folders, and the Dockerfile's own wheel command, run on the build
    context .dockerignore leaves, makes a wheel with both packages and nothing else."""
    text = (DOCKER / "Dockerfile").read_text()
    assert not re.search(r"^COPY\s+(\./)?(spark_kafka_wire|pyspark_kafkawire)", text, re.M)
    assert re.search(r"^COPY \. \.$", text, re.M)
    command = re.search(r"^RUN (pip wheel .+)$", text, re.M).group(1).split()
    assert command[-1] == "." and "--no-deps" in command
    ignore = [p.strip().strip("/").removeprefix("**/") for p in
              (ROOT / ".dockerignore").read_text().split() if p.strip()]
    context = tmp_path / "context"
    shutil.copytree(ROOT, context, ignore=shutil.ignore_patterns(
        *ignore, "build", ".*_cache", ".hypothesis"))
    dist = tmp_path / "dist"
    args = [a for a in command[1:-1] if a not in ("--no-cache-dir",)]
    args[args.index("--wheel-dir") + 1] = str(dist)
    built = subprocess.run([sys.executable, "-m", "pip", *args, "--quiet", str(context)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("spark_kafka_wire-*.whl")
    with zipfile.ZipFile(wheel) as z:
        tops = {name.split("/")[0] for name in z.namelist()}
    assert {"spark_kafka_wire", "pyspark_kafkawire"} <= tops
    assert not tops & {"tests", "bench", "scripts", "notebooks", "docker", "conf"}, tops


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, host: str) -> None:
    """A TLS handshake in memory, both ends in this process."""
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    cli = client.wrap_bio(c_in, c_out, server_hostname=host)
    srv = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(20):
        for key, end, out, peer_in in (("c", cli, c_out, s_in), ("s", srv, s_out, c_in)):
            if not done[key]:
                try:
                    end.do_handshake()
                    done[key] = True
                except ssl.SSLWantReadError:
                    pass
            peer_in.write(out.read())
        if all(done.values()):
            return
    raise AssertionError("handshake did not finish")


@pytest.fixture(scope="module")
def docker_certs(tmp_path_factory) -> Path:
    if shutil.which("keytool") is None:
        pytest.skip("needs the JDK's keytool (Spark needs a JDK too)")
    out = tmp_path_factory.mktemp("docker") / "certs"
    subprocess.run(["bash", str(DOCKER / "scripts" / "make-certs.sh"), str(out)], check=True,
                   capture_output=True, timeout=120)
    return out


def test_certificate_script_makes_a_keystore_trusted_for_the_advertised_names(
        docker_certs, tmp_path) -> None:
    p12 = pkcs12.load_pkcs12((docker_certs / "kafka.keystore.p12").read_bytes(), STORE_PASSWORD)
    key = tmp_path / "key.pem"
    key.write_bytes(p12.key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    chain = tmp_path / "chain.pem"
    chain.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM)
                               for c in [p12.cert.certificate,
                                         *(c.certificate for c in p12.additional_certs)]))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(chain, key)
    client = ssl.create_default_context(cafile=str(docker_certs / "ca.pem"))
    for host in ("localhost", "kafka"):
        _handshake(server, client, host)
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(server, client, "elsewhere.invalid")
    # idempotent: a second run keeps the keystore
    before = (docker_certs / "kafka.keystore.p12").read_bytes()
    subprocess.run(["bash", str(DOCKER / "scripts" / "make-certs.sh"), str(docker_certs)],
                   check=True, capture_output=True, timeout=120)
    assert (docker_certs / "kafka.keystore.p12").read_bytes() == before


def test_client_settings_pass_the_option_parser(docker_certs, tmp_path, monkeypatch) -> None:
    (tmp_path / "docker").mkdir()
    shutil.copytree(docker_certs, tmp_path / "docker" / "certs")
    monkeypatch.chdir(tmp_path)  # the file's paths are relative to the repository root
    parsed = parse_source_options({"kafkaConfigFile": str(DOCKER / "client-sasl-ssl.properties"),
                                   "subscribe": "t"})
    assert parsed.client.security_protocol == "SASL_SSL"
    assert parsed.client.sasl is not None and parsed.client.tls is not None
