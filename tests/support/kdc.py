"""A real MIT Kerberos KDC (Debian's krb5-kdc) with a throw-away realm, for GSSAPI tests.

Kerberos clusters authenticate Kafka clients with GSSAPI; the only honest test is against a
real KDC. ``kdb5_util`` creates a realm database in a private temp dir, ``kadmin.local``
creates the service principals ``kafka/localhost`` (and ``kafka/127.0.0.1``, the name a
client derives when it connects by address) and a client principal, each exported to its own
keytab, and ``krb5kdc -n`` serves the realm on a free loopback port until stopped by PID.
Clients find it through ``KRB5_CONFIG`` (see ``environment()``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from spark_kafka_wire.testing.embedded import free_port
from tests.support.processes import stop_process, wait_for_port

REALM = "KAFKAWIRE.TEST"
SERVICE = "kafka"
CLIENT = "alice"
KRB5_PACKAGES = "krb5-kdc krb5-admin-server krb5-user libkrb5-dev"
TOOLS = {"krb5kdc": "/usr/sbin/krb5kdc", "kdb5_util": "/usr/sbin/kdb5_util",
         "kadmin.local": "/usr/sbin/kadmin.local", "kinit": "/usr/bin/kinit"}
COMMAND_TIMEOUT_S = 60.0
START_TIMEOUT_S = 20.0


def missing_tools() -> list[str]:
    return [name for name, path in TOOLS.items()
            if not (os.path.exists(path) or shutil.which(name))]


def kerberos_missing() -> str | None:
    """Why the GSSAPI tests cannot run here (their skip reason), or None."""
    missing = missing_tools()
    if missing:
        return (f"GSSAPI tests need MIT Kerberos ({', '.join(missing)} missing): "
                f"apt-get install {KRB5_PACKAGES}")
    try:
        import gssapi  # noqa: F401
    except ImportError:
        return ("GSSAPI tests need the gssapi package: apt-get install libkrb5-dev, then "
                "pip install -e '.[kerberos]'")
    return None


def _tool(name: str) -> str:
    return TOOLS[name] if os.path.exists(TOOLS[name]) else (shutil.which(name) or name)


@dataclass
class Kdc:
    directory: str
    port: int
    realm: str = REALM
    process: subprocess.Popen | None = None
    #: where krb5kdc listens and clients find it (the cluster tier: the test network's
    #: address of this machine, which every test host reaches)
    address: str = "127.0.0.1"

    @property
    def krb5_conf(self) -> str:
        return os.path.join(self.directory, "krb5.conf")

    @property
    def service_keytab(self) -> str:
        return os.path.join(self.directory, "kafka.keytab")

    @property
    def client_keytab(self) -> str:
        return os.path.join(self.directory, f"{CLIENT}.keytab")

    @property
    def client_principal(self) -> str:
        return f"{CLIENT}@{self.realm}"

    @property
    def ccache(self) -> str:
        return os.path.join(self.directory, "ccache")

    @property
    def log_path(self) -> str:
        return os.path.join(self.directory, "kdc.log")

    def environment(self) -> dict[str, str]:
        """Variables that point MIT Kerberos (in-process gssapi, kinit) at this realm: the
        client keytab lets GSSAPI initiators get tickets without an explicit kinit."""
        return {"KRB5_CONFIG": self.krb5_conf, "KRB5_KDC_PROFILE": os.path.join(self.directory, "kdc.conf"),
                "KRB5CCNAME": f"FILE:{self.ccache}", "KRB5_CLIENT_KTNAME": self.client_keytab,
                "KRB5RCACHETYPE": "none"}

    def _run(self, *args: str) -> None:
        env = {**os.environ, **self.environment()}
        result = subprocess.run(list(args), env=env, capture_output=True, text=True,
                                timeout=COMMAND_TIMEOUT_S, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:3])} failed ({result.returncode}): "
                               f"{result.stdout.strip()} {result.stderr.strip()}")

    def kinit(self) -> None:
        """Get the client's TGT from its keytab into ``ccache``."""
        self._run(_tool("kinit"), "-kt", self.client_keytab, self.client_principal)

    def stop(self) -> None:
        proc, self.process = self.process, None
        stop_process(proc)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> Kdc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_kdc(address: str = "127.0.0.1", service_hosts: tuple[str, ...] = (),
              parent: str | None = None) -> Kdc:
    """Create the realm and its keytabs in a 0700 temp dir (in ``parent`` if given) and start
    krb5kdc on a free port of ``address``. The service keytab holds ``kafka/localhost``,
    ``kafka/127.0.0.1`` and ``kafka/<host>`` for each of ``service_hosts`` (a broker's
    address on the cluster tier)."""
    missing = missing_tools()
    if missing:
        raise RuntimeError(f"MIT Kerberos tools missing ({', '.join(missing)}): "
                           f"apt-get install {KRB5_PACKAGES}")
    directory = tempfile.mkdtemp(prefix="kafkawire-kdc-", dir=parent)
    os.chmod(directory, 0o700)
    kdc = Kdc(directory=directory, port=free_port(), address=address)
    services = [f"{SERVICE}/{h}" for h in ("localhost", "127.0.0.1", *service_hosts)]
    try:
        _configure(kdc, service_hosts)
        kdc._run(_tool("kdb5_util"), "create", "-s", "-r", REALM, "-P", "kdc-master-password")
        for principal in (*services, CLIENT):
            kdc._run(_tool("kadmin.local"), "-r", REALM, "-q", f"addprinc -randkey {principal}")
        kdc._run(_tool("kadmin.local"), "-r", REALM, "-q",
                 f"ktadd -k {kdc.service_keytab} {' '.join(services)}")
        kdc._run(_tool("kadmin.local"), "-r", REALM, "-q", f"ktadd -k {kdc.client_keytab} {CLIENT}")
        env = {**os.environ, **kdc.environment()}
        with open(kdc.log_path, "ab") as log:
            kdc.process = subprocess.Popen(
                [_tool("krb5kdc"), "-n", "-r", REALM], env=env, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        wait_for_port(kdc.port, kdc.process, START_TIMEOUT_S, "krb5kdc", kdc.log_path,
                      host=address)
        kdc.kinit()
    except BaseException:
        kdc.stop()
        raise
    return kdc


def _configure(kdc: Kdc, service_hosts: tuple[str, ...] = ()) -> None:
    d = kdc.directory
    more_hosts = "".join(f" {h} = {REALM}\n" for h in service_hosts)
    with open(kdc.krb5_conf, "w") as f:
        f.write(f"""[libdefaults]
 default_realm = {REALM}
 dns_lookup_realm = false
 dns_lookup_kdc = false
 rdns = false
 dns_canonicalize_hostname = false
 udp_preference_limit = 1
 ticket_lifetime = 1h
[realms]
 {REALM} = {{
  kdc = {kdc.address}:{kdc.port}
 }}
[domain_realm]
 localhost = {REALM}
 127.0.0.1 = {REALM}
{more_hosts}""")
    with open(os.path.join(d, "kdc.conf"), "w") as f:
        f.write(f"""[kdcdefaults]
 kdc_listen = {kdc.address}:{kdc.port}
 kdc_tcp_listen = {kdc.address}:{kdc.port}
[realms]
 {REALM} = {{
  database_name = {d}/principal
  key_stash_file = {d}/stash
  acl_file = {d}/kadm5.acl
  max_life = 1h
  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
 }}
[logging]
 kdc = FILE:{kdc.log_path}
""")
    with open(os.path.join(d, "kadm5.acl"), "w") as f:
        f.write("")
