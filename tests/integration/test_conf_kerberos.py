"""conf/kerberos.properties parses for reads and writes with GSSAPI over SASL_SSL, its keytab
and principal those of a real MIT KDC's client (the ``kdc`` fixture). The other conf/ files
are parsed in the unit tier (tests/unit/test_conf_dir.py), which starts no KDC."""

from __future__ import annotations

from tests.support.conf_properties import CONF, check_properties_file, environment


def test_kerberos_properties_file_parses_for_reads_and_writes(pki, kdc, tmp_path,
                                                              monkeypatch) -> None:
    path = CONF / "kerberos.properties"
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    env = environment(path, pki, tmp_path, kdc)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    check_properties_file(path, env)
