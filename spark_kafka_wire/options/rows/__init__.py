"""The rows of the option table (``options/table.py`` assembles them into ``OPTIONS``), one module
per area, so each stays short enough to read whole:

* ``kinds``: what a row is (``Option``, ``Use``, ``Kind``, ``RefusedValue``);
* ``connection``: every read's and write's connection, ZooKeeper and config-file settings;
* ``security``: SASL, OAUTHBEARER, GSSAPI (Kerberos) and TLS;
* ``reads``: batch and stream reads;
* ``writes``: writes;
* ``formats``: value formats and the Schema Registry;
* ``refused``: the Java client settings refused, accepted without effect, or refused with one
  value.

Like the table they are a leaf: the standard library, the protocol layer's constants and the
client's defaults (``client/defaults.py``) only.
"""
