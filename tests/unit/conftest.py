"""The unit tier starts no JVM: its test PKI has no JKS stores (keytool is Java). The JKS
checks run in tests/integration/test_tls_java_stores.py on the suite's full PKI."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def pki():
    """TestPki as tests/conftest.py's, without the JKS files (their paths are None)."""
    from tests.support.certs import make_pki, remove_pki

    made = make_pki(jks=False)
    yield made
    remove_pki(made)
