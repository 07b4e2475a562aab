"""ACLs on the Apache Kafka test broker (tests/support/apache_kafka.py), for authorization tests.

CreateAcls (API key 30) and DescribeAcls (29) spoken by kafkawire's own protocol engine, as
the super user ``admin`` over SASL_PLAINTEXT: the broker's jars hold no kafka-acls tool (that is
the separate kafka-tools artifact), and a JVM per ACL would cost seconds on a loaded machine.
Layouts from Kafka's CreateAclsRequest/Response.json and DescribeAclsRequest/Response.json
(versions 0-3, flexible from 2; pattern types from v1).

``grant`` returns once the broker's authorizer enforces the new ACLs: a KRaft broker applies
them when it replays the metadata log, a moment after the controller answered, so it polls
DescribeAcls (answered from the broker's own authorizer) until they are listed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.options import SOURCE, client_config
from spark_kafka_wire.protocol.engine import ApiSpec
from spark_kafka_wire.protocol.engine import Field as F
from tests.support.apache_kafka import ADMIN, SASL_USERS

CREATE_ACLS = ApiSpec(
    key=30, name="CreateAcls", min_version=1, max_version=3, flexible_from=2,
    request=(
        F("creations", "[]", fields=(
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("resource_pattern_type", "int8", "1+", default=3),
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        )),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("results", "[]", fields=(
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
        )),
    ),
)

DESCRIBE_ACLS = ApiSpec(
    key=29, name="DescribeAcls", min_version=1, max_version=3, flexible_from=2,
    request=(
        F("resource_type_filter", "int8"),
        F("resource_name_filter", "string", nullable="0+", default=None),
        F("pattern_type_filter", "int8", "1+", default=3),
        F("principal_filter", "string", nullable="0+", default=None),
        F("host_filter", "string", nullable="0+", default=None),
        F("operation", "int8"),
        F("permission_type", "int8"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("resources", "[]", fields=(
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("pattern_type", "int8", "1+", default=3),
            F("acls", "[]", fields=(
                F("principal", "string"),
                F("host", "string"),
                F("operation", "int8"),
                F("permission_type", "int8"),
            )),
        )),
    ),
)

# org.apache.kafka.common.resource.ResourceType, PatternType; acl.AclOperation, AclPermissionType
RESOURCE_TYPES = {"Topic": 2, "Group": 3, "Cluster": 4, "TransactionalId": 5}
LITERAL, PREFIXED = 3, 4
OPERATIONS = {"All": 2, "Read": 3, "Write": 4, "Create": 5, "Delete": 6, "Alter": 7,
              "Describe": 8, "ClusterAction": 9, "DescribeConfigs": 10, "AlterConfigs": 11,
              "IdempotentWrite": 12}
ANY, ALLOW = 1, 3
APPLIED_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Acl:
    """One ALLOW ACL: ``principal`` (User:alice) may ``operation`` (Read) the resource of
    ``resource_type`` (Topic) named ``name`` (or every name starting with it, ``prefixed``)."""

    principal: str
    operation: str
    resource_type: str
    name: str
    prefixed: bool = False

    def wire(self) -> dict:
        return {"resource_type": RESOURCE_TYPES[self.resource_type], "resource_name": self.name,
                "resource_pattern_type": PREFIXED if self.prefixed else LITERAL,
                "principal": self.principal, "host": "*",
                "operation": OPERATIONS[self.operation], "permission_type": ALLOW}


def sasl_options(broker, user: str, password: str | None = None) -> dict[str, str]:
    """kafka.* options of a client logging in as ``user`` (SASL PLAIN) on the SASL_PLAINTEXT
    listener."""
    if password is None:
        password = ADMIN[1] if user == ADMIN[0] else SASL_USERS[user]
    return {"kafka.bootstrap.servers": broker.bootstrap("SASL_PLAINTEXT"),
            "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config":
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{user}" password="{password}";'}


def admin_client(broker) -> KafkaClient:
    return KafkaClient(client_config(sasl_options(broker, ADMIN[0]), SOURCE))


def _listed(conn, acl: Acl) -> bool:
    wire = acl.wire()
    resp = conn.request(DESCRIBE_ACLS, {
        "resource_type_filter": wire["resource_type"], "resource_name_filter": acl.name,
        "pattern_type_filter": wire["resource_pattern_type"],
        "principal_filter": acl.principal, "host_filter": None,
        "operation": wire["operation"], "permission_type": ALLOW})
    if resp["error_code"]:
        raise AssertionError(f"DescribeAcls failed: {resp['error_code']} "
                             f"{resp['error_message']}")
    return any(r["resource_name"] == acl.name for r in resp["resources"])


def grant(broker, *acls: Acl) -> None:
    """Create ``acls`` as admin and wait until the broker enforces them."""
    with admin_client(broker) as admin:
        conn = admin.any_connection()
        resp = conn.request(CREATE_ACLS, {"creations": [a.wire() for a in acls]})
        failed = [(a, r) for a, r in zip(acls, resp["results"], strict=True) if r["error_code"]]
        if failed:
            raise AssertionError(f"CreateAcls refused: {failed}")
        deadline = time.monotonic() + APPLIED_TIMEOUT_S
        waiting = list(acls)
        while waiting:
            waiting = [a for a in waiting if not _listed(conn, a)]
            if waiting and time.monotonic() > deadline:
                raise AssertionError(f"the broker did not list {waiting} within "
                                     f"{APPLIED_TIMEOUT_S:.0f} s")
            if waiting:
                time.sleep(0.05)
