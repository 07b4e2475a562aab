"""TLS in front of a plaintext broker: Debian's stunnel4 in server mode.

Tansu has no working TLS listener, so the tests terminate TLS in stunnel (the same OpenSSL a
real broker's clients meet) and forward plaintext to Tansu, which advertises the stunnel port.
Mutual TLS is stunnel's ``verify = 2`` with the CA file: a client without a certificate from
that CA is refused (with TLS 1.3 the refusal reaches the client on its first read, not in the
handshake). Every process runs in the foreground as our child and is stopped by its PID.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from spark_kafka_wire.testing.embedded import free_port
from tests.support.certs import Keystore, TestPki
from tests.support.processes import stop_process, wait_for_port
from tests.support.tansu import HiddenTansu

START_TIMEOUT_S = 20.0
STUNNEL_PACKAGE = "stunnel4"


def stunnel_binary() -> str | None:
    return shutil.which("stunnel4") or shutil.which("stunnel")


class Stunnel:
    """One stunnel server: TLS on 127.0.0.1:``port``, plaintext to 127.0.0.1:``target_port``."""

    def __init__(self, port: int, target_port: int, server: Keystore,
                 client_ca: str | None = None) -> None:
        self.port = port
        self.target_port = target_port
        self.server = server
        self.client_ca = client_ca  # set: mutual TLS, clients need a certificate from this CA
        self.directory = tempfile.mkdtemp(prefix="kafkawire-stunnel-")
        self.log_path = os.path.join(self.directory, "stunnel.log")
        self.process: subprocess.Popen | None = None

    def config(self) -> str:
        lines = [
            "foreground = yes",
            "pid =",
            f"output = {self.log_path}",
            "debug = notice",
            "[kafka]",
            f"accept = 127.0.0.1:{self.port}",
            f"connect = 127.0.0.1:{self.target_port}",
            f"cert = {self.server.cert_pem}",
            f"key = {self.server.key_pem}",
            "sslVersionMin = TLSv1.2",
        ]
        if self.client_ca:
            lines += [f"CAfile = {self.client_ca}", "verify = 2"]
        return "\n".join(lines) + "\n"

    def start(self) -> Stunnel:
        binary = stunnel_binary()
        if binary is None:
            raise RuntimeError(f"stunnel is not installed: apt-get install {STUNNEL_PACKAGE}")
        conf = os.path.join(self.directory, "stunnel.conf")
        with open(conf, "w") as f:
            f.write(self.config())
        self.process = subprocess.Popen(
            [binary, conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for_port(self.port, self.process, START_TIMEOUT_S, "stunnel", self.log_path)
        except RuntimeError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        proc, self.process = self.process, None
        stop_process(proc)
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class TlsBroker:
    """A started Tansu behind stunnel; ``bootstrap_servers`` is the TLS port."""

    port: int
    pki: TestPki
    mutual: bool
    tansu: HiddenTansu
    stunnel: Stunnel

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.stunnel.stop()
        self.tansu.stop()

    def __enter__(self) -> TlsBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_tls_broker(pki: TestPki, server: Keystore | None = None,
                     mutual: bool = False) -> TlsBroker:
    """Tansu behind stunnel with ``server``'s certificate (default: the good localhost one).

    ``mutual``: clients must present a certificate signed by the session CA.
    """
    port = free_port()
    tansu = HiddenTansu(port).start()
    try:
        stunnel = Stunnel(port, tansu.port, server or pki.server,
                          client_ca=pki.ca_pem if mutual else None).start()
    except BaseException:
        tansu.stop()
        raise
    return TlsBroker(port=port, pki=pki, mutual=mutual, tansu=tansu, stunnel=stunnel)
