"""docker/: the compose file's services, ports, listeners, builds and mounts are consistent;
the Dockerfile's stages and COPY sources exist; the certificate script makes a keystore that a
TLS client trusting its CA accepts for the advertised host names; the client settings for the
SASL_SSL listener pass kafkawire's option parser; `docker compose config` accepts the file
where docker compose is installed. (No image is run here: this workplace reaches no image
registry, so the containers themselves are not started by the tests.)"""

from __future__ import annotations

import os
import re
import shutil
import ssl
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from spark_kafka_wire.source.options import parse_source_options

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
COMPOSE = DOCKER / "compose.yaml"
STORE_PASSWORD = b"kafkawire-docker"
# service -> host ports it must publish
PORTS = {"kafka": {9092, 9094}, "zookeeper": {2181}, "kafka-zk": {9095},
         "spark-connect": {15002, 4040}, "jupyter": {8888}}
ONE_SHOT = {"certs", "kafka-setup"}


def _compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _host_ports(service: dict) -> set[int]:
    return {int(str(p).split(":")[0]) for p in service.get("ports", [])}


def _env_map(text: str) -> dict[str, str]:
    """LISTENERS-style 'NAME://host:port,...' as {NAME: 'host:port'}."""
    return dict(item.split("://", 1) for item in text.split(","))


def test_services_and_ports() -> None:
    services = _compose()["services"]
    assert set(services) == set(PORTS) | ONE_SHOT
    published = []
    for name, ports in PORTS.items():
        assert _host_ports(services[name]) == ports, name
        published += sorted(ports)
    assert len(published) == len(set(published)), "a host port is published twice"
    for name, service in services.items():
        deps = service.get("depends_on", [])
        assert set(deps) <= set(services), f"{name} depends on an unknown service"


def test_kafka_listeners_match_the_published_ports_and_client_settings() -> None:
    services = _compose()["services"]
    env = services["kafka"]["environment"]
    listeners = _env_map(env["KAFKA_LISTENERS"])
    advertised = _env_map(env["KAFKA_ADVERTISED_LISTENERS"])
    protocols = dict(p.split(":") for p in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert set(listeners) == set(protocols)
    assert {protocols[n] for n in listeners} >= {"PLAINTEXT", "SASL_SSL"}
    for name, address in advertised.items():
        host, port = address.rsplit(":", 1)
        assert listeners[name].endswith(f":{port}"), name
        if host == "localhost":
            assert int(port) in _host_ports(services["kafka"]), f"{name} is not published"
        else:
            assert host == "kafka"
    inner = advertised[env["KAFKA_INTER_BROKER_LISTENER_NAME"]]
    for name in ("spark-connect", "jupyter"):
        assert services[name]["environment"]["KAFKA_BOOTSTRAP_SERVERS"] == inner
    client = (DOCKER / "client-sasl-ssl.properties").read_text()
    mechanism = re.search(r"sasl.mechanism=(\S+)", client).group(1)
    assert mechanism in env["KAFKA_SASL_ENABLED_MECHANISMS"].split(",")
    assert f"localhost:{advertised['SASL_SSL'].rsplit(':', 1)[1]}" in client
    setup = " ".join(services["kafka-setup"]["entrypoint"])
    assert f"{mechanism}=[password=alice-secret]" in setup and "alice" in client
    zk = services["kafka-zk"]["environment"]
    assert zk["KAFKA_ZOOKEEPER_CONNECT"].split(":")[0] == "zookeeper"


def test_builds_stages_copies_and_mounts_exist() -> None:
    services = _compose()["services"]
    dockerfile_text = {}
    for name, service in services.items():
        build = service.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            dockerfile = context / build["dockerfile"]
            assert dockerfile.is_file(), name
            text = dockerfile_text.setdefault(dockerfile, dockerfile.read_text())
            stages = re.findall(r"^FROM \S+ AS (\S+)$", text, re.M)
            assert build["target"] in stages, name
            for line in re.findall(r"^COPY (.+)$", text, re.M):
                if line.startswith("--from="):  # from an earlier stage, not the context
                    assert line.split()[0].split("=", 1)[1] in stages, line
                    continue
                for source in line.split()[:-1]:
                    assert (context / source).exists(), f"COPY {source}: missing"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                path = (DOCKER / source).resolve()
                made_at_run = path == DOCKER / "certs"
                assert path.exists() or made_at_run, f"{name}: {source} missing"
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignore and ".git" in ignore


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


def _compose_command() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_docker_compose_accepts_the_file() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("docker compose is not installed (.ci/run installs Debian's docker-compose)")
    result = subprocess.run([*command, "-f", str(COMPOSE), "config", "-q"], capture_output=True,
                            text=True, timeout=120, env={**os.environ, "COMPOSE_INTERACTIVE_NO_CLI": "1"})
    assert result.returncode == 0, result.stderr
