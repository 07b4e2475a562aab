"""The defaults of the client's settings, each defined once: the client's config dataclasses
(``config.py``, ``fetch_settings.py``, ``tls.py``, ``sasl/``, ``producer/``) take them from here,
and so does the option table (``options/table.py``) for the ``kafka.*`` options that set them.

Why here: the client is the layer that uses these values, and it must not import the Spark
option table above it. The table reads them from this module instead, so the option reference
still says what the code does. This module imports only the protocol layer's constants (no
numpy, pyarrow or codec), so loading the table stays cheap. Names are the Java client's
settings (the ``kafka.`` prefix removed), upper-cased.
"""

from __future__ import annotations

from spark_kafka_wire.protocol.primitives import INT32_MAX

# ------------------------------------------------------------ connections (ClientConfig)
CLIENT_ID = "spark-kafka-wire"
REQUEST_TIMEOUT_MS = 30_000
SOCKET_CONNECTION_SETUP_TIMEOUT_MS = 10_000
RETRY_BACKOFF_MS = 100
RETRY_BACKOFF_MAX_MS = 1_000
METADATA_MAX_AGE_MS = 300_000
# librdkafka's api.version.request / broker.version.fallback
API_VERSION_REQUEST = True
BROKER_VERSION_FALLBACK = "0.10.0"
SECURITY_PROTOCOL = "PLAINTEXT"

# ------------------------------------------------------------------------------ security
# ssl.endpoint.identification.algorithm: "https" checks the broker's host name (TlsConfig)
SSL_ENDPOINT_IDENTIFICATION_ALGORITHM = "https"
# GSSAPI: the first part of the brokers' principals (KerberosConfig)
SASL_KERBEROS_SERVICE_NAME = "kafka"
# OAUTHBEARER token refresh (RefreshSettings): the two factors as Java's configs spell them
SASL_LOGIN_REFRESH_WINDOW_FACTOR = "0.8"
SASL_LOGIN_REFRESH_WINDOW_JITTER = "0.05"
SASL_LOGIN_REFRESH_MIN_PERIOD_SECONDS = 60
SASL_LOGIN_REFRESH_BUFFER_SECONDS = 300
# the token endpoint's timeouts and retries (HttpSettings, KIP-768) and header (KIP-1025)
SASL_LOGIN_CONNECT_TIMEOUT_MS = 10_000
SASL_LOGIN_READ_TIMEOUT_MS = 10_000
SASL_LOGIN_RETRY_BACKOFF_MS = 100
SASL_LOGIN_RETRY_BACKOFF_MAX_MS = 10_000
SASL_OAUTHBEARER_HEADER_URLENCODE = False
SASL_OAUTHBEARER_SUB_CLAIM_NAME = "sub"
SASL_OAUTHBEARER_SCOPE_CLAIM_NAME = "scope"

# ------------------------------------------------------------------ reads (FetchSettings)
MAX_PARTITION_FETCH_BYTES = 1 << 20
FETCH_MAX_BYTES = 50 << 20
FETCH_MAX_WAIT_MS = 500
FETCH_MIN_BYTES = 1
ISOLATION_LEVEL = "read_uncommitted"
CHECK_CRCS = True

# --------------------------------------------------------------- writes (ProduceSettings)
ACKS = "all"
COMPRESSION_TYPE = "none"
BATCH_SIZE = 512 << 10  # Java's: 16 KiB; a Spark task has its rows at hand
MAX_REQUEST_SIZE = 1 << 20
RETRIES = INT32_MAX
DELIVERY_TIMEOUT_MS = 120_000
LINGER_MS = 5
BUFFER_MEMORY = 32 << 20
MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION = 5
TRANSACTION_TIMEOUT_MS = 900_000  # Java's: 60000, short for a Spark job

# kafka.partitioner's values, librdkafka's partitioner names (producer/partitioner.py
# implements each), and its default, the Java client's placement.
PARTITIONERS = (
    "murmur2_random", "murmur2", "consistent_random", "consistent", "fnv1a_random", "fnv1a",
    "random",
)
DEFAULT_PARTITIONER = "murmur2_random"
