"""docker/: the compose file's services, ports, listeners, builds and mounts are consistent;
the Dockerfile's stages and COPY sources exist; `docker compose config` accepts the file where
docker compose is installed. What runs the image's build steps (pip's wheel build, the
certificate script's keytool) is tests/integration/test_docker_build.py. (No image is run here: this workplace reaches no image
registry, so the containers themselves are not started by the tests.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
COMPOSE = DOCKER / "compose.yaml"
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
